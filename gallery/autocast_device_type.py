"""
Mixed precision uses torch.autocast with the backend's device type
==================================================================

:claim-verdict:`autocast-device-type`

The claim: mixed precision uses the standard ``torch.autocast`` with the
backend's device type. ``torch.amp.is_autocast_available(device_type)`` is True
for the configured backend, and a float32 matmul inside
``torch.autocast(device_type)`` returns that device type's autocast dtype
(bfloat16 by default on the CPU, float16 by default on CUDA).

We ask autocast about the configured device type, run a float32 matmul inside
it, and compare the output dtype with ``torch.get_autocast_dtype`` and, for the
device types the documentation names, with the documented default.
"""

import warnings

import torch

from torchclaims.verify import verification

v = verification(
    "autocast-device-type",
    inputs="two 64x64 float32 matrices, seed 0",
    dtype="float32 inputs, autocast default dtype",
    method="output dtype of torch.mm inside torch.autocast(device_type=<configured type>)",
)

# The documented defaults, keyed by device type name (data under test).
DOCUMENTED_DEFAULT = {"cpu": torch.bfloat16, "cuda": torch.float16}
device_type = v.device.type

# %%
# Is autocast available for this device type?
# -------------------------------------------

with v.check("torch.amp.is_autocast_available(device_type) is True") as check:
    check.equal(torch.amp.is_autocast_available(device_type), True, f"is_autocast_available({device_type!r})")

# %%
# A matmul inside autocast
# ------------------------

torch.manual_seed(0)
a, b = torch.randn(64, 64), torch.randn(64, 64)

with v.check("a float32 matmul inside torch.autocast returns the device type's autocast dtype") as check:
    expected = torch.get_autocast_dtype(device_type)
    check.measure("torch.get_autocast_dtype", str(expected))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autocast(device_type=device_type):
            out = torch.mm(a.to(v.device), b.to(v.device))
        v.sync()
    for warning in caught:
        if issubclass(warning.category, UserWarning):
            check.note(f"warning: {warning.message}")
    check.equal(out.dtype, expected, "dtype of torch.mm inside autocast")
    if device_type in DOCUMENTED_DEFAULT:
        check.equal(out.dtype, DOCUMENTED_DEFAULT[device_type], f"documented default for {device_type!r}")
    error = (out.cpu().double() - (a.double() @ b.double())).abs().max()
    check.measure("max abs error against float64", error)

v.finish()
