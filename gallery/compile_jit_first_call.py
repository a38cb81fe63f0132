"""
torch.compile compiles on the first call for each input signature
=================================================================

:claim-verdict:`compile-jit-first-call`

The claim: compilation is just-in-time. The first call with a new input
signature (shapes and dtypes) pays for compiling, so it takes markedly longer
than later calls with the same signature, and repeating the call compiles
nothing new.

We compile a small MLP with the configured backend's compiler, time each call
(synchronising the device after it), and read Dynamo's graph counter after
every call. Then we change the signature twice, once the batch size and once
the dtype (to float16, which every backend in the claim's scope has; MPS and
Trainium have no float64), and look for the same pattern again. "Markedly
longer" is judged as at least ten times the median of the repeat calls.
"""

import statistics
import time

import matplotlib.pyplot as plt
import torch
from matplotlib.ticker import MaxNLocator
from torch._dynamo.utils import counters

from torchclaims.verify import verification

MIN_RATIO = 10.0  # "markedly longer": first call >= 10 x the median repeat call
REPEATS = 5

v = verification(
    "compile-jit-first-call",
    model="MLP 64-128-10 with ReLU, float32, seed 0",
    inputs="batch of 32 (then 48, then float16)",
    method="wall time per call after device sync; Dynamo unique_graphs after each call; first call >= "
    f"{MIN_RATIO:g}x median of {REPEATS} repeats",
)

# %%
# A compiled model and a timed call
# ---------------------------------
# ``torch.compile`` itself returns at once: nothing is compiled until the
# model is called.

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(v.device)
torch._dynamo.reset()
counters.clear()
compiled = torch.compile(model, backend=v.backend.compile_backend)
print(
    f"torch.compile(backend={v.backend.compile_backend!r}) returned; graphs so far: "
    f"{counters['stats']['unique_graphs']}"
)


def graphs():
    return counters["stats"]["unique_graphs"]


def timed_calls(x, n):
    """Call the compiled model n times; return the wall time and graph count after each call."""
    times, counts = [], []
    for _ in range(n):
        start = time.perf_counter()
        with torch.no_grad():
            compiled(x)
        v.sync()
        times.append(time.perf_counter() - start)
        counts.append(graphs())
    return times, counts


signatures = {
    "float32, batch 32": torch.randn(32, 64),
    "float32, batch 48": torch.randn(48, 64),
    "float16, batch 32": torch.randn(32, 64, dtype=torch.float16),
}
runs = {}

# %%
# The first signature
# -------------------
# The on-disk compile cache of inductor (if the backend has one) can make a
# first call cheaper in later processes; the script records what it found.

with v.check("the first call compiles a graph") as check:
    check.equal(graphs(), 0, "graphs before the first call")
    x = signatures["float32, batch 32"].to(v.device)
    runs["float32, batch 32"] = timed_calls(x, 1 + REPEATS)
    times, counts = runs["float32, batch 32"]
    check.equal(counts[0], 1, "graphs after the first call")
    caches = {k: n for k, n in counters["inductor"].items() if "cache" in k}
    if caches:
        check.note(f"inductor's on-disk cache after the first call: {caches}")

with v.check("the first call takes markedly longer than repeat calls") as check:
    first = check.measure("first call", times[0], unit="s")
    repeat = check.measure("median repeat call", statistics.median(times[1:]), unit="s")
    ratio = check.measure("first / median repeat", times[0] / repeat, tolerance=f">= {MIN_RATIO:g}")
    check.expect(ratio >= MIN_RATIO, f"first call {first:.3g}s is only {ratio:.3g}x the repeat calls ({repeat:.3g}s)")

with v.check("repeating the call adds no compiled graph") as check:
    check.equal(counts[-1] - counts[0], 0, f"graphs added by {REPEATS} repeat calls")

# %%
# A new input signature compiles again
# ------------------------------------
# A different batch size and a different dtype are new signatures. (With the
# default ``dynamic=None`` the new batch size gets a graph with a symbolic
# batch dimension, which then serves further sizes; see
# :ref:`sphx_glr_docs_auto_gallery_recompile_dynamic_shapes.py`.)

with v.check("each new input signature compiles on its first call, once") as check:
    for name in ("float32, batch 48", "float16, batch 32"):
        model.to(signatures[name].dtype)
        before = graphs()
        runs[name] = timed_calls(signatures[name].to(v.device), 1 + REPEATS)
        times_new, counts_new = runs[name]
        check.equal(counts_new[0] - before, 1, f"{name}: graphs added by the first call")
        check.equal(counts_new[-1] - counts_new[0], 0, f"{name}: graphs added by {REPEATS} repeat calls")
        ratio = check.measure(
            f"{name}: first / median repeat",
            times_new[0] / statistics.median(times_new[1:]),
            tolerance=f">= {MIN_RATIO:g}",
        )
        check.expect(ratio >= MIN_RATIO, f"{name}: first call only {ratio:.3g}x the repeat calls")

# %%
# The timeline
# ------------
# Call times on a log scale, one colour per signature: the first call of each
# signature stands out.

fig, ax = plt.subplots(figsize=(7, 3))
offset = 0
for name, (times_run, _) in runs.items():
    ax.plot(range(offset, offset + len(times_run)), [t * 1e3 for t in times_run], "o-", label=name)
    offset += len(times_run)
ax.set_yscale("log")
ax.xaxis.set_major_locator(MaxNLocator(integer=True))
ax.set_xlabel("call number")
ax.set_ylabel("wall time (ms)")
ax.set_title(f"torch.compile(backend={v.backend.compile_backend!r}) on {v.device.type}")
ax.legend(fontsize=7)
fig.tight_layout()

v.finish()
