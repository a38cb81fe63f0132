"""
Every OpInfo operator and dtype on the backend: native, CPU fallback or wrong
=============================================================================

:claim-verdict:`opinfo-coverage`

The claim: the operators in PyTorch's OpInfo database (``op_db``, the list
PyTorch's own device-generic tests use) run on the configured backend and
match the CPU, dtype by dtype. We measure it for every ``op_db`` entry and
every dtype the CPU reference supports among float32, bfloat16, float16,
int64, bool and complex64, and give each operator × dtype one outcome:
*native*, *CPU fallback* (it matched, but ran a kernel on the CPU), *mismatch*,
*raises*, *no kernel*, *excluded* by OpInfo's own metadata, *random* (ran, but
draws random numbers, so values cannot be compared), *no CPU reference*, or
*not reached* when the stated time guard ran out. Each operator that
supports autograd is also measured backward, in float32: the gradients of
its outputs w.r.t. its floating inputs, given the same ``grad_outputs`` drawn
on the CPU, on the device against the CPU (PyTorch's
``test_output_grad_match``), in a ``float32 backward`` column with the same
outcomes, and *not run (forward failed)* where the forward call those
gradients need failed on the device. A cell OpInfo excludes is
still run once (its first sample, values not compared): the table shows what
that showed beside OpInfo's reason, and a worker killed there makes it a
*raises* cell, since a crash is a crash whatever the metadata says. A crash
names its signal and the sample it died on.

The method is PyTorch's ``TestCommon.test_compare_cpu``, made to record rather
than stop: samples as that test makes them (arguments PyTorch requires on the
CPU stay there; a boolean mask goes to the device, where a model's is), the
device call and then the CPU call, the sample's own output post-processing,
OpInfo's skips and expected failures honoured, and
every sample kept. Results are compared the way PyTorch's own tests accept
them: within ``atol = rtol = 1e-3``, looser where the operator's OpInfo
overrides or the dtype's ``torch.testing`` defaults say so (bfloat16: ``rtol``
0.016); the indices of ties (``kthvalue``, ``median``, ``sort``...) through the
input values they point at, since which of two equal elements an
implementation picks is not defined; NaN equal to NaN; and where a floating
result still differs, an element within the tolerance of the float64 result
is not held against the device, however far the CPU's is from it. Each
cell's detail names the stage a problem arose at (building the sample,
running it on the device, the CPU reference, comparing) and the size of the
largest difference against the tolerance used, and each sample's argument
kinds (tensor ranks, 0-dim, complex, negative integers, keepdim,
accumulate) are kept, so that ``torchclaims check`` can tell whether a bad
sample looks like a model's calls. The table's denominator is also stated
in the dispatcher's own units: how many of the ATen overloads a backend must
implement (those with a CPU, CUDA or CompositeExplicitAutograd kernel) the
rows dispatched, forward and backward, and which are unknown. The engine is
``torchclaims.coverage.operators``; the whole table, searchable and with
downloads, is on :doc:`/docs/coverage/operators`.

On the CPU the configured device *is* the reference: each sample runs once,
the table says which operator × dtype the CPU supports, and the verdict is
*unverified*.
"""

import matplotlib.pyplot as plt
import torch

from torchclaims.coverage import worker_settings
from torchclaims.coverage.operators import BACKWARD_OUTCOMES, DEFAULT_MAX_SAMPLES, sweep_operators
from torchclaims.verify import verification

MAX_SAMPLES = DEFAULT_MAX_SAMPLES  # the first samples of each operator x dtype, in OpInfo's order
RECORD_MARGIN_S = 20  # kept for the figure and the record after the sweep (a few seconds on a CPU)

v = verification(
    "opinfo-coverage",
    model="torch.testing._internal.common_methods_invocations.op_db: every entry",
    inputs=f"the first {MAX_SAMPLES} sample inputs of each operator x dtype (float32, bfloat16, float16, int64, "
    "bool, complex64 where the CPU supports it), made on the CPU from seed 0 (torch, random, numpy); for the "
    "float32 backward, made with requires_grad, and grad_outputs drawn on the CPU from seed 0",
    method="test_compare_cpu: the device call, then the CPU call; output_process_fn_grad; within atol = rtol = "
    "1e-3 or looser (OpInfo overrides, torch.testing's dtype defaults); indices of ties through the values they "
    "point at; NaN equal; an element within the tolerance of the float64 result accepted; op_db skips and expected "
    "failures excluded, each such cell run once on its first sample to see whether it crashes, raises or falls back; "
    "CPU fallback from the backend's own counters, for any operator a sample reached; the float32 gradients of "
    "operators that support autograd compared the same way (test_output_grad_match), each with the fallbacks of its "
    "backward alone; worker processes grown into idle CPUs",
)

# %%
# The sweep
# ---------
# The list is fixed from metadata first; then worker processes take one
# operator × dtype at a time, spread over the backend's devices. The sweep
# takes the machine: it starts with the CPUs the runner gave its claim and
# adds a worker for each CPU that falls idle (other claims may be running
# beside it), up to one per core, fewer if memory is short. A worker the
# device kills or hangs costs only its cell. The time guard is the moment
# every answer must be in, leaving room for the record within the runner's
# time limit: no cell starts that the measured cell times say would end
# later, and cells it stops are *not reached*. The record states the share
# of cells reached.

time_left = v.time_left()
guard_s = None if time_left is None else max(0.0, time_left - RECORD_MARGIN_S)
sweep = sweep_operators(v.backend.name, max_samples=MAX_SAMPLES, guard_s=guard_s)
table = sweep.table
v.add_table(table)
print(
    f"{len(table.rows)} op_db entries, {sweep.samples_run} samples run in {sweep.seconds:g} s "
    f"by up to {sweep.workers} workers on {sweep.devices} device(s) ({sweep.worker_starts} started)"
)
print("\n".join(table.summary()))
print(f"dispatcher overloads: {table.overloads.summary()}")

# %%
# What does not match
# -------------------
# Operators that differ from the CPU, raise or have no kernel, forward or
# backward, with the first sample that shows it, and the backward cells whose
# forward failed (the whole table has every cell).

for code in "MRKW":
    outcome = BACKWARD_OUTCOMES[code]
    cells = [(row, column, detail) for row, column, said, detail, _ in table.cells() if said == outcome]
    print(f"\n{outcome}: {len(cells)} operator x dtype cells")
    for row, column, detail in cells[:25]:
        print(f"  {row} [{column}]: {detail[:150]}")
    if len(cells) > 25:
        print(f"  ... and {len(cells) - 25} more")

# %%
# Outcome shares per dtype
# ------------------------
# Each bar is one dtype; its length is the number of operators listed for it.

colors = {
    "N": "tab:green",
    "F": "tab:olive",
    "M": "tab:orange",
    "R": "tab:red",
    "K": "tab:purple",
    "X": "silver",
    "U": "tab:cyan",
    "C": "tab:brown",
    "E": "black",
    "T": "whitesmoke",
    "W": "tab:pink",
}
fig, ax = plt.subplots(figsize=(9, 3.2))
for row, column in enumerate(table.columns):
    counts, start = column.count(), 0
    for code, color in colors.items():
        ax.barh(
            row,
            counts[code],
            left=start,
            color=color,
            edgecolor="gray",
            linewidth=0.3,
            label=BACKWARD_OUTCOMES[code] if row == 0 else None,
        )
        start += counts[code]
ax.set_yticks(range(len(table.columns)), [f"{c.name} ({c.listed})" for c in table.columns])
ax.invert_yaxis()
ax.set_xlabel("operators listed for the dtype (backward: for its gradients)")
ax.set_title(f"op_db on {v.device.type} against the CPU (torch {torch.__version__})")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=5, fontsize=7, frameon=False)
fig.tight_layout()

# %%
# The verdict
# -----------
# The claim holds only if every listed operator × dtype ran on the device and
# matched (natively or through a fallback), forward and backward. A mismatch,
# an exception or a missing kernel refutes it; cells without a CPU reference,
# hit by a harness error or whose backward did not run because the forward
# failed leave it unverified, and so do cells not reached: the record's own
# check of the table's reach states the share reached, and a partial table
# decides nothing about the rest.

counts = {code: sum(c.count()[code] for c in table.columns) for code in BACKWARD_OUTCOMES}
listed = sum(c.listed for c in table.columns)
with v.check("every listed operator x dtype runs on the device and matches the CPU") as check:
    check.measure("operator x dtype cells listed", listed)
    for code, outcome in BACKWARD_OUTCOMES.items():
        check.measure(f"cells: {outcome}", counts[code], unit=f"of {listed}")
    for column in table.columns:
        check.measure(f"{column.name}: native", f"{column.count()['N']}/{column.listed}")
    check.measure("samples run", sweep.samples_run, tolerance=f"at most {MAX_SAMPLES} per cell")
    check.measure(
        "backend-relevant dispatcher overloads the rows dispatched",
        table.overloads.measured,
        unit=f"of {table.overloads.relevant}",
    )
    check.measure("sweep worker settings", worker_settings.describe(v.backend.name))
    check.measure("precision mode of the sweep workers", " | ".join(sweep.precision) or "not reported")
    check.measure("sweep workers (most at once)", sweep.workers, unit=f"on {sweep.devices} device(s)")
    check.measure(
        "sweep took",
        sweep.seconds,
        unit="s",
        tolerance="no time guard" if guard_s is None else f"time guard {guard_s:.0f} s",
    )
    if counts["T"]:
        check.measure("cells not reached would have needed, at the measured rate", sweep.needed_s, unit="s")
    for code, what in (("M", "differ from the CPU"), ("R", "raise on the device"), ("K", "have no kernel")):
        check.expect(not counts[code], f"{counts[code]} operator x dtype cells {what}")
    refuted = counts["M"] + counts["R"] + counts["K"]
    if v.on_reference and not refuted:
        check.unsupported(
            "the configured backend is the CPU reference itself: the table shows what the CPU "
            "supports, but the comparison with the CPU needs another device"
        )
    if (counts["C"] or counts["E"] or counts["W"]) and not refuted:
        check.unsupported(
            f"{counts['C']} cells without a CPU reference, {counts['E']} hit by a harness error, "
            f"{counts['W']} backward cells not run because the forward failed"
        )

v.finish()
