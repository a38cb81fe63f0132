"""
Autocast written for CUDA runs in float32, without an error, where there is no CUDA GPU
=======================================================================================

:claim-verdict:`cuda-autocast-without-cuda`

The claim: where ``torch.cuda.is_available()`` is False, mixed precision
written for CUDA, ``torch.autocast("cuda")`` or the older
``torch.cuda.amp.autocast()``, raises nothing and casts nothing: a float32
matmul on the configured device inside either context still returns float32.
Code moved this way keeps running, only slower and in more memory than it did
on the GPU, and nothing stops it; a warning is the only sign, when there is one.

The warnings each context gives are recorded: whether a build warns is part of
what a team would see.
"""

import torch
from _cuda_code import attempt, require_no_cuda

from torchclaims.verify import verification

v = verification(
    "cuda-autocast-without-cuda",
    inputs="a float32 64 x 64 matmul on the configured device",
    method="the matmul's dtype inside torch.autocast('cuda') and torch.cuda.amp.autocast()",
)

a = torch.randn(64, 64, device=v.device)
b = torch.randn(64, 64, device=v.device)


def matmul_inside(context) -> torch.dtype:
    with context():
        return (a @ b).dtype


CONTEXTS = {
    "torch.autocast('cuda')": lambda: torch.autocast("cuda"),  # device under test
    "torch.cuda.amp.autocast()": lambda: torch.cuda.amp.autocast(),
}

# %%
# The matmul inside each context
# ------------------------------

for name, context in CONTEXTS.items():
    with v.check(f"{name} raises nothing and the matmul stays float32") as check:
        require_no_cuda(check)
        what, value, warned = attempt(lambda context=context: matmul_inside(context))
        check.measure(f"matmul dtype inside {name}", str(value), tolerance="torch.float32")
        check.measure("warnings", " | ".join(warned) or "none")
        if check.expect(what == "returned", f"{name} raised: {value}"):
            check.equal(value, torch.float32, f"matmul dtype inside {name}")

v.finish()
