"""
pixel_shuffle gives each upscale factor's result, whatever factor ran before
============================================================================

:claim-verdict:`xla-pixel-shuffle-factor-order`

The claim: ``torch.nn.functional.pixel_shuffle`` rearranges a tensor of shape
``(*, C r², H, W)`` into ``(*, C, H r, W r)`` for the upscale factor ``r`` it
is given, on the configured device as on the CPU, also when the same input
shape was just shuffled with another factor.

The operator sweep found the opposite on torch_xla 2.9: the result of one
factor came back for another, depending on which ran first. Here one input of
16 channels is shuffled with factor 2 and then with factor 4 on the device,
and a fresh input shape the other way round; every result is compared with
the CPU's, shape and values. A lazy backend that keys its compiled graphs on
the input shapes only, and not on the factor, fails the second call of each
pair.
"""

import torch
import torch.nn.functional as F

from torchclaims.verify import verification

v = verification(
    "xla-pixel-shuffle-factor-order",
    inputs="float32 tensors (1, 16, 3, 3) and (1, 16, 2, 2), torch.manual_seed(0) on the CPU",
    method="pixel_shuffle with factor 2 then 4 on the first shape, 4 then 2 on the second, each on the device; "
    "shape and values against the CPU (exact)",
)

torch.manual_seed(0)
inputs = {"(1, 16, 3, 3)": torch.randn(1, 16, 3, 3), "(1, 16, 2, 2)": torch.randn(1, 16, 2, 2)}
ORDERS = {"(1, 16, 3, 3)": (2, 4), "(1, 16, 2, 2)": (4, 2)}

# %%
# Two factors in a row on one input shape
# ---------------------------------------

for shape, factors in ORDERS.items():
    x = inputs[shape]
    with v.check(f"factors {factors[0]} then {factors[1]} on an input of shape {shape} match the CPU") as check:
        if v.on_reference:
            check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
        for factor in factors:
            result = F.pixel_shuffle(x.to(v.device), factor).cpu()
            expected = F.pixel_shuffle(x, factor)
            check.measure(
                f"factor {factor}: shape on the device",
                str(tuple(result.shape)),
                tolerance=f"== {tuple(expected.shape)}",
            )
            if check.expect(
                result.shape == expected.shape,
                f"factor {factor}: shape {tuple(result.shape)}, CPU {tuple(expected.shape)}",
            ):
                check.equal(result, expected, f"factor {factor}: values")

v.finish()
