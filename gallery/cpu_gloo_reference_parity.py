"""
A distributed job on the backend matches the same job on CPU with gloo, rank by rank
====================================================================================

:claim-verdict:`cpu-gloo-reference-parity`

The claim (a validation method AWS recommends): the same 2-process job, an
``all_reduce`` and one DDP training step, run on the configured backend gives
on every rank outputs and gradients that match the same job run on the CPU
with the gloo process-group backend, within float32 tolerance.

We run the job twice: first on the CPU with gloo (the reference), then on the
configured device with its own process-group backend. Each rank saves what it
computed (the all_reduce result, the model output on its slice of the batch,
the averaged gradients, the parameters after the step), and we compare the
two runs rank by rank. On the CPU the configured backend *is* the reference,
so there the comparison only shows that it runs (and how reproducible the
reference is); it is not evidence for the claim.
"""

import _jobs
import matplotlib.pyplot as plt

from torchclaims.verify import distributed, resolve_backend, verification

WORLD_SIZE = 2
RTOL, ATOL = 1e-4, 1e-5

v = verification(
    "cpu-gloo-reference-parity",
    model="MLP 8-16-1 with Tanh, float32, seed 0",
    inputs=f"all_reduce of (r + 1) * [1, 2, 3, 4]; batch of 8, rank r of {WORLD_SIZE} gets rows 4r..4r+3",
    method=f"{WORLD_SIZE} workers per run (forked for CPU jobs, spawned otherwise); per-rank tensors compared "
    "element-wise with the CPU/gloo run, "
    f"rtol {RTOL:g}, atol {ATOL:g}",
)

# %%
# The job
# -------
# Both runs execute the same function from the helper module
# ``gallery/_jobs.py``; only the device and the process-group backend differ.
#
# .. literalinclude:: /gallery/_jobs.py
#    :pyobject: parity_job
#
# .. literalinclude:: /gallery/_jobs.py
#    :pyobject: ddp_job

reference_backend, _ = resolve_backend(v.reference_device.type)
print(f"reference: {reference_backend.name} with {reference_backend.dist_backend!r}")
print(f"target:    {v.backend.name} with {v.backend.dist_backend!r}")

# %%
# The reference: CPU with gloo
# ----------------------------

reference = None
with v.check(f"the job runs on {WORLD_SIZE} ranks on the CPU with gloo (the reference)") as check:
    reference, reason = distributed.attempt(_jobs.parity_job, reference_backend, WORLD_SIZE)
    if reason:
        check.unsupported(reason)
    for rank, result in enumerate(reference):
        check.equal(result["result_device"], v.reference_device.type, f"rank {rank}: device type")

# %%
# The same job on the configured backend
# --------------------------------------

target, target_reason = None, None
with v.check(f"the job runs on {WORLD_SIZE} ranks on the configured backend") as check:
    check.measure("process-group backend", str(v.backend.dist_backend))
    target, target_reason = distributed.attempt(_jobs.parity_job, v.backend, WORLD_SIZE)
    if target_reason:
        check.unsupported(target_reason)
    for rank, result in enumerate(target):
        check.equal(result["result_device"], v.device.type, f"rank {rank}: device type")

# %%
# Rank by rank
# ------------
# Every tensor a rank produced, against the same rank of the reference run.


def tensors(result):
    """The per-rank tensors the method compares, by name."""
    named = {"all_reduce": result["allreduce"], "output": result["output"]}
    named.update({f"grad {n}": g for n, g in result["grads"].items()})
    named.update({f"param {n}": p for n, p in result["params"].items()})
    return named


differences = {}
with v.check("every rank's outputs and gradients match the CPU/gloo reference") as check:
    if target_reason:
        check.unsupported(target_reason)
    if reference is None or target is None:
        raise RuntimeError("a run did not complete (see the checks above)")
    identical = True
    for rank in range(WORLD_SIZE):
        expected, actual = tensors(reference[rank]), tensors(target[rank])
        for name, value in expected.items():
            if not check.close(actual[name], value, rtol=RTOL, atol=ATOL, what=f"rank {rank} {name}"):
                identical = False
                if actual[name].shape != value.shape:
                    continue
            differences[(rank, name)] = (actual[name].double() - value.double()).abs().max().item()
            identical &= bool((actual[name] == value).all())
    check.measure("bit-identical to the reference on every rank", identical)
    if v.on_reference:
        check.unsupported(
            "the configured backend is the CPU/gloo reference itself; a second CPU/gloo run "
            + ("was bit-identical to the first" if identical else "differed from the first")
            + ", which shows only that the comparison runs"
        )

# %%
# The differences
# ---------------
# Largest element-wise difference from the reference per tensor and rank
# (exact zeros drawn at the bottom of the axis).

if differences:
    names = list(tensors(reference[0]))
    floor = 1e-12
    fig, ax = plt.subplots(figsize=(7, 3))
    width = 0.8 / WORLD_SIZE
    for rank in range(WORLD_SIZE):
        ax.bar(
            [i + (rank - (WORLD_SIZE - 1) / 2) * width for i in range(len(names))],
            [max(differences[(rank, n)], floor) for n in names],
            width,
            label=f"rank {rank}",
        )
    ax.axhline(ATOL, color="black", linestyle=":", label=f"atol {ATOL:g}")
    ax.set_yscale("log")
    ax.set_ylim(floor / 2, max(1e-2, 10 * max(differences.values())))
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("max abs difference")
    run = "a second CPU/gloo run" if v.on_reference else f"{v.backend.name}/{v.backend.dist_backend}"
    ax.set_title(f"{run} vs the CPU/gloo reference, rank by rank")
    ax.legend(fontsize=7)
    fig.tight_layout()

v.finish()
