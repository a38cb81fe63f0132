"""
A process group on NCCL stops with an error that names NCCL or GPUs where there is no CUDA GPU
==============================================================================================

:claim-verdict:`nccl-without-cuda`

The claim: where ``torch.cuda.is_available()`` is False,
``torch.distributed.init_process_group("nccl", ...)``, the backend training
code written for CUDA names, raises before any collective runs, with a
message that names NCCL or GPUs; the same one-process group on ``gloo``, the
CPU's backend, starts and runs an all_reduce. Moving such code means naming
another backend (cpu-gloo-reference-parity, torchtpu-dist-backend,
rocm-dist-backends say which).

One process, an in-memory store: no network is used.
"""

import torch
import torch.distributed as dist
from _cuda_code import attempt, names_cuda, require_no_cuda

from torchclaims.verify import verification

v = verification(
    "nccl-without-cuda",
    inputs="a one-process group (rank 0 of 1) on an in-memory HashStore",
    method="init_process_group('nccl') tried; then the same on gloo with one all_reduce",
)


def start(backend: str) -> None:
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)


# %%
# NCCL, then gloo
# ---------------

with v.check("init_process_group('nccl') raises, naming NCCL or GPUs") as check:
    require_no_cuda(check)
    check.measure("torch.distributed.is_nccl_available()", dist.is_nccl_available())
    what, value, _ = attempt(lambda: start("nccl"))  # device under test
    check.measure(
        "init_process_group('nccl')", value if what == "raised" else "started", tolerance="raises, naming NCCL or GPUs"
    )
    if dist.is_initialized():
        dist.destroy_process_group()
    if check.expect(what == "raised", "a NCCL process group started without a CUDA GPU"):
        check.expect(names_cuda(value), f"it raised without naming NCCL or GPUs: {value}")

with v.check("the same group on gloo starts and runs an all_reduce") as check:
    start("gloo")
    try:
        tensor = torch.ones(4)
        dist.all_reduce(tensor)
        check.equal(tensor, torch.ones(4), "all_reduce over one process")
    finally:
        dist.destroy_process_group()

v.finish()
