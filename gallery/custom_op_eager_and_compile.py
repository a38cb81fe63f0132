"""
A registered custom op works in eager mode and as one node under torch.compile
==============================================================================

:claim-verdict:`custom-op-eager-and-compile`

The claim: a function registered with ``torch.library.custom_op`` and given a
fake kernel passes ``torch.library.opcheck``, runs in eager mode, and compiles
under ``torch.compile(fullgraph=True)`` as a single node without a graph break,
on a device type for which it has a kernel; on a device type without a kernel,
calling it raises.

We register ``torchclaims::scale`` (multiply by a float) with a kernel for the
configured device type only, plus a fake kernel and an autograd formula. We run
opcheck, call it eagerly (and check its gradient by hand, since opcheck tests
autograd registration on cpu, cuda and xpu only), and compile a small function
around it with the backend's compile backend, recording the captured graph.
Then we call a twin op whose only kernel is for a device type that is neither
the configured one nor the CPU (``cuda``, or ``cpu`` on a CUDA or ROCm GPU,
or ``meta`` on the CPU itself) on the configured device: a backend's CPU
fallback (torch_xla, TorchNeuron) cannot supply that kernel either. On an
accelerator, the op itself is also called on the CPU, where it has no kernel.
"""

import torch
from torch._dynamo.backends.registry import lookup_backend
from torch._dynamo.utils import counters

from torchclaims.verify import verification

v = verification(
    "custom-op-eager-and-compile",
    inputs="float32 vector of 64, seed 0; op computes x * factor",
    method="opcheck; eager and compiled results against plain PyTorch on the CPU (rtol 1e-5, atol 1e-6); "
    "graphs and op nodes counted in the graph handed to the compile backend",
)

# %%
# The op, with a kernel for the configured device type only
# ---------------------------------------------------------


@torch.library.custom_op("torchclaims::scale", mutates_args=(), device_types=v.device.type)
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    return x * factor


@scale.register_fake
def _(x, factor):
    return torch.empty_like(x)


def _backward(ctx, grad):
    return grad * ctx.factor, None


def _setup_context(ctx, inputs, output):
    ctx.factor = inputs[1]


scale.register_autograd(_backward, setup_context=_setup_context)

torch.manual_seed(0)
x = torch.randn(64)
x_device = x.to(v.device)

# %%
# opcheck and eager mode
# ----------------------
# opcheck tests the schema, the fake kernel, the autograd registration and
# tracing with dynamic shapes on real inputs of the configured device.

# Every test runs (``raise_exception=False``). opcheck has not implemented its
# autograd registration test for device types other than cpu, cuda and xpu; on
# those only, that test's NYI is named in the record, unjudged, and the gradient
# is checked by hand in the next check instead. Anywhere else a test that did
# not succeed fails the check.

AUTOGRAD_TEST, AUTOGRAD_TESTED_ON = "test_autograd_registration", ("cpu", "cuda", "xpu")  # opcheck's own scope

with v.check("torch.library.opcheck passes on the configured device") as check:
    try:
        report = torch.library.opcheck(scale, (x_device.clone().requires_grad_(), 2.5), raise_exception=False)
    except Exception as exc:  # OpCheckError: the evidence this check is about
        report = {"opcheck": exc}
    for test, outcome in report.items():
        cause = getattr(outcome, "__cause__", None) or outcome
        text = outcome if isinstance(outcome, str) else f"{type(cause).__name__}: {str(cause).splitlines()[0][:300]}"
        not_run_here = (
            test == AUTOGRAD_TEST
            and v.device.type not in AUTOGRAD_TESTED_ON
            and isinstance(cause, NotImplementedError)
            and "NYI" in str(cause)
        )
        if not_run_here:
            check.measure(f"{test} (not run by opcheck on {v.device.type})", text)
            check.note(f"not run by opcheck for this device type (the gradient is checked by hand below): {text}")
            continue
        check.measure(test, text, tolerance="SUCCESS")
        check.expect(outcome == "SUCCESS", f"{test}: {text}")

with v.check("the op runs eagerly on the configured device and matches the CPU") as check:
    out = scale(x_device, 2.5)
    v.sync()
    check.equal(out.device.type, v.device.type, "device type of the output")
    check.close(out, x * 2.5, rtol=1e-5, atol=1e-6, what="scale(x, 2.5)")
    leaf = x_device.clone().requires_grad_()
    scale(leaf, 2.5).sum().backward()
    v.sync()
    check.close(leaf.grad, torch.full_like(x, 2.5), rtol=1e-6, atol=1e-6, what="gradient of scale(x, 2.5).sum()")

# %%
# torch.compile with fullgraph=True
# ---------------------------------
# A thin recording backend keeps the graph Dynamo captured and hands it to the
# configured backend's own compiler.

graphs = []


def recording_backend(gm, example_inputs):
    graphs.append(gm)
    return lookup_backend(v.backend.compile_backend)(gm, example_inputs)


def fn(t):
    return scale(t.sin(), 3.0) + 1


def is_scale(node):
    targets = (torch.ops.torchclaims.scale, torch.ops.torchclaims.scale.default)
    return node.op == "call_function" and node.target in targets


with v.check("torch.compile(fullgraph=True) compiles it as one node with no graph break, matching the CPU") as check:
    check.measure("compile backend", v.backend.compile_backend)
    torch._dynamo.reset()
    counters.clear()
    try:
        compiled = torch.compile(fn, fullgraph=True, backend=recording_backend)(x_device)
        v.sync()
    except Exception as exc:  # a graph break raises under fullgraph=True
        compiled = None
        first_line = str(exc).splitlines()[0][:300]
        check.expect(False, f"torch.compile(fullgraph=True) raised {type(exc).__name__}: {first_line}")
    check.equal(len(graphs), 1, "graphs captured")
    check.equal(sum(counters["graph_break"].values()), 0, "graph breaks")
    check.equal(sum(is_scale(n) for g in graphs for n in g.graph.nodes), 1, "torchclaims::scale nodes in the graph")
    if graphs:
        ops = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
        check.note("captured ops: " + ", ".join(ops))
    if compiled is not None:
        check.close(compiled, x.sin() * 3.0 + 1, rtol=1e-5, atol=1e-6, what="compiled fn")

# %%
# A device type without a kernel
# ------------------------------
# The twin op has a kernel for one device type that is neither the configured
# one nor the CPU, so no backend's CPU fallback can run it: ``cuda`` (``cpu``
# on a CUDA or ROCm GPU, which has no fallback), or ``meta`` on the CPU itself
# (torch 2.9 rejects a ``meta`` kernel for a custom op; that only matters on
# the CPU). On an accelerator, the op itself is also called on the CPU, where
# it has none either.

OTHER = "meta" if v.on_reference else "cpu" if v.device.type == "cuda" else "cuda"


def define_other_only():
    """The twin op; torch 2.9 refuses it on the CPU (its ``meta`` kernel clashes with the fake one)."""

    @torch.library.custom_op("torchclaims::scale_other_only", mutates_args=(), device_types=OTHER)
    def scale_other_only(x: torch.Tensor, factor: float) -> torch.Tensor:
        return x * factor

    @scale_other_only.register_fake
    def _(x, factor):
        return torch.empty_like(x)

    return scale_other_only


def raised(call):
    try:
        call()
        v.sync()
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"


with v.check("calling the op on a device type without a kernel raises") as check:
    try:
        scale_other_only = define_other_only()
    except RuntimeError as exc:
        first_line = str(exc).splitlines()[0][:200]
        check.unsupported(f"torch {torch.__version__} refuses an op whose only kernel is for {OTHER}: {first_line}")
    outcome = raised(lambda: scale_other_only(x_device, 2.5))
    check.measure(f"{OTHER}-only op on {v.device.type}", outcome or "returned a result", tolerance="raises")
    check.expect(outcome is not None, f"an op with no {v.device.type} kernel ran on {v.device.type}")
    if not v.on_reference:
        outcome = raised(lambda: scale(x, 2.5))
        check.measure(f"{v.device.type}-only op on the CPU", outcome or "returned a result", tolerance="raises")
        check.expect(outcome is not None, f"an op with only a {v.device.type} kernel ran on the CPU")

v.finish()
