"""
A CUDA C++ extension or a Triton kernel stops with an error where there is no CUDA GPU
======================================================================================

:claim-verdict:`cuda-extension-without-cuda`

The claim: where ``torch.cuda.is_available()`` is False, code that brings its
own CUDA kernels stops before running them. Building a CUDA C++ extension with
``torch.utils.cpp_extension.load_inline(..., cuda_sources=...)`` raises before
compiling, with a message that names CUDA; a Triton kernel cannot be launched
(Triton is not installed, or the launch raises).

These are the kernels no configuration change moves: they must be rewritten
for the target (an NKI kernel on Trainium, a Pallas kernel on TPU) or
replaced by PyTorch operators.
"""

import importlib.util
import tempfile

import torch
from _cuda_code import attempt, names_cuda, require_no_cuda

from torchclaims.verify import verification

v = verification(
    "cuda-extension-without-cuda",
    inputs="a one-line __global__ kernel as CUDA source; a Triton kernel that stores one value",
    method="load_inline into a temporary build directory; the Triton kernel launched on a tensor of the configured "
    "device",
)

CUDA_SOURCE = "__global__ void fill(float* out) { out[threadIdx.x] = 1.0f; }"


def build_extension():
    from torch.utils.cpp_extension import load_inline

    with tempfile.TemporaryDirectory() as build:
        return load_inline(
            name="torchclaims_probe",
            cpp_sources="",
            cuda_sources=CUDA_SOURCE,
            functions=[],
            build_directory=build,
            verbose=False,
        )


def launch_triton_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def store_one(out_ptr):
        tl.store(out_ptr, 1.0)

    out = torch.zeros(1, device=v.device)
    store_one[(1,)](out)
    return out.cpu()


# %%
# A CUDA C++ extension
# --------------------

with v.check("building a CUDA C++ extension raises before compiling, naming CUDA") as check:
    require_no_cuda(check)
    what, value, _ = attempt(build_extension)
    check.measure(
        "load_inline(cuda_sources=...)", value if what == "raised" else "built", tolerance="raises, naming CUDA"
    )
    if check.expect(what == "raised", "a CUDA extension was built without a CUDA GPU"):
        check.expect(names_cuda(value), f"it raised without naming CUDA: {value}")

# %%
# A Triton kernel
# ---------------

with v.check("a Triton kernel cannot be launched: Triton is absent or the launch raises") as check:
    require_no_cuda(check)
    installed = importlib.util.find_spec("triton") is not None
    check.measure("triton installed", installed)
    what, value, _ = attempt(launch_triton_kernel)
    check.measure(
        "Triton kernel launch", value if what == "raised" else f"returned {value.tolist()}", tolerance="raises"
    )
    check.expect(what == "raised", f"a Triton kernel ran on {v.device} without a CUDA GPU")

v.finish()
