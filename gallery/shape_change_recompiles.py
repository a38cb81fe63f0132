"""
A shape-specialising backend compiles once per new input shape, not per shape change
====================================================================================

:claim-verdict:`shape-change-recompiles`

The claim: a backend that compiles per input shape compiles again when a step
meets an input shape it has not seen, and only then: going back to a shape
seen before reuses its compiled program. Running one step on sequence lengths
5, 7, 5, 9, 7, 5 (five changes of shape, three distinct shapes) compiles three
times: torch_xla adds three samples to its ``CompileTime`` metric, and
TorchNeuron adds three NEFFs (Neuron executables) to its compile cache.

We run the same small step on the six lengths and count compilations after
each one: on torch_xla with ``torch_xla.debug.metrics``, on TorchNeuron by
counting ``.neff`` files in its compile cache around a step compiled with
``torch.compile(backend="neuron")``. Other backends report unverified: eager
execution compiles nothing per shape.
"""

import itertools
import os
from pathlib import Path

import torch

from torchclaims.verify import verification

LENGTHS = [5, 7, 5, 9, 7, 5]  # five changes of shape, three distinct shapes
FEATURES = 8
NEURON_CACHE = "/var/tmp/neuron-compile-cache"  # TorchNeuron's default, unless NEURON_COMPILE_CACHE_URL says otherwise

v = verification(
    "shape-change-recompiles",
    model=f"Linear({FEATURES}, 16) - tanh - Linear(16, 1) per position, float32, seed 0, no gradients",
    inputs=f"batches of 4 sequences of lengths {LENGTHS}",
    method="compilations counted after each step: torch_xla CompileTime samples; TorchNeuron .neff files in the "
    "compile cache around torch.compile(backend='neuron')",
)

# %%
# The step and the two ways to count compilations
# -----------------------------------------------

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).to(v.device)


def step(x):
    return model(x).sum()


def batch(length):
    return torch.randn(4, length, FEATURES, generator=torch.Generator().manual_seed(length)).to(v.device)


if v.backend.name == "xla":
    import torch_xla.debug.metrics as met

    run = step

    def compilations():
        data = met.metric_data("CompileTime")  # None before the first sample, else (samples, ...)
        return 0 if data is None else data[0]

    v.sync()
    met.clear_all()
elif v.backend.compile_backend == "neuron":
    run = torch.compile(step, backend="neuron")
    cache = Path(os.environ.get("NEURON_COMPILE_CACHE_URL", NEURON_CACHE))
    existing = set(cache.rglob("*.neff")) if cache.is_dir() else set()

    def compilations():
        return len(set(cache.rglob("*.neff")) - existing) if cache.is_dir() else 0
else:
    run = compilations = None

counts, outputs = [], []  # outputs kept alive: a lazy backend executes only what is still referenced
if run is not None:
    with torch.no_grad():
        for length in LENGTHS:
            outputs.append(run(batch(length)))
            v.sync()
            counts.append(compilations())
print(f"lengths {LENGTHS}; compilations after each step: {counts}")


def shape_specialising(check):
    if run is None:
        check.unsupported(
            f"{v.backend.name} compiles nothing per input shape here; the claim is about torch_xla and TorchNeuron"
        )
    check.measure("compilations after each step", str(counts))
    if not counts[-1]:
        check.unsupported("no compilation was counted at all, so this run cannot tell when the backend compiles")


# %%
# New shapes and shapes seen before
# ---------------------------------

with v.check("each step on a length not seen before compiles once") as check:
    shape_specialising(check)
    seen, before = set(), 0
    for length, count in zip(LENGTHS, counts, strict=True):
        if length not in seen:
            check.equal(count - before, 1, f"compilations added by the first step of length {length}")
        seen.add(length)
        before = count

with v.check("a step on a length seen before compiles nothing") as check:
    shape_specialising(check)
    seen, before = set(), 0
    for position, (length, count) in enumerate(zip(LENGTHS, counts, strict=True)):
        if length in seen:
            check.equal(count - before, 0, f"compilations added by step {position + 1} (length {length} again)")
        seen.add(length)
        before = count
    check.measure("shape changes", sum(a != b for a, b in itertools.pairwise(LENGTHS)))
    check.measure("distinct shapes", len(set(LENGTHS)))

v.finish()
