"""
avg_pool2d honours divisor_override, whatever ran before on the same shape
==========================================================================

:claim-verdict:`xla-avg-pool-divisor-override`

The claim: ``torch.nn.functional.avg_pool2d(x, k, divisor_override=d)``
divides each window's sum by ``d`` on the configured device as on the CPU,
also right after the same input shape was pooled without an override (and the
other way round).

The operator sweep found torch_xla 2.9 returning the plain average where an
override was given. A first call on a fresh input shape is correct; the
wrong value comes from a second call that differs only in
``divisor_override``, which suggests the compiled graph is reused across it.
Both orders are tried, each on its own input shape, and every result is
compared with the CPU's.
"""

import torch
import torch.nn.functional as F

from torchclaims.verify import verification

v = verification(
    "xla-avg-pool-divisor-override",
    inputs="float32 arange tensors of shapes (1, 1, 4, 4) and (1, 2, 3, 3); kernel 2",
    method="avg_pool2d without, then with divisor_override=3 on the first shape; with, then without on the "
    "second; values against the CPU (rtol 1e-6)",
)

CASES = {
    "plain, then divisor_override=3": ((1, 1, 4, 4), (None, 3)),
    "divisor_override=3, then plain": ((1, 2, 3, 3), (3, None)),
}

# %%
# Two calls that differ only in divisor_override
# ----------------------------------------------

for name, (shape, overrides) in CASES.items():
    x = torch.arange(torch.Size(shape).numel(), dtype=torch.float32).reshape(shape)
    with v.check(f"{name}, on an input of shape {shape}, matches the CPU") as check:
        if v.on_reference:
            check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
        for override in overrides:
            result = F.avg_pool2d(x.to(v.device), 2, divisor_override=override).cpu()
            expected = F.avg_pool2d(x, 2, divisor_override=override)
            check.close(result, expected, rtol=1e-6, atol=1e-6, what=f"divisor_override={override}")

v.finish()
