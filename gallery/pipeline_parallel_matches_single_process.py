"""
One pipeline-parallel step on 2 processes matches one single-process step
=========================================================================

:claim-verdict:`pipeline-parallel-matches-single-process`

The claim: with ``torch.distributed.pipelining``, a model split into 2
stages on 2 processes and trained for one step with the GPipe schedule over 2
micro-batches gives the same output as the whole model in one process, and
leaves each stage's parameters equal to one single-process step on the whole
batch with a mean-reduced loss, within float32 tolerance.

We start 2 worker processes on the configured device with the backend's
process-group backend. Rank 0 holds the first ``Linear`` and the ``Tanh``,
rank 1 the second ``Linear``; activations go forward and gradients back
between them as the schedule runs. The last stage returns the output of both
micro-batches; each rank returns its stage's parameters after one SGD step.
We compare them with one ordinary step in this process on the same device.
"""

import _jobs
import _parallel

from torchclaims.verify import distributed, verification

WORLD_SIZE = 2
RTOL, ATOL = 1e-4, 1e-5

v = verification(
    "pipeline-parallel-matches-single-process",
    model="MLP 8-16-1 with Tanh, float32, seed 0; stage 0 = Linear 8-16 + Tanh, stage 1 = Linear 16-1",
    inputs="batch of 8 random inputs and targets, 2 micro-batches of 4",
    method=f"ScheduleGPipe, one SGD step (lr 0.1, MSE loss with reduction='mean', gradients scaled by the number "
    f"of micro-batches); {WORLD_SIZE} workers (forked for CPU jobs, spawned otherwise); element-wise comparison, "
    f"rtol {RTOL:g}, atol {ATOL:g}",
)

# %%
# What each rank runs
# -------------------
# The job lives in the helper module ``gallery/_parallel.py``. The schedule
# averages the two micro-batches' gradients (``scale_grads=True``, the
# default), so the step should equal one step on the whole batch.
#
# .. literalinclude:: /gallery/_parallel.py
#    :pyobject: pipeline_job

pipeline = distributed.RankRun(_parallel.pipeline_job, WORLD_SIZE)
with v.check(f"the model runs as {WORLD_SIZE} stages, one per rank, on the device") as check:
    held = [sorted(result["params"]) for result in pipeline.start(check, v.backend, v.device.type)]
    check.measure("parameters held per rank", str(held))
    all_names = sorted(name for name, _ in _jobs.make_model().named_parameters())
    check.equal(sorted(sum(held, [])), all_names, "parameters held by the two ranks together, each once")

# %%
# The single-process step on the whole batch
# ------------------------------------------

single = _jobs.single_process_step(v.device, v.sync)
reference = single["after"]

# %%
# Compare
# -------
# The largest change the step makes to a parameter must be far above the
# tolerance, or the comparison could not tell a correct step from a wrong one
# (for example micro-batch gradients summed instead of averaged).

with v.check("the last stage's output over both micro-batches equals the single-process output") as check:
    last = pipeline.require(check)[-1]
    check.measure("micro-batch losses on the last stage", str([round(x.item(), 6) for x in last["microbatch_losses"]]))
    check.close(last["output"], single["output"], rtol=RTOL, atol=ATOL, what="pipeline output")

with v.check("each stage's parameters match one single-process step on the whole batch") as check:
    results = pipeline.require(check)
    _jobs.require_visible_step(check, single["before"], reference, ATOL)
    for rank, result in enumerate(results):
        for name, value in result["params"].items():
            check.close(value, reference[name], rtol=RTOL, atol=ATOL, what=f"rank {rank} {name}")

v.finish()
