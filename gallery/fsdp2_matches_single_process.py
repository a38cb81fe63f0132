"""
One FSDP2 step on 2 processes matches one single-process step on the whole batch
================================================================================

:claim-verdict:`fsdp2-matches-single-process`

The claim: one training step with FSDP2 (``fully_shard`` applied to each
``Linear`` layer and to the whole model) on 2 processes, each given half of a
batch, splits every parameter's rows between the ranks, and the parameters
gathered after the step equal one single-process step on the whole batch with
a mean-reduced loss, within float32 tolerance.

We start 2 worker processes on the configured device with the backend's
process-group backend, shard the model over a one-dimensional device mesh of
both ranks, and let each rank take one SGD step on its half of the batch. Each
rank reports how many rows of every parameter it holds and the full parameters
gathered after the step; we compare those with one ordinary step on the whole
batch, taken in this process on the same device.
"""

import _jobs
import _parallel

from torchclaims.verify import distributed, verification

WORLD_SIZE = 2
RTOL, ATOL = 1e-4, 1e-5

v = verification(
    "fsdp2-matches-single-process",
    model="MLP 8-16-1 with Tanh, float32, seed 0; fully_shard on each Linear and on the model",
    inputs=f"batch of 8 random inputs and targets; rank r of {WORLD_SIZE} gets rows 4r..4r+3",
    method=f"one SGD step (lr 0.1, MSE loss with reduction='mean'); {WORLD_SIZE} workers (forked for CPU jobs, "
    f"spawned otherwise); gathered parameters compared element-wise, rtol {RTOL:g}, atol {ATOL:g}",
)

# %%
# What each rank runs
# -------------------
# The job lives in the helper module ``gallery/_parallel.py`` (a spawned
# worker imports the function it runs). FSDP2 averages the gradients over
# the ranks while it reduce-scatters them, so with a loss that is a mean over
# the rows the step should equal one step on the whole batch.
#
# .. literalinclude:: /gallery/_parallel.py
#    :pyobject: fsdp2_job

fsdp2 = distributed.RankRun(_parallel.fsdp2_job, WORLD_SIZE)
with v.check(f"one FSDP2 step runs on {WORLD_SIZE} ranks on the device") as check:
    for rank, result in enumerate(fsdp2.start(check, v.backend, v.device.type)):
        print(f"rank {rank} on {result['device']}: loss on its half batch {result['loss'].item():.6f}")

# %%
# The single-process step on the whole batch
# ------------------------------------------

single = _jobs.single_process_step(v.device, v.sync)
reference = single["after"]
full_rows = {name: p.shape[0] for name, p in reference.items()}

# %%
# Is every parameter sharded?
# ---------------------------
# FSDP2 splits each parameter along its first dimension: the ranks' rows add
# up to the parameter's rows, and a parameter with at least 2 rows has fewer
# on each rank than in the whole.

with v.check("each parameter is sharded: every rank holds only part of its rows") as check:
    results = fsdp2.require(check)
    for name, rows in full_rows.items():
        held = [result["local_shapes"][name][0] for result in results]
        check.measure(f"{name}: rows per rank (of {rows})", str(held))
        check.equal(sum(held), rows, f"{name}: rows held by all ranks together")
        if rows >= WORLD_SIZE:
            check.expect(max(held) < rows, f"{name}: one rank holds all {rows} rows, the parameter is not sharded")

# %%
# The step itself
# ---------------
# The largest change the step makes to any parameter must be far above the
# tolerance, or the comparison could not tell a correct step from a wrong one
# (for example gradients summed instead of averaged).

with v.check("the gathered parameters match one single-process step on the whole batch") as check:
    results = fsdp2.require(check)
    _jobs.require_visible_step(check, single["before"], reference, ATOL)
    for rank, result in enumerate(results):
        for name, value in reference.items():
            check.close(result["params"][name], value, rtol=RTOL, atol=ATOL, what=f"rank {rank} {name}")

v.finish()
