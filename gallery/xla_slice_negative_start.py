"""
A slice whose negative start reaches past the front of a dimension is clamped
=============================================================================

:claim-verdict:`xla-slice-negative-start`

The claim: indexing a tensor on the configured device with a slice whose
negative start lies before the first element (``x[-15:]`` on a dimension of
6) returns what Python and PyTorch on the CPU return: the slice clamped to
the dimension, here the whole of it.

The architecture sweep found about a third of Transformers' causal-LM
architectures failing on torch_xla 2.9 with "Value out of range (expected to
be in range of [-6, 5], but got -15)": every model with a sliding window
longer than the prompt keeps the last ``window - 1`` positions with such a
slice. This script tries the slice in one and two dimensions, next to
in-range slices and a stop past the end as controls.
"""

import torch

from torchclaims.verify import verification

SLICES = {
    "x[-15:] (start before the front)": lambda t: t[-15:],
    "x.reshape(1, 6)[:, -15:] (the same, second dimension)": lambda t: t.reshape(1, 6)[:, -15:],
    "x[-6:] (start at the front)": lambda t: t[-6:],
    "x[2:100] (stop past the end)": lambda t: t[2:100],
}

v = verification(
    "xla-slice-negative-start",
    inputs="x = torch.arange(6.0)",
    method="each slice of x on the device against the same slice on the CPU (exact)",
)

x = torch.arange(6.0)

# %%
# Each slice on the device and on the CPU
# ---------------------------------------

for name, take in SLICES.items():
    with v.check(f"{name} gives the CPU's result") as check:
        if v.on_reference:
            check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
        try:
            result = take(x.to(v.device)).cpu()
        except Exception as exc:  # raising where the CPU clamps is the finding, not a broken check
            check.expect(False, f"raised {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            continue
        check.equal(result, take(x), name)

v.finish()
