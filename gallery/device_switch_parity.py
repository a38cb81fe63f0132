"""
Changing the device string is enough to move training code
==========================================================

:claim-verdict:`device-switch-parity`

The claim: code written for one device runs on another when only the device
string changes. We take an ordinary model and training step, written once
against ``device``, run it on the configured backend and on the CPU reference,
and compare the forward output, the gradients and the weights after one SGD
step.
"""

import copy

import matplotlib.pyplot as plt
import torch

from torchclaims.verify import verification

v = verification(
    "device-switch-parity",
    model="MLP 16-64-64-4 with GELU, float32, seed 0",
    inputs="batch of 32 random inputs and integer targets, cross-entropy loss",
    method="max abs error against the same step on the CPU, rtol 1e-4, atol 1e-5",
)

# %%
# The training step, written once
# -------------------------------
# Nothing in it names a device: it is the code a user would move.


def train_step(model, inputs, targets, device):
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    logits = model(inputs.to(device))
    loss = torch.nn.functional.cross_entropy(logits, targets.to(device))
    loss.backward()
    grads = [p.grad.detach().clone() for p in model.parameters()]
    optimizer.step()
    return logits, grads, [p.detach() for p in model.parameters()]


torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 4)
)
inputs = torch.randn(32, 16)
targets = torch.randint(0, 4, (32,))

reference = train_step(copy.deepcopy(model), inputs, targets, v.reference_device)

# %%
# The same step on the configured device
# --------------------------------------

with v.check("the model moves to the device and runs forward") as check:
    logits, grads, weights = train_step(copy.deepcopy(model), inputs, targets, v.device)
    check.equal(logits.device.type, v.device.type, "device type of the output")

# %%
# On the CPU backend the step above ran on the reference device itself, so the
# comparisons below would compare the CPU with itself: they are reported as
# unverified there, and the verdict comes from runs on other backends.

SAME_DEVICE = "the configured backend is the CPU reference itself; the comparison needs another device"

with v.check("forward output matches the CPU reference") as check:
    if v.on_reference:
        check.unsupported(SAME_DEVICE)
    check.close(logits, reference[0], rtol=1e-4, atol=1e-5, what="logits")

with v.check("gradients match the CPU reference") as check:
    if v.on_reference:
        check.unsupported(SAME_DEVICE)
    for i, (g, ref) in enumerate(zip(grads, reference[1], strict=True)):
        check.close(g, ref, rtol=1e-4, atol=1e-5, what=f"grad {i}")

with v.check("weights after one SGD step match the CPU reference") as check:
    if v.on_reference:
        check.unsupported(SAME_DEVICE)
    for i, (w, ref) in enumerate(zip(weights, reference[2], strict=True)):
        check.close(w, ref, rtol=1e-4, atol=1e-5, what=f"weight {i}")

# %%
# Where the differences are
# -------------------------
# On the CPU itself the differences are zero; on an accelerator they show the
# size of the numerical drift the tolerance has to absorb.

errors = [(g.cpu() - r).abs().max().item() for g, r in zip(grads, reference[1], strict=True)]
fig, ax = plt.subplots(figsize=(6, 2.5))
ax.bar(range(len(errors)), errors)
ax.set_xlabel("parameter tensor")
ax.set_ylabel("max abs gradient error")
ax.set_title(f"{v.device.type} against the CPU reference")
fig.tight_layout()

v.finish()
