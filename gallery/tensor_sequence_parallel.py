"""
Tensor and sequence parallelism with DTensor match a single-process step
========================================================================

:claim-verdict:`tensor-sequence-parallel`

The claim: on 2 processes, ``parallelize_module`` splits a model's layers
across the ranks, and one training step gives the same parameters as one
single-process step, within float32 tolerance, both for tensor parallelism
(the first ``Linear`` split column-wise, the second row-wise, every rank seeing
the whole batch) and for sequence parallelism (a ``LayerNorm`` run on each
rank's slice of the sequence, followed by the same column-wise / row-wise
pair).

We run each layout in 2 worker processes on the configured device with the
backend's process-group backend. Each rank reports the shape of the part of
every parameter it holds, its output and the full parameters gathered after
one SGD step; we compare them with one ordinary step in this process on the
same device.
"""

import math

import _jobs
import _parallel

from torchclaims.verify import distributed, verification

WORLD_SIZE = 2
RTOL, ATOL = 1e-4, 1e-5

v = verification(
    "tensor-sequence-parallel",
    model="tensor parallel: MLP 8-16-1 with Tanh; sequence parallel: LayerNorm(8), Linear 8-16, Tanh, Linear 16-8; "
    "float32, seed 0",
    inputs="tensor parallel: batch of 8, whole batch on every rank; sequence parallel: batch of 2 x 8 positions x 8 "
    f"features, rank r of {WORLD_SIZE} gets positions 4r..4r+3",
    method=f"one SGD step (lr 0.1, mean-reduced MSE); {WORLD_SIZE} workers (forked for CPU jobs, spawned otherwise); "
    f"outputs and gathered parameters compared element-wise, rtol {RTOL:g}, atol {ATOL:g}",
)

# %%
# The two layouts
# ---------------
# The jobs live in the helper module ``gallery/_parallel.py``. In the
# sequence-parallel job each rank's loss is its share of the whole-sequence
# mean, so the ranks' gradients add up to the single-process gradient.
#
# .. literalinclude:: /gallery/_parallel.py
#    :pyobject: tensor_parallel_job
#
# .. literalinclude:: /gallery/_parallel.py
#    :pyobject: sequence_parallel_job

LAYOUTS = {
    "tensor parallel": {
        "job": _parallel.tensor_parallel_job,
        "model": _jobs.make_model,
        "batch": _jobs.make_batch,
        "split": ("0.weight", "0.bias", "2.weight"),  # column-wise weight and bias, row-wise weight
        "rank_output": lambda output, rank: output,  # every rank holds the whole output
    },
    "sequence parallel": {
        "job": _parallel.sequence_parallel_job,
        "model": _parallel.make_sequence_model,
        "batch": _parallel.make_sequence_batch,
        "split": ("1.weight", "1.bias", "3.weight"),
        "rank_output": lambda output, rank: _parallel.sequence_slice(output, rank, WORLD_SIZE),  # its positions
    },
}


# %%
# Each layout: split, then compared
# ---------------------------------
# A split parameter is one whose parts on the ranks add up to the whole and
# are each smaller than it. The largest change the step makes to a parameter
# must be far above the tolerance, or the comparison could not tell a correct
# step from a wrong one.

for label, layout in LAYOUTS.items():
    run = distributed.RankRun(layout["job"], WORLD_SIZE)
    single = _jobs.single_process_step(v.device, v.sync, make=layout["model"], batch=layout["batch"])
    reference = single["after"]
    with v.check(f"{label}: the layers are split across the {WORLD_SIZE} ranks on the device") as check:
        results = run.start(check, v.backend, v.device.type)
        for name in layout["split"]:
            held = [math.prod(result["local_shapes"][name]) for result in results]
            check.measure(f"{name}: elements per rank (of {reference[name].numel()})", str(held))
            check.equal(sum(held), reference[name].numel(), f"{name}: elements held by all ranks together")
            check.expect(max(held) < reference[name].numel(), f"{name}: one rank holds the whole parameter")

    with v.check(f"{label}: outputs and parameters after one step match a single-process step") as check:
        results = run.require(check)
        _jobs.require_visible_step(check, single["before"], reference, ATOL)
        for rank, result in enumerate(results):
            expected = layout["rank_output"](single["output"], rank)
            check.close(result["output"], expected, rtol=RTOL, atol=ATOL, what=f"rank {rank} output")
            for name, value in reference.items():
                check.close(result["params"][name], value, rtol=RTOL, atol=ATOL, what=f"rank {rank} {name}")

v.finish()
