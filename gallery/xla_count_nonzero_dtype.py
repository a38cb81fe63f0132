"""
count_nonzero returns an int64 count
====================================

:claim-verdict:`xla-count-nonzero-dtype`

The claim: ``torch.count_nonzero`` returns the number of non-zero values as
an int64 tensor, whatever the input's dtype, on the configured device as on
the CPU.

The operator sweep found torch_xla 2.9 returning the count in the input's
dtype (float32 for a float32 input, bool for a bool input). The values are
right where the dtype can hold them; code that indexes with the count or
compares dtypes is not.
"""

import torch

from torchclaims.verify import verification

DTYPES = (torch.float32, torch.bfloat16, torch.int64, torch.bool)

v = verification(
    "xla-count-nonzero-dtype",
    inputs="a (2, 2) matrix [[0, 1], [2, 0]] in " + ", ".join(str(d).removeprefix("torch.") for d in DTYPES),
    method="torch.count_nonzero over all elements and along dim 0 on the device: dtype and value against the CPU",
)

# %%
# The count and its dtype, per input dtype
# ----------------------------------------

for dtype in DTYPES:
    x = torch.tensor([[0, 1], [2, 0]]).to(dtype)
    with v.check(
        f"count_nonzero of a tensor of {str(dtype).removeprefix('torch.')} matches the CPU, dtype included"
    ) as check:
        if v.on_reference:
            check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
        for what, count in (
            ("all elements", lambda t: torch.count_nonzero(t)),
            ("along dim 0", lambda t: torch.count_nonzero(t, dim=0)),
        ):
            result, expected = count(x.to(v.device)).cpu(), count(x)
            check.equal(str(result.dtype), str(expected.dtype), f"{what}: dtype")
            check.expect(result.tolist() == expected.tolist(), f"{what}: {result.tolist()}, CPU {expected.tolist()}")

v.finish()
