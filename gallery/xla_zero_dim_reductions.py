"""
Reductions accept dim=0 on a 0-dimensional tensor
=================================================

:claim-verdict:`xla-zero-dim-reductions`

The claim: reductions and scans given ``dim=0`` (or ``dim=-1``) on a
0-dimensional tensor treat it as a one-element dimension and return the
CPU's result on the configured device; PyTorch accepts such a ``dim`` for
0-d tensors throughout.

The operator sweep found about twenty reductions on torch_xla 2.9 raising
"Value out of range" for it. This script calls each of the reductions below
on a 0-d float32 tensor with ``dim=0`` and compares with the CPU.
"""

import torch

from torchclaims.verify import verification

REDUCTIONS = {
    "sum": lambda t: t.sum(0),
    "mean": lambda t: t.mean(0),
    "prod": lambda t: t.prod(0),
    "amax": lambda t: t.amax(0),
    "amin": lambda t: t.amin(0),
    "argmax": lambda t: t.argmax(0),
    "argmin": lambda t: t.argmin(0),
    "max": lambda t: t.max(0).values,
    "min": lambda t: t.min(0).values,
    "logsumexp": lambda t: t.logsumexp(0),
    "cumsum": lambda t: t.cumsum(0),
    "cumprod": lambda t: t.cumprod(0),
    "softmax": lambda t: t.softmax(0),
    "log_softmax": lambda t: t.log_softmax(0),
    "all": lambda t: t.all(0),
    "any": lambda t: t.any(0),
    "norm": lambda t: torch.linalg.vector_norm(t, dim=0),
    "std": lambda t: t.std(0),
}

v = verification(
    "xla-zero-dim-reductions",
    inputs="the 0-d float32 tensor 5.0",
    method=f"{len(REDUCTIONS)} reductions and scans with dim=0 on the device against the CPU (rtol 1e-6, NaN equal)",
)

x = torch.tensor(5.0)

# %%
# Each reduction on the device and on the CPU
# -------------------------------------------

raised, differ = [], []
with v.check("every reduction with dim=0 on a 0-d tensor runs on the device and matches the CPU") as check:
    if v.on_reference:
        check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
    for name, reduce in REDUCTIONS.items():
        expected = reduce(x)
        try:
            result = reduce(x.to(v.device)).cpu()
        except Exception as exc:
            raised.append(name)
            print(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
            continue
        if not torch.allclose(result.double(), expected.double(), rtol=1e-6, equal_nan=True):
            differ.append(name)
    check.measure("reductions tried", len(REDUCTIONS))
    check.measure("raise on the device", len(raised))
    check.measure("differ from the CPU", len(differ))
    check.expect(not raised, "raise on the device: " + ", ".join(raised))
    check.expect(not differ, "differ from the CPU: " + ", ".join(differ))

v.finish()
