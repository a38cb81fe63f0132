"""
Two processes joining an xla process group form one group, or fail
===================================================================

:claim-verdict:`xla-process-group-two-processes`

The claim: two processes on one host that call
``init_process_group("xla", init_method="xla://")`` with a world size of 2,
started the way ``torchrun`` starts them, either form one group of two whose
``all_reduce`` returns the sum on both ranks, or fail with an error. Neither
goes on alone in a group of one, taking its own values for the sum.

``xla://`` is the init method torch_xla documents for multi-process training.
On the PJRT CPU runtime, where a process is its own one-process "host", the
sweep's distributed claims saw each process join a group of its own. Here two
workers get the environment torchrun would give them (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), join, and all-reduce
``(rank + 1) * [1, 2, 3, 4]``; for each worker we record the group it joined
and the value it holds, or how it ended.
"""

import dataclasses

import _jobs
import torch

from torchclaims.verify import distributed, verification

WORLD_SIZE = 2
# The statement's process-group backend and init method (data under test).
PROCESS_GROUP, INIT_METHOD = "xla", "xla://"

v = verification(
    "xla-process-group-two-processes",
    model="none: one 4-element float32 tensor per worker",
    inputs="worker r contributes (r + 1) * [1, 2, 3, 4]",
    method=f"{WORLD_SIZE} spawned workers with torchrun's environment; init_process_group({PROCESS_GROUP!r}, "
    f"init_method={INIT_METHOD!r}, world_size={WORLD_SIZE}); all_reduce(SUM); each worker runs the job in "
    "whatever group it joined",
)

# %%
# Two workers, each in the group it gets
# --------------------------------------

expected = sum(rank + 1 for rank in range(WORLD_SIZE)) * torch.arange(1, 5, dtype=torch.float32)
with v.check("each worker is in one group of two and holds the sum, or failed with an error") as check:
    if v.backend.name != "xla":
        check.unsupported(
            f"the claim is about torch_xla's {PROCESS_GROUP!r} process-group backend; "
            f"the configured backend is {v.backend.name}"
        )
    backend = dataclasses.replace(v.backend, dist_backend=PROCESS_GROUP, dist_init_method=INIT_METHOD)
    ended = distributed.run_anyway(_jobs.allreduce_job, backend=backend, world_size=WORLD_SIZE)
    for worker in range(WORLD_SIZE):
        result = ended.results.get(worker)
        if result is None:
            check.measure(f"worker {worker}", ended.failed(worker))
            continue
        size, held = result["world_size"], result["allreduce"]
        print(f"worker {worker}: rank {result['rank']} of a group of {size}, holds {held.tolist()}")
        check.measure(f"worker {worker}: size of the group it joined", size, tolerance=f"== {WORLD_SIZE}")
        check.measure(f"worker {worker}: all_reduce result", str(held.tolist()), tolerance=f"== {expected.tolist()}")
        check.expect(
            size == WORLD_SIZE and torch.equal(held, expected),
            f"worker {worker} joined a group of {size} and all_reduce returned {held.tolist()} "
            f"without an error (the sum is {expected.tolist()})",
        )
    check.expect(
        len(ended.results) + len(ended.hung) + sum(1 for c in ended.codes if c) >= WORLD_SIZE,
        "a worker neither wrote a result nor failed",
    )

v.finish()
