"""
Every causal-LM architecture in Transformers, tiny, on the backend against the CPU
==================================================================================

:claim-verdict:`hf-architecture-coverage`

The claim: tiny randomly initialised models of the text-generation
architectures Hugging Face Transformers provides, built from their
configurations without downloading anything, run a forward pass and a short
greedy generation on the configured backend and give the same logits (within
tolerance) and tokens as on the CPU.

The list is every ``model_type`` Transformers registers for causal language
modelling (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``): its length is the
denominator. For each, a tiny configuration is derived from the config class
itself (two layers, width 32 and so on, with a few larger size sets tried in
order when a model needs them), the model is built on the CPU from seed 0 and
gives the reference: the logits of a six-token prompt and two greedy tokens.
The same weights then run on the configured device. Each architecture gets
how far it got (builds, forward matches, generate matches) and, where it
stopped, the cause. The engine is ``torchclaims.coverage.architectures``; the
whole table, searchable and with downloads, is on
:doc:`/docs/coverage/architectures`.

On the CPU the configured device *is* the reference: the table says which
architectures build and run from a tiny configuration, and the verdict is
*unverified*.
"""

import datetime
import re
from pathlib import Path

import matplotlib.pyplot as plt
import transformers

from torchclaims.coverage import worker_settings
from torchclaims.coverage.arch_check import ATOL, NEW_TOKENS, PROMPT, RTOL
from torchclaims.coverage.architectures import CAUSES, RESULTS, sweep_architectures
from torchclaims.verify import load_claim, verification

DEVICE_CAUSES = "kexm"  # op missing on the device, device raises, crash or hang, mismatch (CAUSES)
RECORD_MARGIN_S = 20  # kept for the figure and the record after the sweep (a few seconds on a CPU)

v = verification(
    "hf-architecture-coverage",
    model=f"every model_type in transformers {transformers.__version__} MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, "
    "tiny configurations derived from the config classes (seed 0)",
    inputs=f"one prompt of {len(PROMPT[0])} token ids; greedy generate() of {NEW_TOKENS} tokens",
    method=f"logits within rtol {RTOL:g} / atol {ATOL:g} and identical tokens against the same weights on the CPU; "
    "worker processes grown into idle CPUs, one per core at most; share over every registered architecture",
)

# %%
# The sweep
# ---------
# Worker processes take one architecture at a time, spread over the backend's
# devices; the sweep starts with the CPUs the runner gave its claim and adds a
# worker for each CPU that falls idle, up to one per core.
# Every answer must be in by the time guard, which leaves room for the record
# within the runner's time limit; the record states the share reached.

time_left = v.time_left()
guard_s = None if time_left is None else max(0.0, time_left - RECORD_MARGIN_S)
table, facts = sweep_architectures(v.backend.name, guard_s=guard_s)
v.add_table(table)
print(
    f"{len(table.rows)} architectures registered for causal LM in transformers {transformers.__version__} "
    f"(listed {datetime.date.today()}); {facts['seconds']:g} s with up to {facts['workers']} workers"
)
print("\n".join(table.summary()))

# %%
# Where they stop, and why
# ------------------------

result, cause = table.column("result"), table.column("cause")
for code in "BWZ":
    rows = [i for i, c in enumerate(result.codes) if c == code]
    print(f"\n{RESULTS[code]} and no further: {len(rows)}")
    for i in rows:
        print(f"  {table.rows[i]}: {CAUSES[cause.codes[i]]}: {cause.details.get(i, '')[:140]}")

# %%
# Beside the attributed figures
# -----------------------------
# Hugging Face is reported to have found that its libraries used directly on
# Trainium support 89% of the top 100 text-generation architectures, against
# 46% for Optimum Neuron v0.4.5 (the attributed claim
# ``hf-direct-trainium-coverage``, whose post could not be retrieved). That is
# **not the same measurement**: its list is most likely the Hub's ranking of
# real checkpoints, "support" is not defined in the material found, and it was
# measured on Trainium. Ours is every architecture Transformers registers, tiny
# random weights, one prompt, compared with the CPU on whichever backend ran
# this page. The attributed bars are hatched to keep them apart; their
# figures are read from that claim's record.

# The project's claims/ folder: beside the folder a script runs in, or above it.
claims = next(folder / "claims" for folder in (Path.cwd(), *Path.cwd().parents) if (folder / "claims").is_dir())
attributed = load_claim(claims / "hf-direct-trainium-coverage.toml")
direct, optimum = (int(share) for share in re.findall(r"(\d+)%", attributed.proposition)[:2])
ATTRIBUTED = {"HF direct\n(attributed)": direct, "Optimum\nNeuron\n(attributed)": optimum}
shares = {code: 100 * n / result.listed for code, n in result.count().items()}
fig, ax = plt.subplots(figsize=(8, 3.4))
labels = [f"this page\n({v.device.type}, {result.listed})"] + list(ATTRIBUTED)
left = 0.0
for code, color in (("G", "tab:green"), ("W", "tab:olive"), ("B", "tab:orange"), ("Z", "silver"), ("T", "whitesmoke")):
    ax.bar(labels[0], shares.get(code, 0), bottom=left, color=color, label=RESULTS[code])
    left += shares.get(code, 0)
ax.bar(list(ATTRIBUTED), list(ATTRIBUTED.values()), color="white", edgecolor="gray", hatch="//")
ax.set_ylabel("% of the listed architectures")
ax.set_ylim(0, 100)
ax.legend(fontsize=7, loc="upper right")
ax.set_title("different lists, different methods", fontsize=9)
fig.tight_layout()

# %%
# The verdict
# -----------
# The claim holds only if every listed architecture generates the same tokens
# as the CPU. An architecture that fails on the device refutes it; one that
# has no tiny model running on the CPU leaves it unverified, and so does one
# not reached: the record's own check of the table's reach states the share
# reached, and a partial table decides nothing about the rest.

counts = result.count()
with v.check("every registered architecture runs forward and generate on the device and matches the CPU") as check:
    check.measure("architectures listed", result.listed)
    for code, name in RESULTS.items():
        check.measure(f"architectures: {name}", counts[code], unit=f"of {result.listed}")
    for code, name in CAUSES.items():
        if code != "-" and cause.count()[code]:
            check.measure(f"cause: {name}", cause.count()[code])
    check.measure("sweep worker settings", worker_settings.describe(v.backend.name))
    check.measure("precision mode of the sweep workers", " | ".join(facts["precision"]) or "not reported")
    check.measure("sweep workers (most at once)", facts["workers"], unit=f"on {facts['devices']} device(s)")
    check.measure(
        "sweep took",
        facts["seconds"],
        unit="s",
        tolerance="no time guard" if guard_s is None else f"time guard {guard_s:.0f} s",
    )
    # A stage that stopped for the harness's sake (the CPU reference itself raised, say) is no
    # failure of the device: only the device's own causes refute.
    stopped = [(r, c) for r, c in zip(result.codes, cause.codes, strict=True) if r in "BW"]
    failed = sum(c in DEVICE_CAUSES for _, c in stopped)
    no_reference = len(stopped) - failed
    check.expect(not failed, f"{failed} architectures fail or differ on the device")
    if v.on_reference and not failed:
        check.unsupported(
            "the configured backend is the CPU reference itself: the table shows what builds and "
            "runs on the CPU, but the comparison with the CPU needs another device"
        )
    if (counts["Z"] or counts["E"] or no_reference) and not failed:
        check.unsupported(
            f"{counts['Z']} architectures have no tiny model that runs on the CPU, "
            f"{no_reference} stopped where the CPU reference itself failed, "
            f"{counts['E']} hit a harness error"
        )

v.finish()
