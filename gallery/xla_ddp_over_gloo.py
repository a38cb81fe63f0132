"""
DDP over a gloo process group raises for a model on an XLA device
=================================================================

:claim-verdict:`xla-ddp-over-gloo`

Our finding (no source claims it): code written for the CPU runs
``DistributedDataParallel`` over gloo, and torch_xla's guides replace gloo by
their own ``xla`` process group. Moving the model to the XLA device and
keeping gloo does not train silently: wrapping the model in DDP raises, in
both processes, before any step.

Two workers join a gloo group (``env://`` on the loopback address), build the
distributed claims' model on the configured device, wrap it in DDP and take
one SGD step on their half of the batch (the DDP claim's job); for each
worker we record whether it took the step, or how it ended. gloo is the CPU's
own process-group backend, so the CPU run is unverified.
"""

import dataclasses

import _jobs

from torchclaims.verify import distributed, verification

WORLD_SIZE = 2
PROCESS_GROUP = "gloo"  # the statement's process-group backend (data under test)

v = verification(
    "xla-ddp-over-gloo",
    model="MLP 8-16-1 with Tanh, float32, seed 0, on the configured device",
    inputs=f"batch of 8 random inputs and targets; rank r of {WORLD_SIZE} gets rows 4r..4r+3",
    method=f"{WORLD_SIZE} spawned workers in a {PROCESS_GROUP} group (env://, loopback); "
    "DistributedDataParallel(model) "
    "and one SGD step (the DDP claim's job); each worker's exit code and last log line",
)

# %%
# DDP over gloo, with the model on the device
# -------------------------------------------
#
# .. literalinclude:: /gallery/_jobs.py
#    :pyobject: ddp_job

with v.check(f"DDP over {PROCESS_GROUP} raises in both workers, and neither takes the step") as check:
    if v.on_reference:
        check.unsupported(
            f"the configured device is the CPU, whose tensors are {PROCESS_GROUP}'s own; "
            "the claim is about a model on another device"
        )
    backend = dataclasses.replace(v.backend, dist_backend=PROCESS_GROUP, dist_init_method=None)
    ended = distributed.run_anyway(_jobs.ddp_job, backend=backend, world_size=WORLD_SIZE)
    for worker in range(WORLD_SIZE):
        took = ended.results.get(worker)
        check.expect(took is None, f"worker {worker} took the DDP step over {PROCESS_GROUP} without an error")
        if took is not None:
            print(
                f"worker {worker}: took the step as rank {took['rank']} of {took['world_size']} on "
                f"{took['result_device']}"
            )
            continue
        how = ended.failed(worker)
        print(f"worker {worker}: {how}")
        check.measure(f"worker {worker}", how, tolerance="exited with an error")
        raised = worker not in ended.hung and ended.codes[worker] not in (0, None) and "Error" in how
        check.expect(raised, f"worker {worker} took no step but did not end with an error: {how}")

v.finish()
