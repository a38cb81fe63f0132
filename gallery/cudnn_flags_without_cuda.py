"""
The cuDNN flags are accepted and change nothing where there is no CUDA GPU
==========================================================================

:claim-verdict:`cudnn-flags-without-cuda`

The claim: where ``torch.cuda.is_available()`` is False, setting
``torch.backends.cudnn.benchmark = True`` and
``torch.backends.cudnn.deterministic = True``, as training code written for
CUDA does for speed or reproducibility, raises nothing, does not turn on
PyTorch's deterministic mode (``torch.are_deterministic_algorithms_enabled()``
stays False), and leaves a convolution's output on the configured device bit
for bit as it was. Code that relied on ``cudnn.deterministic`` for
reproducible runs gets no such promise on another backend;
``torch.use_deterministic_algorithms(True)`` is the setting every backend reads.
"""

import torch
from _cuda_code import attempt, require_no_cuda

from torchclaims.verify import verification

v = verification(
    "cudnn-flags-without-cuda",
    model="torch.nn.Conv2d(3, 8, 3), seeded",
    inputs="a seeded batch of 2 x 3 x 16 x 16",
    method="the flags set and read back; the convolution's output with and without them",
)

cudnn = torch.backends.cudnn
torch.manual_seed(0)
conv = torch.nn.Conv2d(3, 8, 3).to(v.device)
x = torch.randn(2, 3, 16, 16).to(v.device)


def convolve() -> torch.Tensor:
    out = conv(x)
    v.sync()
    return out.detach().cpu()


def set_flags(value: bool) -> None:
    cudnn.benchmark = value
    cudnn.deterministic = value


# %%
# The flags, and what they change
# -------------------------------

with v.check("the cuDNN flags are accepted, leave deterministic mode off, and change no output") as check:
    require_no_cuda(check)
    check.measure("torch.backends.cudnn.is_available()", cudnn.is_available())  # True in a CUDA build, GPU or not
    before = convolve()
    what, value, warned = attempt(lambda: set_flags(True))
    try:
        if check.expect(what == "returned", f"setting the flags raised: {value}"):
            check.measure("warnings", " | ".join(warned) or "none")
            check.equal((cudnn.benchmark, cudnn.deterministic), (True, True), "the flags read back")
            check.equal(
                torch.are_deterministic_algorithms_enabled(), False, "torch.are_deterministic_algorithms_enabled()"
            )
            check.equal(convolve(), before, "convolution output with the flags and without them")
    finally:
        set_flags(False)

v.finish()
