"""
TorchNeuron runs PyTorch code eagerly, without torch.compile or graph steps
===========================================================================

:claim-verdict:`torchneuron-eager-mode`

The claim: TorchNeuron runs PyTorch code in eager mode. Without
``torch.compile`` and without a graph step or sync call between operations,
each operation on a ``neuron`` tensor runs when it is called, so a loop whose
Python control flow depends on values computed on the device runs unchanged,
takes the same path as on the CPU and ends at the same values, within float32
tolerance.

The loop is Newton's method for square roots, which reads its residual back
after every step (``.item()``) to decide whether to go on. We run it on the
configured device and on the CPU and compare the number of steps, the
residual after each step and the result. Only a TorchNeuron run checks the
claim; on other backends the script reports unverified (the claim is about
TorchNeuron, and torch_xla, for one, runs such a loop lazily).
"""

import torch
from torch._dynamo.utils import counters

from torchclaims.verify import verification

TOLERANCE = 1e-4  # relative residual at which the loop stops
MAX_STEPS = 50
RTOL, ATOL = 1e-4, 1e-5
NEURON = "neuron"  # the device type the claim is about (data under test)

v = verification(
    "torchneuron-eager-mode",
    model="Newton's method for the square roots of 64 float32 values in [1, 100], seed 0",
    inputs=f"stop when max |x^2 - a| / max a < {TOLERANCE:g} (read with .item() after every step), at most {MAX_STEPS} steps",
    method=f"number of steps and residuals compared with the CPU; result element-wise, rtol {RTOL:g}, atol {ATOL:g}",
)

# %%
# A loop that decides on the host after every step
# ------------------------------------------------
# Nothing in it names a device, compiles or synchronises: it is plain eager
# PyTorch.


def newton_sqrt(a):
    x, residuals = a.clone(), []
    while len(residuals) <= MAX_STEPS:
        residuals.append(((x * x - a).abs().max() / a.max()).item())
        if residuals[-1] < TOLERANCE:
            break
        x = 0.5 * (x + a / x)
    return x, residuals


a = torch.rand(64, generator=torch.Generator().manual_seed(0)) * 99 + 1
reference, reference_residuals = newton_sqrt(a)
print(f"CPU: {len(reference_residuals)} residual reads, last {reference_residuals[-1]:.3g}")

counters.clear()
result, residuals = newton_sqrt(a.to(v.device))
print(f"{v.device.type}: {len(residuals)} residual reads, last {residuals[-1]:.3g}")


def torchneuron(check):
    check.measure("graphs compiled by Dynamo during the loop", counters["stats"]["unique_graphs"])
    if v.device.type != NEURON:
        check.unsupported(f"the configured backend is {v.backend.name}; the claim is about TorchNeuron's eager mode")


# %%
# Same path, same values
# ----------------------

with v.check("the loop runs on the neuron device with no compile or sync call") as check:
    torchneuron(check)
    check.equal(result.device.type, NEURON, "device type of the loop's result")

with v.check("it takes the same steps as on the CPU and ends at the same values") as check:
    torchneuron(check)
    check.equal(len(residuals), len(reference_residuals), "residual reads (steps + 1)")
    check.close(torch.tensor(residuals), torch.tensor(reference_residuals), rtol=1e-2, atol=1e-6, what="residual after each step")
    check.close(result, reference, rtol=RTOL, atol=ATOL, what="square roots")

v.finish()
