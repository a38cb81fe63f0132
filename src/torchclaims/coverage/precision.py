"""The float32 precision mode a sweep worker computes in, stated in the record.

Whether float32 matmuls and convolutions round their inputs to a narrower
format decides what "matches the CPU" can mean: TF32 on CUDA and ROCm (10
mantissa bits), bfloat16 passes on TPUs (TorchTPU rounds float32 matmul inputs
to bfloat16 by default; torch_xla has its own level). Each worker reports the
mode after its imports (PyTorch's test modules set some of these flags), and
the record states it beside the table.
"""

from __future__ import annotations

import warnings


def precision_mode(backend_name: str) -> str:
    """The flags that set float32 matmul and convolution precision here, in one line."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading the TF32 flags warns in favour of fp32_precision
        parts = [f"torch.get_float32_matmul_precision() = {torch.get_float32_matmul_precision()!r}"]
        if backend_name in ("cuda", "rocm"):
            parts.append(f"torch.backends.cuda.matmul.allow_tf32 = {torch.backends.cuda.matmul.allow_tf32}")
            parts.append(f"torch.backends.cudnn.allow_tf32 = {torch.backends.cudnn.allow_tf32}")
    if backend_name == "xla":
        from torch_xla import backends as xla_backends

        parts.append(f"torch_xla.backends.get_mat_mul_precision() = {xla_backends.get_mat_mul_precision()!r}")
    if backend_name == "tpu":
        parts.append("TorchTPU rounds float32 matmul inputs to bfloat16 by default")
    return "; ".join(parts)
