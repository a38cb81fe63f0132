"""
Timing with torch.cuda.Event stops with an error that names CUDA where there is no CUDA GPU
===========================================================================================

:claim-verdict:`cuda-event-timing-without-cuda`

The claim: where ``torch.cuda.is_available()`` is False, the usual way of
timing GPU work in code written for CUDA, a pair of
``torch.cuda.Event(enable_timing=True)`` recorded around the work and read
with ``elapsed_time``, raises before it gives a time, and the exception's
message names CUDA, its driver or a GPU.

Creating an event, recording it, and reading the time are tried one after the
other; the first that raises is the one recorded. A build whose error does
not say that CUDA is missing refutes the claim: the call fails, but not
clearly.
"""

import torch
from _cuda_code import attempt, names_cuda, require_no_cuda

from torchclaims.verify import verification

v = verification(
    "cuda-event-timing-without-cuda",
    inputs="a 64 x 64 float32 matmul on the configured device between two events",
    method="torch.cuda.Event(enable_timing=True): construct, record, synchronize, elapsed_time",
)


def time_with_cuda_events() -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.ones(64, 64, device=v.device) @ torch.ones(64, 64, device=v.device)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


# %%
# The timing pattern, as code written for CUDA has it
# ---------------------------------------------------

with v.check("timing with torch.cuda.Event raises, and its message names CUDA or its driver") as check:
    require_no_cuda(check)
    what, value, warned = attempt(time_with_cuda_events)
    check.measure(
        "torch.cuda.Event timing",
        value if what == "raised" else f"returned {value!r} ms",
        tolerance="raises, naming CUDA",
    )
    for message in warned:
        check.note(f"warning: {message}")
    if check.expect(what == "raised", f"the timing returned {value!r} ms without a CUDA GPU"):
        check.expect(names_cuda(value), f"it raised without saying that CUDA is missing: {value}")

v.finish()
