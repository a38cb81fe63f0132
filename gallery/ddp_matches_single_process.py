"""
One DDP step on 2 processes matches one single-process step on the whole batch
==============================================================================

:claim-verdict:`ddp-matches-single-process`

The claim: one ``DistributedDataParallel`` training step on 2 processes, each
given half of a batch, leaves the same parameters on both ranks as one
single-process step on the whole batch with a mean-reduced loss, within float32
tolerance.

We start 2 worker processes on the configured device with the backend's
process-group backend, let each take one SGD step on its half of the batch
through DDP, and compare the parameters each rank ends with against each other
and against one ordinary step on the whole batch, taken in this process on
the same device.
"""

import _jobs
import matplotlib.pyplot as plt
import torch

from torchclaims.verify import distributed, verification

WORLD_SIZE = 2
RTOL, ATOL = 1e-4, 1e-5

v = verification(
    "ddp-matches-single-process",
    model="MLP 8-16-1 with Tanh, float32, seed 0",
    inputs=f"batch of 8 random inputs and targets; rank r of {WORLD_SIZE} gets rows 4r..4r+3",
    method=f"one SGD step (lr 0.1, MSE loss with reduction='mean'); {WORLD_SIZE} workers (forked for CPU jobs, spawned "
    f"otherwise); parameters compared element-wise, rtol {RTOL:g}, atol {ATOL:g}",
)

# %%
# What each rank runs
# -------------------
# The job lives in the helper module ``gallery/_jobs.py`` (on accelerators the
# workers are spawned, and a spawned worker imports the function it runs,
# which a gallery script cannot provide). Each rank builds the same model,
# wraps it in DDP and takes one step on its slice:
#
# .. literalinclude:: /gallery/_jobs.py
#    :pyobject: ddp_job
#
# .. literalinclude:: /gallery/_jobs.py
#    :pyobject: sgd_step
#
# DDP averages the gradients over the ranks during ``backward``. With a loss
# that is a mean over the rows, the average of the two half-batch gradients
# is the gradient of the whole batch, so the step should be the same.

ddp = distributed.RankRun(_jobs.ddp_job, WORLD_SIZE)
with v.check(f"one DDP step runs on {WORLD_SIZE} ranks on the device") as check:
    for rank, result in enumerate(ddp.start(check, v.backend, v.device.type)):
        print(f"rank {rank} on {result['device']}: loss on its half batch {result['loss'].item():.6f}")

# %%
# The single-process step on the whole batch
# ------------------------------------------

single = _jobs.single_process_step(v.device, v.sync)
reference, reference_grads = single["after"], single["grads"]
print(f"single process: loss on the whole batch {single['loss'].item():.6f}")

# %%
# Compare
# -------

with v.check("both ranks hold the same parameters after the step") as check:
    results = ddp.require(check)
    for name, value in results[0]["params"].items():
        check.close(results[1]["params"][name], value, rtol=RTOL, atol=ATOL, what=f"{name}: rank 1 vs rank 0")
        check.measure(f"{name}: bit-identical on both ranks", torch.equal(results[1]["params"][name], value))

with v.check("the parameters match one single-process step on the whole batch") as check:
    results = ddp.require(check)
    _jobs.require_visible_step(check, single["before"], reference, ATOL)
    for rank, result in enumerate(results):
        for name, value in reference.items():
            check.close(result["params"][name], value, rtol=RTOL, atol=ATOL, what=f"rank {rank} {name}")

# %%
# How close
# ---------
# Largest difference from the single-process step, per parameter tensor and
# rank, for the averaged gradients and for the parameters after the step.

if ddp.results is not None:
    results = ddp.results
    names = list(reference)
    fig, ax = plt.subplots(figsize=(7, 3))
    width = 0.2
    floor = 1e-12
    largest = 0.0
    for i, (rank, kind) in enumerate([(r, k) for r in range(WORLD_SIZE) for k in ("grads", "params")]):
        ref = reference_grads if kind == "grads" else reference
        errors = [(results[rank][kind][n] - ref[n]).abs().max().item() for n in names]
        largest = max(largest, *errors)
        ax.bar(
            [j + (i - 1.5) * width for j in range(len(names))],
            [max(e, floor) for e in errors],
            width,
            label=f"rank {rank} {kind}",
        )
    ax.axhline(ATOL, color="black", linestyle=":", label=f"atol {ATOL:g}")
    ax.set_yscale("log")
    ax.set_ylim(floor / 2, max(1e-3, 10 * largest))
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_ylabel("max abs difference")
    ax.set_title(f"DDP on {WORLD_SIZE} ranks ({v.backend.dist_backend}) vs one process, {v.device.type}")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()

v.finish()
