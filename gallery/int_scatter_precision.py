"""
Integer scatter-add is exact or fails loudly
============================================

:claim-verdict:`int-scatter-precision`

The claim: ``scatter_add_`` and ``index_add_`` on int64 tensors with values
above 2**24 either give the exact integer result on the configured backend or
raise; they never return values silently rounded through float32 (the Neuron
compiler documents converting integer scatter operands to f32).

We accumulate values between 2**24 + 1 and 2**62 + 11 on the configured device
and compare the result bit for bit with sums computed with Python integers. The
same data pushed through float32 shows what silent rounding would look like.
"""

import matplotlib.pyplot as plt
import torch

from torchclaims.verify import verification

v = verification(
    "int-scatter-precision",
    inputs="8 int64 values from 2**24+1 to 2**62+11 accumulated into 4 slots",
    method="exact comparison with Python-integer sums; an exception counts as a loud failure",
)

# %%
# The data and the exact answer
# -----------------------------

index = torch.tensor([0, 1, 0, 1, 2, 2, 3, 0])
values = torch.tensor([2**24 + 1, 2**31 + 3, 2**40 + 7, 5, 2**53 + 1, 1, 2**62 + 11, 1], dtype=torch.int64)
exact = [0] * 4
for i, value in zip(index.tolist(), values.tolist()):
    exact[i] += value
exact = torch.tensor(exact, dtype=torch.int64)

# What a float32 detour would return: the failure mode the claim rules out.
through_float32 = torch.zeros(4).scatter_add_(0, index, values.float()).to(torch.int64)
changed = (through_float32 != exact).sum().item()
print("exact:          ", exact.tolist())
print("through float32:", through_float32.tolist())


def run_on_device(operation):
    """The result on the device (as CPU tensor), or the exception it raised."""
    try:
        target = torch.zeros(4, dtype=torch.int64, device=v.device)
        if operation == "scatter_add_":
            target.scatter_add_(0, index.to(v.device), values.to(v.device))
        else:
            target.index_add_(0, index.to(v.device), values.to(v.device))
        v.sync()
        return target.cpu()
    except Exception as exc:  # a loud failure is allowed by the claim
        return exc


# %%
# On the configured device
# ------------------------

results = {}
for operation in ("scatter_add_", "index_add_"):
    with v.check(f"int64 {operation} is exact or raises") as check:
        check.measure("slots float32 would change (shows the data can tell)", changed, tolerance=">= 1")
        if changed == 0:
            check.unsupported("these values do not expose float32 rounding")
        result = results[operation] = run_on_device(operation)
        if isinstance(result, Exception):
            check.note(f"raised {type(result).__name__}: {str(result).splitlines()[0][:200]}")
        else:
            check.equal(result.dtype, torch.int64, f"{operation} result dtype")
            check.equal(result, exact, f"{operation} result against Python-integer sums")
            if torch.equal(result, through_float32):
                check.note("the result equals the float32-rounded values")

# %%
# How far a float32 detour lands
# ------------------------------
# Absolute error of each slot plus one, on a log scale: a bar of height 1 is
# exact.

fig, ax = plt.subplots(figsize=(6, 3))
slots = range(4)
ax.bar([s - 0.2 for s in slots], (through_float32 - exact).abs().double() + 1, width=0.4, label="through float32")
device_result = results["scatter_add_"]
if not isinstance(device_result, Exception):
    device_error = (device_result - exact).abs().double() + 1
    ax.bar([s + 0.2 for s in slots], device_error, width=0.4, label=f"{v.device.type} scatter_add_")
ax.set_yscale("log")
ax.set_xticks(list(slots))
ax.set_xlabel("slot")
ax.set_ylabel("|error| + 1")
ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
fig.tight_layout()

v.finish()
