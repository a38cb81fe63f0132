"""
On ROCm, torch.distributed supports only the nccl and gloo backends
===================================================================

:claim-verdict:`rocm-dist-backends`

The claim: on ROCm builds of PyTorch, only the ``'nccl'`` and ``'gloo'``
backends of torch.distributed are supported.

On a ROCm build with a GPU we start a one-process group with each of nccl
(RCCL underneath, on a GPU tensor) and gloo (on a CPU tensor) and run an
all-reduce. For the other process-group backends torch.distributed knows
(mpi, ucc, xccl) we record whether the build offers them and, if it does,
whether a one-process group works on the GPU: a working one would contradict
"only". Every run records which backends its build offers; other builds report
unverified.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

from torchclaims.verify import verification

v = verification(
    "rocm-dist-backends",
    inputs="one-process groups (world size 1, in-memory HashStore); all_reduce of a one-element tensor",
    method="torch.distributed.is_<backend>_available() and an init / all_reduce / destroy cycle per backend",
)

DOCUMENTED = ("nccl", "gloo")
OTHERS = ("mpi", "ucc", "xccl")
offered = {name: bool(getattr(dist, f"is_{name}_available")()) for name in DOCUMENTED + OTHERS}
print(f"torch.version.hip = {torch.version.hip}; offered by this build: {offered}")


def world_of_one(backend, device):
    """None when a one-process group initialises and all-reduces, else the error."""
    try:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timedelta(seconds=60))
        try:
            value = torch.ones(1, device=device)
            dist.all_reduce(value)
            return None if value.item() == 1 else f"all_reduce gave {value.item()}"
        finally:
            dist.destroy_process_group()
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"


def rocm_gpu(check):
    for name, available in offered.items():
        check.measure(f"is_{name}_available()", available)
    check.measure("torch.version.hip", str(torch.version.hip))
    if torch.version.hip is None:
        check.unsupported(f"not a ROCm build of PyTorch (torch.version.cuda is {torch.version.cuda})")
    if v.on_reference:
        check.unsupported("the configured backend is the CPU; this needs the rocm backend and an AMD GPU")


# %%
# nccl and gloo
# -------------

with v.check("nccl (GPU tensor) and gloo (CPU tensor) run a one-process all_reduce") as check:
    rocm_gpu(check)
    for backend, device in (("nccl", v.device), ("gloo", v.reference_device)):
        error = world_of_one(backend, device)
        check.measure(f"{backend} one-process all_reduce", error or "ok", tolerance="ok")
        check.expect(error is None, f"{backend}: {error}")

# %%
# Nothing else
# ------------

with v.check("no other torch.distributed backend works on the ROCm GPU") as check:
    rocm_gpu(check)
    working = []
    for backend in OTHERS:
        if not offered[backend]:
            continue  # not in this build at all, which the statement expects
        error = world_of_one(backend, v.device)
        check.measure(f"{backend} one-process all_reduce", error or "ok", tolerance="fails")
        if error is None:
            working.append(backend)
    check.measure("other backends that work on the GPU", ", ".join(working) or "none", tolerance="none")
    check.expect(not working, f"{', '.join(working)} offered by this build and working on the GPU")

v.finish()
