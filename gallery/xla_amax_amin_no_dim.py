"""
amax and amin without dim reduce over every dimension
=====================================================

:claim-verdict:`xla-amax-amin-no-dim`

The claim: ``torch.amax(x)`` and ``torch.amin(x)`` with no ``dim`` (and with
``dim=()``) reduce over every dimension and return a 0-d tensor, the largest
or smallest element, on the configured device as on the CPU.

The operator sweep found torch_xla 2.9 returning the input unreduced: the
shape and the values of ``x`` itself, a silent wrong result in code as
ordinary as ``x.amax()``.
"""

import torch

from torchclaims.verify import verification

v = verification(
    "xla-amax-amin-no-dim",
    inputs="the float32 vector [4.8, -7.4] and a (3, 4) matrix from torch.manual_seed(0)",
    method="torch.amax / torch.amin without dim and with dim=() on the device: shape and value against the CPU",
)

torch.manual_seed(0)
inputs = {"vector [4.8, -7.4]": torch.tensor([4.8, -7.4]), "a 3 x 4 matrix": torch.randn(3, 4)}
CALLS = {
    "amax(x)": lambda t: torch.amax(t),
    "amin(x)": lambda t: torch.amin(t),
    "amax(x, dim=())": lambda t: torch.amax(t, dim=()),
    "amin(x, dim=())": lambda t: torch.amin(t, dim=()),
}

# %%
# Each call on the device and on the CPU
# --------------------------------------

for name, reduce in CALLS.items():
    with v.check(f"{name} reduces over every dimension, as on the CPU") as check:
        if v.on_reference:
            check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
        for what, x in inputs.items():
            check.close(reduce(x.to(v.device)).cpu(), reduce(x), rtol=0, atol=0, what=what)

v.finish()
