"""
Each backend has a named torch.compile backend; Neuron ignores CUDA-oriented modes
==================================================================================

:claim-verdict:`compile-backend-and-modes`

The claim: ``torch.compile`` is pointed at a backend by name (``inductor`` for
CPU, CUDA and ROCm, ``openxla`` for torch_xla, ``neuron`` for TorchNeuron,
``tpu`` for TorchTPU). Compiling with ``mode="max-autotune-no-cudagraphs"``
runs and matches eager results on every backend; TorchNeuron logs a warning
and uses its default mode instead.

We look up the name the statement gives for the configured backend, check that
Dynamo knows it, compile a small function with that backend and the mode while
capturing Python warnings and log records, and compare the result with eager
execution on the same device. The Neuron warning can only be checked where
TorchNeuron runs.
"""

import logging
import warnings

import torch
from torch._dynamo.utils import counters

from torchclaims.verify import verification

MODE = "max-autotune-no-cudagraphs"
RTOL, ATOL = 1e-4, 1e-5
# The statement's table: configured backend -> torch.compile backend name (data under test). The
# checks compile with the name the statement gives, not with the project's descriptor.
STATEMENT_NAMES = {
    "cpu": "inductor",
    "cuda": "inductor",
    "rocm": "inductor",
    "xla": "openxla",
    "neuron": "neuron",
    "tpu": "tpu",
}
WARNS_ABOUT_MODE = "neuron"  # the backend whose documentation says it warns and ignores the mode

v = verification(
    "compile-backend-and-modes",
    model="f(x, w) = relu(x @ w) + 1 with x, w 64x64 float32, seed 0",
    inputs="one call",
    method=f"torch._dynamo.list_backends(); torch.compile(mode={MODE!r}); warnings and WARNING log records captured; "
    f"compiled vs eager rtol {RTOL:g}, atol {ATOL:g}",
)

# %%
# The backend's name
# ------------------
# ``list_backends()`` hides backends tagged as debugging or experimental, so we
# also ask with ``exclude_tags=()``. A name in the list shows registration
# only (``openxla`` is listed even without torch_xla installed); the next check
# compiles and runs.

name = STATEMENT_NAMES.get(v.backend.name)
print("list_backends():", torch._dynamo.list_backends())

with v.check("the statement's compile backend for this device is registered by that name") as check:
    if name is None:
        check.unsupported(f"the statement names no torch.compile backend for {v.backend.name}")
    registered = name in torch._dynamo.list_backends(exclude_tags=())
    check.measure(f"{name!r} in list_backends()", name in torch._dynamo.list_backends())
    check.measure(f"{name!r} in list_backends(exclude_tags=())", registered, tolerance="True")
    check.expect(registered, f"{name!r} is not in torch._dynamo.list_backends(exclude_tags=())")

# %%
# Compile with the CUDA-oriented mode
# -----------------------------------
# Warnings are recorded with every filter set to "always"; log records at
# WARNING and above are collected from the root logger and from every logger
# that does not propagate to it (``torch`` and ``torch._dynamo`` do not). Deprecation warnings
# raised while torch imports its own modules are not about the mode and are
# left out.


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(f"{record.name}: {record.getMessage()}")


def f(x, w):
    return torch.relu(x @ w) + 1


torch.manual_seed(0)
x, w = torch.randn(64, 64).to(v.device), torch.randn(64, 64).to(v.device)
eager = f(x, w)
v.sync()
messages, out = [], None

with v.check(f"mode={MODE!r} compiles, runs on the device and matches eager") as check:
    if name is None:
        check.unsupported(f"the statement names no torch.compile backend for {v.backend.name}")
    torch._dynamo.reset()
    counters.clear()
    handler = Collect()
    named = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict)]
    loggers = [logging.getLogger()] + [lg for lg in named if isinstance(lg, logging.Logger) and not lg.propagate]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = torch.compile(f, backend=name, mode=MODE)(x, w)
            v.sync()
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    messages = [f"{c.category.__name__}: {c.message}" for c in caught if not issubclass(c.category, DeprecationWarning)]
    messages += handler.records
    check.measure("graphs compiled", counters["stats"]["unique_graphs"], tolerance=">= 1")
    check.expect(counters["stats"]["unique_graphs"] >= 1, "nothing was compiled")
    check.equal(out.device.type, v.device.type, "device type of the output")
    check.close(out, eager, rtol=RTOL, atol=ATOL, what="compiled vs eager")
    check.measure("warnings and WARNING log records while compiling", len(messages))
    for message in messages[:5]:
        check.note(message[:300])

print(f"{len(messages)} warning(s) or log record(s) while compiling with mode={MODE!r}:")
for message in messages:
    print("  ", message[:300])

# %%
# TorchNeuron's warning
# ---------------------
# The documented behaviour: a warning naming the mode, and compilation in the
# default mode. If the mode is ignored, the result is also bit-identical to a
# compile without it.

with v.check("TorchNeuron logs a warning about the mode and uses its default mode") as check:
    if v.backend.name != WARNS_ABOUT_MODE:
        check.unsupported(
            f"needs TorchNeuron on Trainium; here backend {name!r} on {v.backend.name} "
            f"gave {len(messages)} warning(s) or log record(s) while compiling with the mode"
        )
    if out is None:
        raise RuntimeError(f"compiling with mode={MODE!r} failed (see the previous check)")
    about_mode = [m for m in messages if "mode" in m.lower() or "autotune" in m.lower()]
    check.measure("warnings mentioning the mode", len(about_mode), tolerance=">= 1")
    check.expect(bool(about_mode), f"no warning mentions the mode (saw {len(messages)} other message(s))")
    torch._dynamo.reset()
    default = torch.compile(f, backend=name)(x, w)
    v.sync()
    check.equal(out, default, f"mode={MODE!r} vs default mode")

v.finish()
