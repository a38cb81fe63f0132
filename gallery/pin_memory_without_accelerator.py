"""
Pinned memory needs an accelerator; non_blocking copies give the same values
============================================================================

:claim-verdict:`pin-memory-without-accelerator`

The claim: where PyTorch has no accelerator (a CPU host; also a host whose
torch build is CUDA's but has no GPU), ``tensor.pin_memory()`` raises, and a
``DataLoader(pin_memory=True)``, as input pipelines written for CUDA make it,
still yields every batch, unpinned. On every backend a
``non_blocking=True`` copy of a batch to the configured device gives the
same values, once synchronized, as a blocking copy.

The first two parts are what an input pipeline meets when it moves; the third
is what makes ``non_blocking=True`` safe to keep.
"""

import torch
from _cuda_code import attempt
from torch.utils.data import DataLoader, TensorDataset

from torchclaims.verify import verification

v = verification(
    "pin-memory-without-accelerator",
    inputs="a seeded float32 tensor of 1024 x 64; a DataLoader of 4 batches of 8",
    method="pin_memory() tried; batches' is_pinned(); non_blocking and blocking copies compared",
)

torch.manual_seed(0)
batch = torch.randn(1024, 64)
accelerator = torch.accelerator.current_accelerator(check_available=True)
print(f"torch.accelerator.current_accelerator(check_available=True) = {accelerator}")

# %%
# Pinning without an accelerator
# ------------------------------

with v.check("without an accelerator, pin_memory() raises and a pinning DataLoader yields unpinned batches") as check:
    check.measure("torch.accelerator.current_accelerator(check_available=True)", str(accelerator))
    if accelerator is not None:
        check.unsupported(f"torch has an accelerator here ({accelerator}): pinning applies")
    what, value, _ = attempt(lambda: batch.pin_memory())
    check.measure(
        "tensor.pin_memory()",
        value if what == "raised" else f"returned (is_pinned={value.is_pinned()})",
        tolerance="raises",
    )
    check.expect(what == "raised", "pin_memory() returned a tensor without an accelerator")
    loader = DataLoader(TensorDataset(torch.arange(32.0)), batch_size=8, pin_memory=True)
    what, batches, warned = attempt(lambda: [b for (b,) in loader])
    check.measure("warnings", " | ".join(warned) or "none")
    if check.expect(what == "returned", f"DataLoader(pin_memory=True) raised: {batches}"):
        check.equal(len(batches), 4, "batches yielded")
        check.equal(any(b.is_pinned() for b in batches), False, "any batch pinned")

# %%
# A non_blocking copy to the device
# ---------------------------------

with v.check("a non_blocking=True copy to the configured device equals a blocking copy") as check:
    fast = batch.to(v.device, non_blocking=True)
    slow = batch.to(v.device)
    v.sync()
    check.equal(fast.cpu(), slow.cpu(), "the non_blocking copy and the blocking copy")

v.finish()
