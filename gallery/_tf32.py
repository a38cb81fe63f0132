"""The float32 matmul error measurement shared by the TF32 claims."""

import torch

SIZE = 1024


def matmul_relative_error(v, precision: str) -> float:
    """Relative Frobenius error of a seeded SIZE x SIZE float32 matmul on the
    configured device, at ``precision``, against the float64 product on the CPU."""
    torch.manual_seed(0)
    a, b = torch.randn(SIZE, SIZE), torch.randn(SIZE, SIZE)
    reference = a.double() @ b.double()
    torch.set_float32_matmul_precision(precision)
    try:
        result = a.to(v.device) @ b.to(v.device)
        v.sync()
        return ((result.cpu().double() - reference).norm() / reference.norm()).item()
    finally:
        torch.set_float32_matmul_precision("highest")
