"""
Share of PyTorch OpInfo operator samples that run on the backend and match CPU
==============================================================================

:claim-verdict:`opinfo-coverage`

The claim: for the operators in PyTorch's OpInfo database (``op_db``, the
operator list PyTorch's own device-generic tests use), the float32 sample
inputs run on the configured backend and match the CPU result within the
OpInfo tolerances; we report the share of operators and of samples that pass,
within a bounded time per operator and in total.

Method, the same idea as PyTorch's ``TestCommon.test_compare_cpu``: for each
listed operator we take its first float32 samples (at most three), compute
the result on the CPU, run the same samples on the configured device, apply
the sample's own output post-processing to both, and compare with
``torch.testing.assert_close`` at ``test_compare_cpu``'s tolerance
(``atol=rtol=1e-3``, or the operator's own override for that test). An
operator *matches* when every sample it ran matches. Operators the time
budget did not reach are counted as not reached, never as passing; the
operator share is taken over the whole list.

On the CPU the configured device *is* the reference: a CPU run shows that the
listed operators run and are reproducible on the CPU, and that the harness
works; it says nothing about an accelerator, so the verdict there is
*unverified* and the figures describe the CPU only.
"""

import textwrap
import warnings

import matplotlib.pyplot as plt
import torch
from torch.testing._internal.common_device_type import toleranceOverride
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import DecorateInfo

import _opinfo
from torchclaims.coverage import Evidence, NoReference, Outcome, run_items
from torchclaims.verify import verification

warnings.filterwarnings("ignore")

BUDGET_S = 60.0  # total time for the CPU references and the device runs
MAX_SAMPLES = 3  # samples per operator
PER_OP_S = 2.0  # no further sample of an operator is started after this long
DEFAULT_TOL = (1e-3, 1e-3)  # (atol, rtol) of TestCommon.test_compare_cpu
DTYPE = torch.float32

v = verification(
    "opinfo-coverage",
    model=f"torch.testing._internal.common_methods_invocations.op_db ({len(op_db)} OpInfo entries)",
    inputs=f"the first {MAX_SAMPLES} float32 sample inputs of each listed operator, generated on the CPU with seed 0 "
    "(torch, random, numpy)",
    method=f"assert_close against the CPU at test_compare_cpu tolerances; {BUDGET_S:g} s total budget, "
    f"at most {MAX_SAMPLES} samples and {PER_OP_S:g} s per operator; operator share over all listed operators, "
    "sample share over the samples of the operators reached; operators run one at a time in a spawned worker "
    "process, and one that kills it or takes over 60 s counts as failing",
)
reference = v.reference_device

# %%
# The documented list
# -------------------
# Every ``op_db`` entry with float32 support on the CPU, less the entries for
# which ``op_db``'s own metadata says a comparison with the CPU is meaningless
# or impossible:
#
# * those it skips in ``test_compare_cpu`` for this device type
#   (non-deterministic outputs such as ``empty``, dropout, sampling);
# * those flagged ``has_nondeterministic_output``;
# * those decorated ``onlyCUDA`` (the ``jiterator_*`` operators), which have
#   no CPU result to compare with.
#
# The list is fixed from metadata before anything runs; its length is the
# denominator of the operator share.


label = _opinfo.label  # "name.variant"


def compare_cpu_decorations(op):
    """(skip reason or None, (atol, rtol)) from op_db's test_compare_cpu entries for this device."""
    skip, tolerance = None, DEFAULT_TOL
    for info in op.decorators:
        if not isinstance(info, DecorateInfo):
            continue
        if not info.is_active("TestCommon", "test_compare_cpu", v.device.type, DTYPE, {}):
            continue
        for decorator in info.decorators:
            if isinstance(decorator, toleranceOverride) and DTYPE in decorator.d:
                tolerance = (decorator.d[DTYPE].atol, decorator.d[DTYPE].rtol)
            elif getattr(decorator, "__qualname__", "").startswith("skip.<locals>"):  # unittest.skip(reason)
                cells = dict(zip(decorator.__code__.co_freevars, decorator.__closure__ or ()))
                skip = cells["reason"].cell_contents if "reason" in cells else "skipped"
    return skip, tolerance


listed, excluded = [], {}
float32_ops = 0
for op in op_db:
    if DTYPE not in op.supported_dtypes(reference.type):
        continue  # not a float32 operator on the CPU: outside the list
    float32_ops += 1
    skip, tolerance = compare_cpu_decorations(op)
    if skip is not None:
        excluded[label(op)] = f"op_db skips test_compare_cpu: {skip}"
    elif getattr(op, "has_nondeterministic_output", False):  # the flag is newer than torch 2.9
        excluded[label(op)] = "op_db: has_nondeterministic_output"
    elif any(getattr(d, "__name__", "") == "onlyCUDA" for d in op.decorators):
        excluded[label(op)] = "op_db: onlyCUDA (no CPU result)"
    else:
        listed.append((op, tolerance))
print(f"{float32_ops} op_db entries with CPU float32 support: {len(listed)} listed, {len(excluded)} excluded")
for name, why in sorted(excluded.items()):
    print(f"  excluded {name}: {why}")

# %%
# One operator: CPU reference, then the device
# --------------------------------------------
# Samples are generated on the CPU with seed 0, as often as needed, so the
# reference and the device run get identical, untouched inputs. The CPU
# reference must be reproducible: the first sample is run again under another
# seed, and an operator whose CPU result changes has *no reference*. Then the
# samples are moved to the device, run, post-processed and compared. An
# exception on the device counts as *fails*, ``NotImplementedError`` (no kernel
# registered for the device) as *unsupported*. This is the method, from the
# helper module ``gallery/_opinfo.py``:
#
# .. literalinclude:: /gallery/_opinfo.py
#    :pyobject: check_operator
#
# A device runtime can also kill the process instead of raising, or be left
# unable to synchronize by a failed call, so the operators run one at a time in
# a separate worker process on the configured backend: an operator that kills
# the worker, or gets no answer within 60 s, counts as *fails* (with the
# signal), and a fresh worker takes the next one; after a failure the worker
# collects what the failed call left behind and must synchronize cleanly, or it
# is replaced too.

sample_outcomes = {}  # operator -> outcome of each sample with a CPU reference: match, mismatch, fails, not run
worker = _opinfo.Worker(v.backend.name, MAX_SAMPLES, PER_OP_S)
worker.start()  # before the budget starts: importing torch and op_db again takes a few seconds


def operator(op, tolerance):
    name = label(op)

    def item():
        answer = worker.ask(name, tolerance)
        sample_outcomes[name] = answer["samples"]
        if answer["kind"] == "no reference":
            raise NoReference(answer["detail"])
        if answer["kind"] in ("unsupported", "fails"):
            raise _opinfo.device_error(answer)  # the device's exception type and first line
        outcomes = answer["samples"]
        return Evidence(
            match=answer["match"],
            detail=answer["detail"],
            values={"samples": f"{outcomes.count('match')}/{len(outcomes)}"},
        )

    return item


report = run_items(
    [(label(op), operator(op, tolerance)) for op, tolerance in listed],
    budget_s=BUDGET_S,
    unsupported=(NotImplementedError,),
)
worker.stop()
print(f"worker processes started: {worker.starts}")
for why in worker.restarts:
    print(f"  worker replaced {why}")
counts = report.counts()

all_samples = [outcome for outcomes in sample_outcomes.values() for outcome in outcomes]
samples_matched = all_samples.count("match")
print(report.summary())
print(
    f"samples with a CPU reference, of the operators reached: {samples_matched}/{len(all_samples)} match "
    f"({100 * samples_matched / max(len(all_samples), 1):.1f}%); {all_samples.count('mismatch')} mismatch, "
    f"{all_samples.count('fails')} fail, {all_samples.count('not run')} not run"
)

# %%
# Per-operator results
# --------------------
# Operators that did not match, in full; matching operators by name only.

not_matching = [o for o in Outcome if o is not Outcome.MATCH]
if any(counts[o] for o in not_matching):
    print(report.table(outcomes=not_matching, detail_width=90))
print()
print(f"match ({counts[Outcome.MATCH]}):")
print(textwrap.fill(", ".join(report.names(Outcome.MATCH)), width=100))

# %%
# The verdict
# -----------
# The claim holds on a backend only if every listed operator ran and matched:
# a mismatch, a failure or a missing kernel refutes it; operators without a
# reproducible CPU reference or not reached within the budget leave it
# unverified (unless something already refuted it).

sample_share = 100 * samples_matched / max(len(all_samples), 1)
with v.check("every listed operator runs its float32 samples on the device and matches the CPU") as check:
    check.measure("op_db entries with CPU float32 support", float32_ops)
    check.measure("excluded by op_db metadata", len(excluded))
    check.measure("operators that match", f"{report.matched}/{report.total}")
    check.measure("share of operators that match (all listed)", round(100 * report.share, 1), unit="%")
    for outcome in not_matching:
        check.measure(f"operators: {outcome.value}", counts[outcome])
    check.measure("samples that match (operators reached)", f"{samples_matched}/{len(all_samples)}")
    check.measure("share of samples that match (operators reached)", round(sample_share, 1), unit="%")
    check.measure("runs took", round(report.elapsed_s, 1), unit="s", tolerance=f"budget {BUDGET_S:g} s")
    for outcome, what in ((Outcome.MISMATCH, "differ from the CPU"), (Outcome.FAILS, "raise on the device"),
                          (Outcome.UNSUPPORTED, "have no kernel on the device")):
        names = report.names(outcome)
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        check.expect(not names, f"{len(names)} operators {what}: {shown}")
    check.expect(report.total > 0, "no operator could be listed")
    refuted = counts[Outcome.MISMATCH] + counts[Outcome.FAILS] + counts[Outcome.UNSUPPORTED] + (report.total == 0)
    if v.on_reference and not refuted:
        # Everything ran, but on the CPU "matches the CPU" compares the CPU with itself.
        check.unsupported(
            "the configured backend is the CPU reference itself: every listed operator that was reached ran, "
            "but the comparison with the CPU needs another device"
        )
    if (counts[Outcome.NO_REFERENCE] or counts[Outcome.NOT_REACHED]) and not refuted:
        check.unsupported(
            f"not checked: {counts[Outcome.NO_REFERENCE]} operators without a reproducible CPU reference "
            f"({', '.join(report.names(Outcome.NO_REFERENCE)[:10]) or 'none'}), "
            f"{counts[Outcome.NOT_REACHED]} of {report.total} not reached within {BUDGET_S:g} s"
        )

# %%
# Outcome counts
# --------------
# One bar for the listed operators and one for the samples of the operators
# that were reached (samples of operators never reached are not known).

colors = {"match": "tab:green", "mismatch": "tab:orange", "fails": "tab:red", "unsupported": "tab:purple",
          "no reference": "tab:brown", "not reached": "lightgray", "not run": "lightgray"}
bars = {
    "operators": {o.value: counts[o] for o in Outcome},
    "samples": {k: all_samples.count(k) for k in ("match", "mismatch", "fails", "not run")},
}
fig, ax = plt.subplots(figsize=(8, 2.6))
for row, (name, tally) in enumerate(bars.items()):
    total, start = max(sum(tally.values()), 1), 0.0
    for outcome, n in tally.items():
        shown = outcome not in ax.get_legend_handles_labels()[1] and outcome != "not run"
        ax.barh(row, 100 * n / total, left=start, color=colors[outcome], label=outcome if shown else None)
        if n and 100 * n / total > 6:
            ax.text(start + 50 * n / total, row, str(n), ha="center", va="center", fontsize=8)
        start += 100 * n / total
ax.set_yticks(range(len(bars)), [f"{k}\n({sum(t.values())})" for k, t in bars.items()])
ax.set_xlim(0, 100)
ax.set_xlabel("% of the listed operators / of their samples")
ax.set_title(f"OpInfo float32 samples on {v.device.type} against the CPU (torch {torch.__version__})")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=6, fontsize=8, frameon=False)
fig.tight_layout()

v.finish()
