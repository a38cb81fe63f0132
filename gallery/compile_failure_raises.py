"""
A failed graph compilation raises instead of silently running eagerly
=====================================================================

:claim-verdict:`compile-failure-raises`

The claim: when the compiler backend fails on a graph, ``torch.compile``
raises the error by default instead of quietly running the function eagerly.
In PyTorch this is ``torch._dynamo.config.suppress_errors``, False unless the
environment variable ``TORCHDYNAMO_SUPPRESS_ERRORS`` is set; in TorchNeuron it
is ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION``, documented to default to 1.

We read the PyTorch default, make a deliberately broken compiler backend fail
and see what the call does (and, as a control, what it does with
``suppress_errors=True``). Then we make the configured backend's own compiler
fail on a graph, by handing it a graph containing an operation that refuses
to be traced, and look for the same behaviour.
"""

import importlib.util
import logging
import os

import torch

from torchclaims.verify import verification

NEURON_PACKAGE = "torch_neuronx"
NEURON_VARIABLE = "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"

v = verification(
    "compile-failure-raises",
    model="f(x) = fragile(sin(x)) * 2 with x of 8 float32 values; fragile is x + 1 when run, and raises while a "
    "backend compiles it",
    inputs="one call on the configured device",
    method="exception type and message of the compiled call; result compared with eager when it returns",
)

x = torch.randn(8).to(v.device)

# %%
# PyTorch's default
# -----------------
# ``suppress_errors`` is read from the environment when ``torch._dynamo`` is
# imported: any non-empty value of ``TORCHDYNAMO_SUPPRESS_ERRORS`` turns it on.

with v.check("torch._dynamo.config.suppress_errors is False by default") as check:
    variable = os.environ.get("TORCHDYNAMO_SUPPRESS_ERRORS")
    if variable:
        check.unsupported(f"TORCHDYNAMO_SUPPRESS_ERRORS={variable!r} is set here, so the default cannot be observed")
    check.equal(torch._dynamo.config.suppress_errors, False, "torch._dynamo.config.suppress_errors")

# %%
# A compiler backend that always fails
# ------------------------------------
# A backend is any callable that takes the captured graph and example inputs.
# This one raises, standing in for a compiler that cannot handle a graph.


def f(x):
    return torch.sin(x) * 2


def broken_backend(graph_module, example_inputs):
    raise RuntimeError("this compiler cannot handle the graph")


def call(fn, *args):
    """Run fn; return (result, None) or (None, exception)."""
    try:
        result = fn(*args)
        v.sync()
        return result, None
    except Exception as exc:
        return None, exc


with v.check("a failing compiler backend makes the compiled call raise") as check:
    torch._dynamo.reset()
    result, exc = call(torch.compile(f, backend=broken_backend), x)
    check.expect(exc is not None, "the call returned a result: the function ran eagerly without an error")
    if exc is not None:
        check.measure("exception", type(exc).__name__)
        check.expect(
            "this compiler cannot handle the graph" in str(exc), f"the backend's message is not in the error: {exc}"
        )

# %%
# The control shows what the claim rules out: with errors suppressed, the call
# returns the eager result, and the only trace of the failure is a log record.


class CountWarnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        self.count += 1


def loggers_to_watch():
    """The root logger and every logger that does not pass its records up to it (torch's do not)."""
    named = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict)]
    return [logging.getLogger()] + [lg for lg in named if isinstance(lg, logging.Logger) and not lg.propagate]


with v.check("with suppress_errors=True the same failure falls back to eager without raising (control)") as check:
    torch._dynamo.reset()
    handler, watched = CountWarnings(), loggers_to_watch()
    for logger in watched:
        logger.addHandler(handler)
    try:
        with torch._dynamo.config.patch(suppress_errors=True):
            result, exc = call(torch.compile(f, backend=broken_backend), x)
    finally:
        for logger in watched:
            logger.removeHandler(handler)
    check.expect(exc is None, f"the call still raised: {type(exc).__name__}: {exc}")
    if exc is None:
        check.equal(result, f(x), "result vs eager, bit for bit")
    check.measure("WARNING log records during the call", handler.count)

# %%
# The configured backend failing on a graph
# -----------------------------------------
# ``fragile`` is put into the graph as a single opaque call
# (``allow_in_graph``). While the real backend compiles the graph it raises;
# at any other time it computes ``x + 1``. So a backend that catches its own
# failure and runs the graph eagerly would return a correct result instead of
# an error, which is exactly the behaviour the claim rules out.

injecting = {"on": False, "calls": 0}
real_failure = None


@torch.compiler.allow_in_graph
def fragile(x):
    if injecting["on"]:
        injecting["calls"] += 1
        raise RuntimeError("fragile cannot be compiled")
    return x + 1


def g(x):
    return fragile(torch.sin(x)) * 2


def failing(real_backend):
    """The configured backend, with fragile raising while it compiles."""

    def backend(graph_module, example_inputs):
        injecting["on"] = True
        try:
            return real_backend(graph_module, example_inputs)
        finally:
            injecting["on"] = False

    return backend


with v.check(f"when {v.backend.compile_backend!r} fails on a graph, the compiled call raises") as check:
    failing_real_backend = failing(torch._dynamo.lookup_backend(v.backend.compile_backend))
    torch._dynamo.reset()
    result, exc = call(torch.compile(g, backend=failing_real_backend), x)
    real_failure = exc
    check.measure("fragile calls while the backend compiled", injecting["calls"], tolerance=">= 1")
    if injecting["calls"] == 0:
        check.unsupported(
            f"{v.backend.compile_backend!r} never ran the graph while compiling it, so no failure could be injected"
        )
    check.expect(exc is not None, "the call returned a result: the backend fell back to running the graph eagerly")
    if exc is not None:
        check.measure("exception", type(exc).__name__)
        check.expect("fragile cannot be compiled" in str(exc), f"the backend's message is not in the error: {exc}")
    else:
        check.note(f"result equals eager: {torch.equal(result.cpu(), g(x).cpu())}")

# %%
# TorchNeuron's variable
# ----------------------
# Its default can only be seen where torch-neuronx is installed and Neuron is
# the configured backend: there, the previous check ran with the variable at
# its default. It tells only if that check injected a failure.

with v.check(f"TorchNeuron's {NEURON_VARIABLE} defaults to raising") as check:
    if importlib.util.find_spec(NEURON_PACKAGE) is None:
        check.unsupported(f"needs TorchNeuron on Trainium: {NEURON_PACKAGE} is not installed here")
    if v.backend.compile_backend != "neuron":
        check.unsupported(f"{NEURON_PACKAGE} is installed but the configured backend is {v.backend.name}")
    value = os.environ.get(NEURON_VARIABLE)
    if value is not None:
        check.unsupported(f"{NEURON_VARIABLE}={value!r} is set here, so the default cannot be observed")
    if injecting["calls"] == 0:
        check.unsupported(
            f"the previous check could not make {v.backend.compile_backend!r} fail (it never ran the graph while "
            "compiling), "
            "so what the default does with a failure was not seen"
        )
    check.measure(NEURON_VARIABLE, "unset (default)")
    check.expect(real_failure is not None, "with the variable at its default, a failing neuron graph ran eagerly")

v.finish()
