"""
Seeded random tensors match across devices only when drawn on CPU and moved
===========================================================================

:claim-verdict:`rng-streams-per-device`

The claim: random tensors drawn on the CPU with a fixed seed and then moved to
the configured device keep exactly the CPU values, while drawing them directly
on the device with the same seed gives other values, because the device has a
generator of its own. Code that needs the CPU's values on another device has
to draw on the CPU and move them.

We seed with ``torch.manual_seed(0)`` and draw 4096 normal samples three ways:
on the CPU (the reference), on the CPU and then moved to the device, and
directly on the device. The moved draw must equal the CPU stream byte for
byte; the device draw must differ from it. On the CPU itself both comparisons
would compare the CPU with itself, so a CPU run reports unverified.
"""

import matplotlib.pyplot as plt
import torch

from torchclaims.verify import verification

v = verification(
    "rng-streams-per-device",
    inputs="torch.randn(4096) after torch.manual_seed(0)",
    method="byte-for-byte comparison with the CPU stream",
)

N = 4096


def as_bytes(t):
    return t.detach().cpu().reshape(-1).view(torch.uint8)


torch.manual_seed(0)
reference = torch.randn(N)

# %%
# Drawn on the CPU, then moved
# ----------------------------

SAME_DEVICE = "the configured backend is the CPU reference itself: there is no second device to compare with"

with v.check("values drawn on the CPU and moved to the device keep exactly the CPU values") as check:
    torch.manual_seed(0)
    moved = torch.randn(N).to(v.device)
    v.sync()
    if v.on_reference:
        check.unsupported(SAME_DEVICE)
    check.equal(moved.device.type, v.device.type, "device type after the move")
    check.equal(as_bytes(moved), as_bytes(reference), "CPU draw moved to the device, against the CPU stream")

# %%
# Drawn on the device
# -------------------
# A backend that cannot sample on the device may raise; then there is no
# device draw to compare, and the check says so. One that quietly draws on the
# CPU instead would reproduce the CPU stream, which refutes the statement's
# second half.

on_device = None
with v.check("values drawn directly on the device with the same seed differ from the CPU stream") as check:
    if v.on_reference:
        check.unsupported(SAME_DEVICE)
    try:
        torch.manual_seed(0)
        on_device = torch.randn(N, device=v.device)
        v.sync()
        on_device = on_device.cpu()
    except Exception as exc:
        check.unsupported(f"sampling on the device raised {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    identical = torch.equal(as_bytes(on_device), as_bytes(reference))
    check.measure("fraction of values equal to the CPU stream", (on_device == reference).double().mean())
    check.measure("max abs difference from the CPU stream", (on_device - reference).abs().max())
    check.measure("identical to the CPU stream", identical, tolerance="False")
    check.expect(not identical, "the device draw reproduces the CPU stream byte for byte")

# %%
# The first 40 samples
# --------------------

fig, ax = plt.subplots(figsize=(6.5, 2.8))
ax.plot(reference[:40], "k-", lw=1, label="CPU stream")
ax.plot(moved.cpu()[:40], "o", ms=4, mfc="none", label=f"CPU draw moved to {v.device.type}")
if on_device is not None:
    ax.plot(on_device[:40], "x", ms=4, label=f"drawn on {v.device.type}")
ax.set_xlabel("sample")
ax.set_ylabel("value")
ax.legend(fontsize=8)
fig.tight_layout()

v.finish()
