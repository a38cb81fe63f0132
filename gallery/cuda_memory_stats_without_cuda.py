"""
torch.cuda's memory counters report zero, without an error, where there is no CUDA GPU
======================================================================================

:claim-verdict:`cuda-memory-stats-without-cuda`

The claim: where ``torch.cuda.is_available()`` is False,
``torch.cuda.memory_allocated()`` and ``torch.cuda.max_memory_allocated()``
raise nothing and return 0, also after 64 MiB has been allocated on the
configured device. Memory logging written for CUDA keeps running on another
backend and reports nothing, with no sign that it is not measuring.
``torch.accelerator.memory_allocated()`` is the portable call (see also).
"""

import torch
from _cuda_code import attempt, require_no_cuda

from torchclaims.verify import verification

v = verification(
    "cuda-memory-stats-without-cuda",
    inputs="one torch.ones(64 MiB, dtype=uint8) on the configured device",
    method="torch.cuda.memory_allocated() and max_memory_allocated() with the block alive",
)

MiB = 2**20

# %%
# The counters with 64 MiB alive on the device
# --------------------------------------------

with v.check("torch.cuda's memory counters return 0 with 64 MiB allocated, raising nothing") as check:
    require_no_cuda(check)
    block = torch.ones(64 * MiB, dtype=torch.uint8, device=v.device)
    v.sync()
    for name, call in {
        "torch.cuda.memory_allocated()": torch.cuda.memory_allocated,
        "torch.cuda.max_memory_allocated()": torch.cuda.max_memory_allocated,
    }.items():
        what, value, _ = attempt(call)
        check.measure(
            name, value if what == "raised" else value / MiB, unit="" if what == "raised" else "MiB", tolerance="== 0"
        )
        if check.expect(what == "returned", f"{name} raised: {value}"):
            check.expect(value == 0, f"{name} reported {value / MiB:.2f} MiB")
    del block

v.finish()
