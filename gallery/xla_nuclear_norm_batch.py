"""
The nuclear norm of a batch of matrices is one norm per matrix
==============================================================

:claim-verdict:`xla-nuclear-norm-batch`

The claim: ``torch.linalg.matrix_norm(A, "nuc")`` of a batch ``A`` of shape
``(*, m, n)`` returns one nuclear norm (the sum of singular values) per
matrix, of shape ``(*)``, on the configured device as on the CPU.

The operator sweep found torch_xla 2.9 reducing over the wrong dimension for
batches: a batch of two 3 × 4 matrices gives three values. A single matrix is
checked as a control.
"""

import torch

from torchclaims.verify import verification

v = verification(
    "xla-nuclear-norm-batch",
    inputs="float32 A of shape (2, 3, 4) and a single (3, 4) matrix, torch.manual_seed(0) on the CPU",
    method="torch.linalg.matrix_norm(A, 'nuc') on the device: shape and values against the CPU (rtol 1e-4)",
)

torch.manual_seed(0)
cases = {"a batch of two 3 x 4 matrices": torch.randn(2, 3, 4), "a single 3 x 4 matrix": torch.randn(3, 4)}

# %%
# One norm per matrix
# -------------------

for what, a in cases.items():
    with v.check(f"the nuclear norm of {what} matches the CPU") as check:
        if v.on_reference:
            check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
        result = torch.linalg.matrix_norm(a.to(v.device), "nuc").cpu()
        check.close(result, torch.linalg.matrix_norm(a, "nuc"), rtol=1e-4, atol=1e-5, what="norms")

v.finish()
