"""
How much of PyTorch's OpInfo database runs on the backend and matches the CPU
=============================================================================

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
budget did not reach are counted as not reached, never as passing.

On the CPU the configured device *is* the reference: a CPU run shows that the
listed operators run and are reproducible on the CPU, and that the harness
works; it says nothing about an accelerator.
"""

import itertools
import textwrap
import time
import warnings

import matplotlib.pyplot as plt
import torch
from torch.testing._internal.common_device_type import toleranceOverride
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import DecorateInfo

from torchclaims.coverage import Evidence, Outcome, run_items
from torchclaims.verify import verification

warnings.filterwarnings("ignore")

BUDGET_S = 60.0  # total time for the device runs
MAX_SAMPLES = 3  # samples per operator
PER_OP_S = 2.0  # no further sample of an operator is started after this long
DEFAULT_TOL = (1e-3, 1e-3)  # (atol, rtol) of TestCommon.test_compare_cpu
DTYPE = torch.float32

v = verification(
    "opinfo-coverage",
    model=f"torch.testing._internal.common_methods_invocations.op_db ({len(op_db)} OpInfo entries)",
    inputs=f"the first {MAX_SAMPLES} float32 sample inputs of each listed operator, generated on the CPU with seed 0",
    method=f"assert_close against the CPU at test_compare_cpu tolerances; {BUDGET_S:g} s total budget, "
    f"at most {MAX_SAMPLES} samples and {PER_OP_S:g} s per operator; shares over all listed operators and samples",
)
reference = v.reference_device

# %%
# The documented list
# -------------------
# Every ``op_db`` entry with float32 support on the CPU, less the entries whose
# output is not reproducible, so a comparison would mean nothing:
#
# * those ``op_db`` itself skips in ``test_compare_cpu`` for this device type
#   (non-deterministic outputs such as ``empty``, dropout, sampling);
# * those flagged ``has_nondeterministic_output``;
# * those whose CPU result changes with the random seed (random operators),
#   found by running the first sample under two seeds.
#
# Entries whose CPU reference cannot be computed (for example the
# CUDA-only ``jiterator_*`` operators) are reported separately.


def label(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


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
            elif "skip" in getattr(decorator, "__qualname__", ""):
                cells = dict(zip(decorator.__code__.co_freevars, decorator.__closure__ or ()))
                skip = cells["reason"].cell_contents if "reason" in cells else "skipped"
    return skip, tolerance


def first_samples(op, count):
    torch.manual_seed(0)
    return list(itertools.islice(op.sample_inputs(str(reference), DTYPE, requires_grad=False), count))


def call(op, sample, seed=0):
    torch.manual_seed(seed)
    return op(sample.input, *sample.args, **sample.kwargs)


def to_cpu(value):
    if isinstance(value, torch.Tensor):
        return value.to(reference)
    if isinstance(value, (list, tuple)):  # also torch.return_types structs; compared as sequences
        return [to_cpu(x) for x in value]
    if isinstance(value, dict):
        return {k: to_cpu(x) for k, x in value.items()}
    return value


def compare(actual, expected, atol, rtol):
    """None when equal within tolerance, else the first line of the difference."""
    try:
        torch.testing.assert_close(
            to_cpu(actual), to_cpu(expected), atol=atol, rtol=rtol, equal_nan=True, check_device=False
        )
    except AssertionError as exc:
        return " ".join(str(exc).split())[:160]
    except (TypeError, ValueError, RuntimeError):  # types assert_close does not know: plain equality
        if to_cpu(actual) != to_cpu(expected):
            return f"{actual!r} != {expected!r}"
    return None


listed, excluded, reference_failures = [], {}, {}
started = time.perf_counter()
for op in op_db:
    name = label(op)
    if DTYPE not in op.supported_dtypes(reference.type):
        continue  # not a float32 operator on the CPU: outside the list
    skip, tolerance = compare_cpu_decorations(op)
    if skip is not None:
        excluded[name] = f"op_db skips test_compare_cpu: {skip}"
        continue
    if op.has_nondeterministic_output:
        excluded[name] = "op_db: has_nondeterministic_output"
        continue
    try:
        samples = first_samples(op, MAX_SAMPLES)
        if not samples:
            reference_failures[name] = "no float32 sample"
            continue
        expected = [sample.output_process_fn_grad(call(op, sample)) for sample in samples]
        again = first_samples(op, 1)[0]
        if compare(again.output_process_fn_grad(call(op, again, seed=1)), expected[0], 0.0, 0.0) is not None:
            excluded[name] = "CPU result changes with the random seed"
            continue
    except Exception as exc:
        reference_failures[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:120]
        continue
    listed.append((op, name, tolerance, expected))
reference_s = time.perf_counter() - started
float32_ops = len(listed) + len(excluded) + len(reference_failures)
print(f"{float32_ops} op_db entries with CPU float32 support; CPU references in {reference_s:.1f} s")
print(f"listed: {len(listed)}, excluded as not reproducible: {len(excluded)}, CPU reference failed: {len(reference_failures)}")
for name, why in sorted(excluded.items()):
    print(f"  excluded {name}: {why}")
for name, why in sorted(reference_failures.items()):
    print(f"  no CPU reference {name}: {why}")

# %%
# The device runs
# ---------------
# Each operator regenerates its samples on the CPU (seed 0), moves every tensor
# to the device, runs, and compares with the CPU results above. An exception
# counts as *fails*; ``NotImplementedError`` (no kernel registered for the
# device) counts as *unsupported*.

samples_run = {}  # operator -> [(sample index, "match" | "mismatch" | "fails")]


def on_device(op, name, tolerance, expected):
    def item():
        begun = time.perf_counter()
        results = samples_run.setdefault(name, [])
        mismatches = []
        for index, sample in enumerate(first_samples(op, len(expected))):
            if index and time.perf_counter() - begun > PER_OP_S:
                break  # per-operator bound: the remaining samples are not reached
            moved = sample.transform(lambda t: t.to(v.device) if isinstance(t, torch.Tensor) else t)
            try:
                out = moved.output_process_fn_grad(call(op, moved))  # on the device, as test_compare_cpu does
                v.sync()
            except Exception:
                results.append((index, "fails"))
                raise
            problem = compare(out, expected[index], *tolerance)
            results.append((index, "match" if problem is None else "mismatch"))
            if problem is not None:
                mismatches.append(f"sample {index}: {problem}")
        ran = len(results)
        return Evidence(
            match=not mismatches,
            detail="; ".join(mismatches),
            values={"samples": f"{ran}/{len(expected)}"},
        )

    return item


report = run_items(
    [(name, on_device(op, name, tolerance, expected)) for op, name, tolerance, expected in listed],
    budget_s=BUDGET_S,
    unsupported=(NotImplementedError,),
)
counts = report.counts()

samples_listed = sum(len(expected) for *_, expected in listed)
sample_outcomes = [outcome for results in samples_run.values() for _, outcome in results]
samples_matched = sample_outcomes.count("match")
print(report.summary())
print(
    f"samples: {samples_matched}/{samples_listed} match ({100 * samples_matched / max(samples_listed, 1):.1f}%); "
    f"{sample_outcomes.count('mismatch')} mismatch, {sample_outcomes.count('fails')} fail, "
    f"{samples_listed - len(sample_outcomes)} not run"
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
# a mismatch, a failure or a missing kernel refutes it; operators the budget
# did not reach leave it unverified (unless something already refuted it).

with v.check("every listed operator runs its float32 samples on the device and matches the CPU") as check:
    check.measure("op_db entries with CPU float32 support", float32_ops)
    check.measure("excluded as not reproducible on the CPU", len(excluded))
    check.measure("CPU reference failed (left out)", len(reference_failures))
    check.measure("operators that match", f"{report.matched}/{report.total}")
    check.measure("share of operators that match", round(100 * report.share, 1), unit="%")
    for outcome in not_matching:
        check.measure(f"operators: {outcome.value}", counts[outcome])
    check.measure("samples that match", f"{samples_matched}/{samples_listed}")
    check.measure("share of samples that match", round(100 * samples_matched / max(samples_listed, 1), 1), unit="%")
    check.measure("device runs took", round(report.elapsed_s, 1), unit="s", tolerance=f"budget {BUDGET_S:g} s")
    for outcome, what in ((Outcome.MISMATCH, "differ from the CPU"), (Outcome.FAILS, "raise on the device"),
                          (Outcome.UNSUPPORTED, "have no kernel on the device")):
        names = report.names(outcome)
        check.expect(not names, f"{len(names)} operators {what}: " + ", ".join(names[:20]) + (" ..." if len(names) > 20 else ""))
    check.expect(report.total > 0, "no operator could be listed")
    refuted = counts[Outcome.MISMATCH] + counts[Outcome.FAILS] + counts[Outcome.UNSUPPORTED] + (report.total == 0)
    if counts[Outcome.NOT_REACHED] and not refuted:
        check.unsupported(f"{counts[Outcome.NOT_REACHED]} of {report.total} operators not reached within {BUDGET_S:g} s")

# %%
# Outcome counts
# --------------
# One bar for operators, one for samples, each over its whole list.

colors = {"match": "tab:green", "mismatch": "tab:orange", "fails": "tab:red", "unsupported": "tab:purple",
          "not reached": "lightgray"}
bars = {
    "operators": {o.value: counts[o] for o in Outcome},
    "samples": {
        "match": samples_matched,
        "mismatch": sample_outcomes.count("mismatch"),
        "fails": sample_outcomes.count("fails"),
        "not reached": samples_listed - len(sample_outcomes),
    },
}
fig, ax = plt.subplots(figsize=(8, 2.6))
for row, (name, tally) in enumerate(bars.items()):
    total, start = max(sum(tally.values()), 1), 0.0
    for outcome, n in tally.items():
        ax.barh(row, 100 * n / total, left=start, color=colors[outcome], label=outcome if row == 0 else None)
        if n and 100 * n / total > 6:
            ax.text(start + 50 * n / total, row, str(n), ha="center", va="center", fontsize=8)
        start += 100 * n / total
ax.set_yticks(range(len(bars)), [f"{k}\n({sum(t.values())})" for k, t in bars.items()])
ax.set_xlim(0, 100)
ax.set_xlabel("% of the listed items")
ax.set_title(f"OpInfo float32 samples on {v.device.type} against the CPU (torch {torch.__version__})")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=5, fontsize=8, frameon=False)
fig.tight_layout()

v.finish()
