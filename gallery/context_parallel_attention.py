"""
Context parallelism shards attention along the sequence and matches one process
===============================================================================

:claim-verdict:`context-parallel-attention`

The claim: inside ``torch.distributed.tensor.experimental.context_parallel``
on 2 processes, causal ``scaled_dot_product_attention`` over a query, key and
value sharded along the sequence leaves each rank half of the sequence, and
the output gathered from the ranks equals the attention computed in one
process, within float32 tolerance.

We start 2 worker processes on the configured device with the backend's
process-group backend. Each rank enters ``context_parallel`` with the same
seeded query, key and value, which the context shards in place; attention
then runs as ring attention, passing key and value shards between the ranks.
``context_parallel_unshard`` gathers the output, which we compare with
ordinary attention in this process on the same device.

PyTorch implements context parallelism for the flash, memory-efficient and
cuDNN attention kernels only. A backend whose attention runs another kernel
(the CPU's ``_scaled_dot_product_flash_attention_for_cpu``) raises
``NotImplementedError`` inside the context. On the backends the statement
names (CUDA, ROCm, Neuron) that refutes it; elsewhere, the CPU included, it
is recorded as the reason the claim cannot be checked there.
"""

import _parallel
import torch

from torchclaims.verify import distributed, verification

WORLD_SIZE = 2
STATEMENT_BACKENDS = ("cuda", "rocm", "neuron")  # where the statement says context parallelism runs (data under test)
RTOL, ATOL = 1e-4, 1e-4  # ring attention merges partial softmaxes: a few float32 roundings more than one pass

v = verification(
    "context-parallel-attention",
    model="causal scaled_dot_product_attention, float32",
    inputs=f"query, key and value of shape (1, 2 heads, {_parallel.SEQUENCE} positions, {_parallel.FEATURES}), seed 3",
    method=f"context_parallel over a mesh of {WORLD_SIZE} ranks (forked for CPU jobs, spawned otherwise), "
    f"context_parallel_unshard, element-wise comparison with one process, rtol {RTOL:g}, atol {ATOL:g}",
)

# %%
# What each rank runs
# -------------------
# The job lives in the helper module ``gallery/_parallel.py``.
#
# .. literalinclude:: /gallery/_parallel.py
#    :pyobject: context_parallel_job

attention = distributed.RankRun(_parallel.context_parallel_job, WORLD_SIZE)
with v.check(
    f"causal attention runs under context_parallel on {WORLD_SIZE} ranks, each with half the sequence"
) as check:
    results = attention.start(check, v.backend, v.device.type)
    missing = [result["not_implemented"] for result in results if "not_implemented" in result]
    if missing:
        attention.give_up(f"context parallelism does not support this backend's attention kernel: {missing[0]}")
        if v.backend.name not in STATEMENT_BACKENDS:
            check.unsupported(f"{attention.reason} (the statement covers {', '.join(STATEMENT_BACKENDS)})")
        check.expect(False, attention.reason)
    else:
        for rank, result in enumerate(results):
            check.equal(
                result["local_sequence"], _parallel.SEQUENCE // WORLD_SIZE, f"rank {rank}: positions it computed"
            )

# %%
# Attention in one process
# ------------------------

query, key, value = (t.to(v.device) for t in _parallel.attention_inputs())
single = torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True)
v.sync()

with v.check("the output gathered from the ranks equals attention computed in one process") as check:
    for rank, result in enumerate(attention.require(check)):
        check.close(result["output"], single, rtol=RTOL, atol=ATOL, what=f"rank {rank}: gathered output")

v.finish()
