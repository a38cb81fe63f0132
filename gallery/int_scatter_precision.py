"""
Integer scatter-add above 2**24: exact or loud, except that Neuron's compiler goes through f32
==============================================================================================

:claim-verdict:`int-scatter-precision`

AWS's page for the Neuron compiler's error EVRF060 says that scatter "does
not support N-bit integer operands on this target; they are converted to f32,
which loses precision for values larger than 2^24". So with the Neuron
compiler an int64 ``scatter_add_`` or ``index_add_`` of such values is not
exact: it comes back rounded through float32, or the compiler stops with
EVRF060. Eagerly, and compiled with any other backend's compiler, the two
operations give the exact integer result or raise; they do not return values
silently rounded through float32.

We accumulate values between 2**24 + 1 and 2**62 + 11 on the configured device
and compare the result bit for bit with sums computed with Python integers.
The same data pushed through float32 shows what silent rounding would look
like. Each operation runs eagerly and as a function compiled with
``fullgraph=True`` (one graph, or an error), so the compiler sees the integer
scatter itself.
"""

import matplotlib.pyplot as plt
import torch
from torch._dynamo.utils import counters

from torchclaims.verify import verification

v = verification(
    "int-scatter-precision",
    inputs="8 int64 values from 2**24+1 to 2**62+11 accumulated into 4 slots",
    method="eager and torch.compile(backend=<the backend's compiler>, fullgraph=True); exact comparison with "
    "Python-integer sums; an exception counts as a loud failure",
)

NEURON = "neuron"  # the compiler the EVRF060 rejection is documented for (data under test)
ERROR_CODE = "EVRF060"

# %%
# The data and the exact answer
# -----------------------------

index = torch.tensor([0, 1, 0, 1, 2, 2, 3, 0])
values = torch.tensor([2**24 + 1, 2**31 + 3, 2**40 + 7, 5, 2**53 + 1, 1, 2**62 + 11, 1], dtype=torch.int64)
exact = [0] * 4
for i, value in zip(index.tolist(), values.tolist(), strict=True):
    exact[i] += value
exact = torch.tensor(exact, dtype=torch.int64)

# What a float32 detour would return: the failure mode the claim rules out.
through_float32 = torch.zeros(4).scatter_add_(0, index, values.float()).to(torch.int64)
changed = (through_float32 != exact).sum().item()
print("exact:          ", exact.tolist())
print("through float32:", through_float32.tolist())

# %%
# The two operations, eager and compiled
# --------------------------------------
# Each returns a fresh int64 tensor of 4 slots; the compiled variant is the
# same function handed to ``torch.compile``.


def scatter_add(index, values):
    return torch.zeros(4, dtype=torch.int64, device=values.device).scatter_add_(0, index, values)


def index_add(index, values):
    return torch.zeros(4, dtype=torch.int64, device=values.device).index_add_(0, index, values)


OPERATIONS = {"scatter_add_": scatter_add, "index_add_": index_add}


def run_on_device(function, compiled):
    """The result on the device (as a CPU tensor), or the exception it raised; and the graphs compiled."""
    torch._dynamo.reset()
    counters.clear()
    try:
        if compiled:
            function = torch.compile(function, backend=v.backend.compile_backend, fullgraph=True)
        result = function(index.to(v.device), values.to(v.device))
        v.sync()
        return result.cpu(), counters["stats"]["unique_graphs"]
    except Exception as exc:  # a loud failure is allowed by the claim
        return exc, counters["stats"]["unique_graphs"]


results = {}
NEURON_COMPILER = v.backend.compile_backend == NEURON  # its compiled result is judged against AWS's words below
for operation, function in OPERATIONS.items():
    for compiled in (False, True):
        if compiled and NEURON_COMPILER:
            results[operation, compiled] = run_on_device(function, compiled)
            continue
        mode = f"compiled with {v.backend.compile_backend!r}" if compiled else "eager"
        with v.check(f"int64 {operation} is exact or raises ({mode})") as check:
            check.measure("slots float32 would change (shows the data can tell)", changed, tolerance=">= 1")
            if changed == 0:
                check.unsupported("these values do not expose float32 rounding")
            result, graphs = results[operation, compiled] = run_on_device(function, compiled)
            if compiled:
                check.measure("graphs compiled", graphs)
            raised = isinstance(result, Exception)
            if raised:  # a loud failure: what the claim allows instead of an exact result
                check.measure("outcome", f"raised {type(result).__name__}: {str(result).splitlines()[0][:200]}")
            else:
                if compiled:
                    check.expect(graphs >= 1, "nothing was compiled: the function ran eagerly")
                check.measure("result dtype", str(result.dtype), tolerance="torch.int64")
                check.measure("result", str(result.tolist()), tolerance=str(exact.tolist()))
                if torch.equal(result, through_float32):
                    check.note("the result equals the float32-rounded values")
            exact_or_raised = raised or (result.dtype == torch.int64 and torch.equal(result, exact))
            check.expect(
                exact_or_raised, f"{operation} returned {result.tolist()}, not the exact sums {exact.tolist()}"
            )

# %%
# The Neuron compiler goes through f32
# ------------------------------------
# AWS's EVRF060 page: the integer operands "are converted to f32, which loses
# precision". Either form of that agrees with it: a result equal to the
# float32-rounded sums, or a compile error naming EVRF060. An exact result does
# not. Only a run with the Neuron compiler can show it.

with v.check(f"the Neuron compiler's integer scatter-add is rounded through f32 or stops with {ERROR_CODE}") as check:
    if not NEURON_COMPILER:
        check.unsupported(
            f"needs torch.compile(backend='neuron') on Trainium; the compiler here is {v.backend.compile_backend!r}"
        )
    for operation in OPERATIONS:
        result, _ = results[operation, True]
        if isinstance(result, Exception):
            outcome = f"raised {type(result).__name__}: {str(result)[:300]}"
            check.expect(ERROR_CODE in outcome, f"{operation} raised an error that does not name {ERROR_CODE}")
        else:
            outcome = str(result.tolist())
            check.expect(
                torch.equal(result, through_float32), f"{operation} returned {outcome}, not the float32-rounded sums"
            )
        check.measure(
            f"{operation} compiled", outcome, tolerance=f"{through_float32.tolist()} or an error naming {ERROR_CODE}"
        )

# %%
# How far a float32 detour lands
# ------------------------------
# Absolute error of each slot plus one, on a log scale: a bar of height 1 is
# exact.

fig, ax = plt.subplots(figsize=(6, 3))
slots = range(4)
bars = {"through float32": through_float32}
for compiled in (False, True):
    result, _ = results["scatter_add_", compiled]
    if not isinstance(result, Exception):
        bars[f"{v.device.type} scatter_add_ ({'compiled' if compiled else 'eager'})"] = result
width = 0.8 / len(bars)
for i, (label, result) in enumerate(bars.items()):
    ax.bar(
        [s + (i - (len(bars) - 1) / 2) * width for s in slots],
        (result - exact).abs().double() + 1,
        width=width,
        label=label,
    )
ax.set_yscale("log")
ax.set_xticks(list(slots))
ax.set_xlabel("slot")
ax.set_ylabel("|error| + 1")
ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
fig.tight_layout()

v.finish()
