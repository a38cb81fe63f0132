"""
torch.norm with p=inf returns the largest absolute value
========================================================

:claim-verdict:`xla-norm-inf`

The claim: ``torch.norm(x, float("inf"))`` is the largest absolute value of
``x`` on the configured device, as on the CPU and as
``torch.linalg.vector_norm(x, float("inf"))``.

The operator sweep found torch_xla 2.9 returning 1.0 for it. One vector is
enough to show it; ``torch.linalg.vector_norm``, which torch.norm's
documentation recommends instead, is run beside it as a control.
"""

import math

import torch

from torchclaims.verify import verification

v = verification(
    "xla-norm-inf",
    inputs="the float32 vector [3, -7, 2] and a (4, 5) matrix from torch.manual_seed(0)",
    method="torch.norm(x, inf) and torch.linalg.vector_norm(x, inf) on the device against the CPU (rtol 1e-6)",
)

torch.manual_seed(0)
inputs = {"vector [3, -7, 2]": torch.tensor([3.0, -7.0, 2.0]), "a 4 x 5 matrix": torch.randn(4, 5)}

# %%
# torch.norm and torch.linalg.vector_norm at p = inf
# --------------------------------------------------

for name, function in (("torch.norm", torch.norm), ("torch.linalg.vector_norm", torch.linalg.vector_norm)):
    with v.check(f"{name}(x, inf) is the largest absolute value, as on the CPU") as check:
        if v.on_reference:
            check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
        for what, x in inputs.items():
            result = function(x.to(v.device), math.inf).cpu()
            check.close(result, x.abs().max(), rtol=1e-6, atol=0, what=what)

v.finish()
