"""
torch._chunk_cat concatenates chunks of its inputs
==================================================

:claim-verdict:`xla-chunk-cat`

The claim: ``torch._chunk_cat(tensors, dim, num_chunks)`` splits each tensor
into ``num_chunks`` chunks along ``dim`` and concatenates them chunk by chunk,
on the configured device as on the CPU. It is a private operator, but not an
obscure one: FSDP2 uses it to pack gradients before reducing them.

The operator sweep found torch_xla 2.9 returning zeros. Two small matrices
are enough to show it.
"""

import torch

from torchclaims.verify import verification

v = verification(
    "xla-chunk-cat",
    inputs="float32 tensors of shapes (4, 3) and (4, 5), torch.manual_seed(0) on the CPU",
    method="torch._chunk_cat([a, b], dim=1, num_chunks=2) on the device against the CPU (exact)",
)

torch.manual_seed(0)
a, b = torch.randn(4, 3), torch.randn(4, 5)

# %%
# Chunks of two matrices
# ----------------------

with v.check("_chunk_cat on the device gives the CPU's result") as check:
    if v.on_reference:
        check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
    result = torch._chunk_cat([a.to(v.device), b.to(v.device)], dim=1, num_chunks=2).cpu()
    expected = torch._chunk_cat([a, b], dim=1, num_chunks=2)
    check.measure("largest absolute value on the device", result.abs().max())
    check.measure("largest absolute value on the CPU", expected.abs().max())
    check.equal(result, expected, "chunks")

v.finish()
