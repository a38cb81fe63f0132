"""
torch_xla compiles a new graph for every new input shape
========================================================

:claim-verdict:`xla-static-shapes-recompile`

The claim: torch_xla traces a step into a lazy graph and XLA compiles it for
the exact input shapes, so running the same step on 5 distinct sequence
lengths adds 5 samples to the ``CompileTime`` metric, while padding the inputs
to one length (one "bucket") adds 1.

We run one small training step (embedding-free MLP over a sequence, masked
mean-squared loss, backward) on five sequence lengths, once as they are and
once padded with zeros to a bucket of 16, and read
``torch_xla.debug.metrics`` after every step. The in-process compilation cache
outlives ``clear_all()``, so the two experiments use disjoint shapes (lengths
5 to 13, bucket 16) that nothing else in the process has compiled. Other
backends report unverified: the metrics are torch_xla's.
"""

import matplotlib.pyplot as plt
import torch

from torchclaims.verify import verification

LENGTHS = [5, 7, 9, 11, 13]  # 5 distinct sequence lengths
BUCKET = 16  # every length padded to this one
FEATURES = 8

v = verification(
    "xla-static-shapes-recompile",
    model=f"Linear({FEATURES}, 16) - tanh - Linear(16, 1) applied per position, float32, seed 0",
    inputs=f"batches of 4 sequences of lengths {LENGTHS}; then the same padded with zeros to {BUCKET}",
    method="one forward + masked MSE + backward per length, torch_xla.sync() per step; "
    "samples of the CompileTime metric (torch_xla.debug.metrics) after each step",
)

ON_XLA = v.backend.name == "xla"
if ON_XLA:
    # Only when torch_xla is the configured backend: elsewhere it may not be installed.
    import torch_xla.debug.metrics as met

NOT_XLA = (
    f"torch_xla is not the configured backend (backend is {v.backend.name}); the claim is about torch_xla's "
    "graph compilation and its metrics"
)

# %%
# The step
# --------
# Written once, with no shape-specific code. The loss averages over the real
# positions only (``mask``), so padding changes the shapes but not the loss.

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).to(v.device)


def step(x, y, mask):
    model.zero_grad(set_to_none=True)
    out = model(x).squeeze(-1)
    loss = (((out - y) ** 2) * mask).sum() / mask.sum()
    loss.backward()
    return loss


def batch(length, pad_to=None):
    g = torch.Generator().manual_seed(length)  # CPU generator: the same data on every backend
    x, y = torch.randn(4, length, FEATURES, generator=g), torch.randn(4, length, generator=g)
    mask = torch.ones(4, length)
    if pad_to is not None:
        extra = pad_to - length
        x = torch.nn.functional.pad(x, (0, 0, 0, extra))
        y, mask = torch.nn.functional.pad(y, (0, extra)), torch.nn.functional.pad(mask, (0, extra))
    return x.to(v.device), y.to(v.device), mask.to(v.device)


def compilations():
    data = met.metric_data("CompileTime")  # None before the first sample, else (samples, accumulator, ...)
    return 0 if data is None else data[0]


def experiment(pad_to):
    """Cumulative CompileTime samples after each step, and the losses."""
    v.sync()  # execute anything pending (the weights' transfer) before counting
    met.clear_all()
    counts, losses = [], []
    for length in LENGTHS:
        loss = step(*batch(length, pad_to))
        v.sync()
        losses.append(loss.detach().cpu())
        counts.append(compilations())
    counters = {name: met.counter_value(name) or 0 for name in ("UncachedCompile", "CachedCompile")}
    return counts, torch.stack(losses), counters


# %%
# Five lengths as they are
# ------------------------

unpadded = padded = unpadded_losses = None
with v.check("5 distinct sequence lengths add 5 samples to CompileTime") as check:
    if not ON_XLA:
        check.unsupported(NOT_XLA)
    counts, unpadded_losses, counters = experiment(pad_to=None)
    unpadded = counts
    check.measure("CompileTime samples after each step", str(counts))
    for name, value in counters.items():
        check.measure(f"counter {name}", value)
    check.equal(counts[-1], len(LENGTHS), "CompileTime samples after 5 lengths")

# %%
# The same lengths padded to one bucket
# -------------------------------------

with v.check(f"the same 5 lengths padded to {BUCKET} add 1 sample to CompileTime") as check:
    if not ON_XLA:
        check.unsupported(NOT_XLA)
    counts, padded_losses, counters = experiment(pad_to=BUCKET)
    padded = counts
    check.measure("CompileTime samples after each step", str(counts))
    for name, value in counters.items():
        check.measure(f"counter {name}", value)
    # Not part of the claim; shows the bucketing did not change what was computed.
    if unpadded_losses is not None:
        check.measure(
            "max abs difference of the masked loss, padded vs unpadded",
            (padded_losses - unpadded_losses).abs().max().item(),
        )
    check.equal(counts[-1], 1, "CompileTime samples after 5 padded lengths")

# %%
# Compilations against distinct shapes
# ------------------------------------
# Each new length costs a compilation (on a TPU, seconds to minutes for a real
# model); a bucket costs one, after which every step reuses the cached binary.

if unpadded and padded:
    fig, ax = plt.subplots(figsize=(6, 3))
    seen = range(1, len(LENGTHS) + 1)
    ax.plot(seen, unpadded, "o-", label="unpadded (lengths as they come)")
    ax.plot(seen, padded, "s-", label=f"padded to {BUCKET}")
    ax.set_xlabel("distinct sequence lengths seen")
    ax.set_ylabel("CompileTime samples")
    ax.set_xticks(list(seen))
    ax.set_title(f"torch_xla on {v.device} ({v.backend.name})")
    ax.legend()
    fig.tight_layout()

v.finish()
