"""
ROCm builds expose AMD GPUs through torch.cuda and the 'cuda' device type
=========================================================================

:claim-verdict:`rocm-reuses-torch-cuda`

The claim: on a ROCm build of PyTorch, AMD GPUs are used through the
``torch.cuda`` interfaces (``torch.version.hip`` is set,
``torch.cuda.is_available()`` is True and tensors on the GPU report device
type ``'cuda'``), and ``'rocm'`` is not a valid device type.

The second half holds or fails on any build, so every run checks it. The first
half needs a ROCm wheel and an AMD GPU; on other builds it reports unverified
and records what the build is.
"""

import torch

from torchclaims.verify import verification

v = verification(
    "rocm-reuses-torch-cuda",
    inputs="torch.device('rocm'); small tensors sent to torch.cuda.current_device() and to the configured device",
    method="torch.version and torch.cuda introspection; device type of the tensors",
)

# Names under test, used as data: the device type ROCm is said to reuse, and the
# one it is said not to have.
CUDA_TYPE = "cuda"
ROCM = "rocm"
HIP = "hip"

print(f"torch.version.hip = {torch.version.hip}, torch.version.cuda = {torch.version.cuda}")

# %%
# 'rocm' is not a device type
# ---------------------------
# ``torch.device('hip')`` is recorded as well: HIP is one of c10's built-in
# device types, so it parses, although the documentation groups it with
# 'rocm' as not valid.

with v.check("'rocm' is not a valid device type") as check:
    try:
        torch.device(ROCM)
        outcome = "parsed"
    except RuntimeError as exc:
        outcome = f"RuntimeError: {str(exc).splitlines()[0]}"
    check.measure("torch.device('rocm')", outcome, tolerance="RuntimeError")
    check.expect(outcome.startswith("RuntimeError"), "torch.device('rocm') parsed")
    try:
        hip = f"parses as {torch.device(HIP)!r}"
    except RuntimeError as exc:
        hip = f"RuntimeError: {str(exc).splitlines()[0]}"
    check.note(f"torch.device('hip') {hip} (not judged)")

# %%
# The GPU through torch.cuda
# --------------------------
# One tensor goes to the index ``torch.cuda.current_device()`` returns (the
# torch.cuda interface itself); the other to ``v.device``, which is how the
# configured backend names its device.

with v.check("on a ROCm build the GPU is used through torch.cuda and reports device type 'cuda'") as check:
    check.measure("torch.version.hip", str(torch.version.hip))
    check.measure("torch.version.cuda", str(torch.version.cuda))
    if torch.version.hip is None:
        build = f"torch.version.hip is None, torch.version.cuda is {torch.version.cuda}"
        check.unsupported(f"not a ROCm build of PyTorch ({build})")
    if v.on_reference:
        check.unsupported("the configured backend is the CPU; the GPU half needs the rocm backend")
    check.equal(torch.cuda.is_available(), True, "torch.cuda.is_available()")
    check.measure("GPU", torch.cuda.get_device_name(0))
    via_cuda = torch.ones(2).to(torch.cuda.current_device())
    via_device = torch.ones(2, device=v.device)
    check.equal(via_cuda.device.type, CUDA_TYPE, "device type of a tensor sent to torch.cuda.current_device()")
    check.equal(via_device.device.type, CUDA_TYPE, "device type of a tensor on the configured device")
    check.equal((via_cuda + via_device).cpu(), torch.full((2,), 2.0), "a sum computed on the GPU")

v.finish()
