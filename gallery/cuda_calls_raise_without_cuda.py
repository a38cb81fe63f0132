"""
Code that names the CUDA device stops with an error where there is no CUDA GPU
==============================================================================

:claim-verdict:`cuda-calls-raise-without-cuda`

The claim: where ``torch.cuda.is_available()`` is False (a CPU host, an XLA,
TorchTPU or TorchNeuron host, a Mac), code written for CUDA that names the
device stops with an exception whose message names CUDA or its driver:
``tensor.cuda()``, ``torch.ones(..., device="cuda")``,
``torch.cuda.synchronize()``, ``torch.cuda.current_device()`` and
``torch.cuda.get_device_name(0)``. None of them silently runs on another
device.

This is the loud half of moving code written for CUDA: each call is found at
its first run, with a message that says what is missing. The quiet half (calls
that succeed and do nothing) has claims of its own (see also).
"""

import torch
from _cuda_code import attempt, names_cuda, require_no_cuda

from torchclaims.verify import verification

v = verification(
    "cuda-calls-raise-without-cuda",
    inputs="torch.ones(2) and the CUDA calls below, each on its own",
    method="each call run once; what it returned or raised recorded",
)

# Code written for CUDA names its device in the code: these lines do so on
# purpose (the comment tells torchclaims lint, which otherwise refuses literals).
CALLS = {
    "tensor.cuda()": lambda: torch.ones(2).cuda(),  # device under test
    "torch.ones(2, device='cuda')": lambda: torch.ones(2, device="cuda"),  # device under test
    "torch.cuda.synchronize()": lambda: torch.cuda.synchronize(),
    "torch.cuda.current_device()": lambda: torch.cuda.current_device(),
    "torch.cuda.get_device_name(0)": lambda: torch.cuda.get_device_name(0),
}

# %%
# Each call on its own
# --------------------
# ``torch.device("cuda")`` itself is only a name and parses on every build; it
# is recorded, not judged. What matters is the first call that needs the GPU.

with v.check("every call that needs the CUDA device raises, and its message names CUDA or its driver") as check:
    require_no_cuda(check)
    parsed = torch.device("cuda")  # device under test
    check.note(f"torch.device('cuda') parses: {parsed!r} (not judged)")
    for name, call in CALLS.items():
        what, value, _ = attempt(call)
        check.measure(name, value if what == "raised" else f"returned {value!r}", tolerance="raises, naming CUDA")
        if check.expect(what == "raised", f"{name} returned {value!r} instead of raising"):
            check.expect(names_cuda(value), f"{name} raised without naming CUDA or its driver: {value}")

v.finish()
