"""
A gloo all_reduce of device tensors returns the sum, as it does for CPU copies
==============================================================================

:claim-verdict:`xla-gloo-device-tensors`

The claim: ``torch.distributed.all_reduce`` through a gloo process group,
called on tensors on the configured device, returns the sum on every rank,
as it does for CPU copies of the same tensors, or raises. gloo is the CPU's
process-group backend, and code that falls back to it (a CPU-only collective,
a test harness) may hand it device tensors.

On torch_xla 2.9 the sweep of the distributed claims found gloo returning
each rank's own values for XLA tensors, without an error, while the CPU
copies were summed. Two workers join a gloo group, then all-reduce the same
values twice: as tensors on the configured device, and as CPU tensors.
"""

import dataclasses

import _jobs
import torch

from torchclaims.verify import distributed, verification

WORLD_SIZE = 2
PROCESS_GROUP = "gloo"  # the statement's process-group backend (data under test)

v = verification(
    "xla-gloo-device-tensors",
    model="none: one 4-element float32 tensor per rank",
    inputs="rank r contributes (r + 1) * [1, 2, 3, 4], once on the configured device and once on the CPU",
    method=f"{WORLD_SIZE} workers in a {PROCESS_GROUP} group (env://, loopback); all_reduce(SUM) of each; exact "
    "comparison",
)

# %%
# The same all_reduce on device tensors and on CPU copies
# -------------------------------------------------------

expected = sum(rank + 1 for rank in range(WORLD_SIZE)) * torch.arange(1, 5, dtype=torch.float32)
with v.check(f"a {PROCESS_GROUP} all_reduce of device tensors returns the sum on every rank") as check:
    if v.on_reference:
        check.unsupported(
            f"the configured device is the CPU, whose tensors are {PROCESS_GROUP}'s own; "
            "the claim is about tensors on another device"
        )
    backend = dataclasses.replace(v.backend, dist_backend=PROCESS_GROUP, dist_init_method=None)
    results, skipped = distributed.attempt(_jobs.allreduce_copies_job, backend, WORLD_SIZE)
    if skipped:
        check.unsupported(skipped)
    for rank, result in enumerate(results):
        print(f"rank {rank}: device tensors {result['on_device'].tolist()}, CPU copies {result['on_cpu'].tolist()}")
        check.measure(
            f"rank {rank}: device tensors after all_reduce",
            str(result["on_device"].tolist()),
            tolerance=f"== {expected.tolist()}",
        )
        check.equal(result["on_cpu"], expected, f"rank {rank}: all_reduce of the CPU copies")
        check.equal(
            result["on_device"], expected, f"rank {rank}: all_reduce of the tensors on {result['result_device']}"
        )

v.finish()
