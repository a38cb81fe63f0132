"""
torch.accelerator memory statistics work without backend-specific calls
=======================================================================

:claim-verdict:`memory-apis-portable`

The claim: after allocating 64 MiB on the configured device and calling
``torch.accelerator.synchronize()``, ``torch.accelerator.memory_allocated()``
has grown by at least 64 MiB, with no backend-specific memory call
(TorchNeuron's allocator is asynchronous, so its statistics are valid only
after synchronizing).

The script uses only ``torch.accelerator`` functions around one 64 MiB
allocation. The growth is also read *before* synchronizing and recorded, which
shows on an asynchronous allocator why the synchronize matters. The CPU has no
accelerator, so a CPU run reports unverified.
"""

import torch

from torchclaims.verify import verification

v = verification(
    "memory-apis-portable",
    inputs="one torch.ones(64 MiB, dtype=uint8) on the configured device",
    method="torch.accelerator.memory_allocated() before and after, around torch.accelerator.synchronize()",
)

MiB = 2**20
accelerator = torch.accelerator

# %%
# One allocation, measured through torch.accelerator only
# -------------------------------------------------------

with v.check("memory_allocated() grows by at least 64 MiB after synchronize()") as check:
    found = accelerator.current_accelerator(check_available=True)
    check.measure("torch.accelerator.current_accelerator(check_available=True)", str(found))
    if v.on_reference:
        check.unsupported("the configured backend is the CPU, which has no accelerator memory statistics")
    matches = found is not None and found.type == v.device.type
    check.expect(matches, f"torch.accelerator reports {found}, not the configured {v.device.type}")
    # Another accelerator's statistics (a CUDA build's default, say) say nothing about this device.
    if matches:
        try:
            accelerator.synchronize()
            before = accelerator.memory_allocated()
            block = torch.ones(64 * MiB, dtype=torch.uint8, device=v.device)
            unsynchronized = accelerator.memory_allocated() - before
            accelerator.synchronize()
            grown = accelerator.memory_allocated() - before
            reserved = accelerator.memory_reserved()
            del block
            accelerator.synchronize()
            after_free = accelerator.memory_allocated() - before
        except RuntimeError as exc:  # e.g. "Cannot access accelerator device when none is available"
            check.expect(
                False, f"a torch.accelerator memory call raised RuntimeError: {str(exc).splitlines()[0][:200]}"
            )
        else:
            check.measure("growth read before synchronize()", unsynchronized / MiB, unit="MiB")
            check.measure("growth after synchronize()", grown / MiB, unit="MiB", tolerance=">= 64")
            check.measure("memory_reserved()", reserved / MiB, unit="MiB")
            check.measure("growth left after freeing the block", after_free / MiB, unit="MiB")
            check.expect(grown >= 64 * MiB, f"memory_allocated() grew by {grown / MiB:.2f} MiB")

v.finish()
