"""The operator list: every OpInfo entry × every dtype the CPU reference supports.

The list is fixed from metadata before anything runs, so its length is the
denominator. Rows are every ``op_db`` entry (``name.variant``); a cell exists
for each dtype among :data:`DTYPES` that OpInfo says the CPU supports (the
others are ``.``, outside the list). A cell is *excluded* when ``op_db``'s own
metadata says PyTorch's ``TestCommon.test_compare_cpu`` must not compare it on
this device type and dtype: a ``skip`` (non-deterministic output, undefined
results), an ``expectedFailure`` (as_strided's partial views, whose result
depends on the input's memory layout), or a decorator restricting the operator
to other device types (``onlyCUDA``), except where the sweep handles the
reason for a skip itself (:data:`COMPARED_DESPITE_SKIP`: scaled-dot-product
attention is skipped for dropout's randomness, which the sweep detects per
sample). Tolerances are test_compare_cpu's
(``atol = rtol = 1e-3``), raised where the operator's ``toleranceOverride`` or
``precisionOverride`` says so for this device type and dtype, and to
``torch.testing``'s defaults for the dtype where those are looser (bfloat16).
An operator that supports autograd (``OpInfo.supports_autograd``) also gets
a backward cell for each dtype among :data:`BACKWARD_DTYPES` that OpInfo says
the CPU's backward supports (``supported_backward_dtypes``), in the column
``<dtype> backward``: its gradients against the CPU's (:mod:`.op_backward`),
excluded where its forward cell is and at the same tolerance, as PyTorch's
``test_output_grad_match`` judges gradients at its forward tolerance.
On MPS, PyTorch compares each operator with the CPU in
``TestConsistency.test_output_match`` (test_mps.py), whose tolerance
overrides op_db carries too (bfloat16 ``addbmm``: ``atol`` 0.2, ``rtol`` 0.6):
they count there as well.
"""

from __future__ import annotations

import unittest
from dataclasses import dataclass, replace

from ..evidence.coverage_table import backward_column

DTYPES = ("float32", "bfloat16", "float16", "int64", "bool", "complex64")
# The dtypes whose backward pass is swept too. bfloat16 would add about as many cells again (456 on torch 2.13):
# left out until a torch_xla sweep with the float32 backward shows how much of its time limit is left.
BACKWARD_DTYPES = ("float32",)
COMPARE_CPU_TOLERANCE = 1e-3  # test_compare_cpu: assertEqual(..., atol=1e-3, rtol=1e-3)
TEST = ("TestCommon", "test_compare_cpu")
SKIPPED = "op_db skips test_compare_cpu"  # how an exclusion by op_db's skip begins
# PyTorch's other comparisons of a device with the CPU, by device type: their tolerance overrides count too.
TOLERANCE_TESTS = {"mps": (("TestConsistency", "test_output_match"),)}
# Rows op_db skips in test_compare_cpu for a reason the sweep handles per sample: it compares them, saying why.
COMPARED_DESPITE_SKIP = {
    "nn.functional.scaled_dot_product_attention": "op_db skips it in test_compare_cpu as non-deterministic when "
    "dropout_p > 0; compared here, since a sample that draws random numbers is not compared",
}
# Rows whose device call is watched once more for the ATen kernels the device dispatched (each backend its own).
KERNELS_RECORDED = ("nn.functional.scaled_dot_product_attention",)
# Bare decorators that restrict every test of an operator to some device types.
ONLY = {"onlyCUDA": {"cuda"}, "onlyCPU": {"cpu"}, "onlyNativeDeviceTypes": {"cpu", "cuda", "meta", "mps", "xpu"}}


@dataclass(frozen=True)
class Cell:
    """One operator × dtype of the list, with what metadata says about it."""

    op: str  # the row: "name" or "name.variant"
    dtype: str
    excluded: str = ""  # why op_db says not to compare it ("" when listed for a run)
    note: str = ""  # why it is compared although op_db skips it (COMPARED_DESPITE_SKIP)
    atol: float = COMPARE_CPU_TOLERANCE
    rtol: float = COMPARE_CPU_TOLERANCE
    backward: bool = False  # the cell of the operator's gradients rather than of its result

    @property
    def column(self) -> str:
        return backward_column(self.dtype) if self.backward else self.dtype


def op_label(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def operator_table_rows(ops) -> list[str]:
    return [op_label(op) for op in ops]


def cells_for(op, device_type: str, dtypes=DTYPES, backward_dtypes=BACKWARD_DTYPES) -> list[Cell]:
    """The cells of one operator (only dtypes the CPU supports), each forward cell followed by its backward cell
    where the operator supports autograd and the dtype is among ``backward_dtypes``."""
    import torch

    supported = op.supported_dtypes("cpu")
    differentiable = op.supported_backward_dtypes("cpu") if op.supports_autograd else set()
    cells = []
    for name in dtypes:
        dtype = getattr(torch, name)
        if dtype not in supported:
            continue
        excluded, atol, rtol = _metadata(op, device_type, dtype)
        note = ""
        if excluded.startswith(SKIPPED) and op_label(op) in COMPARED_DESPITE_SKIP:
            excluded, note = "", COMPARED_DESPITE_SKIP[op_label(op)]
        default_rtol, default_atol = _dtype_tolerance(dtype)
        cells.append(Cell(op_label(op), name, excluded, note, max(atol, default_atol), max(rtol, default_rtol)))
        if name in backward_dtypes and dtype in differentiable:
            cells.append(replace(cells[-1], backward=True))
    return cells


def _dtype_tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) torch.testing uses for ``dtype`` by default; exact for integers and bool."""
    import torch
    from torch.testing._comparison import default_tolerances

    return (
        default_tolerances(torch.empty(0, dtype=dtype)) if dtype.is_floating_point or dtype.is_complex else (0.0, 0.0)
    )


def _metadata(op, device_type: str, dtype) -> tuple[str, float, float]:
    """(exclusion reason, atol, rtol) from op_db's decorators for test_compare_cpu here."""
    from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
    from torch.testing._internal.opinfo.core import DecorateInfo

    excluded, atol, rtol = "", COMPARE_CPU_TOLERANCE, COMPARE_CPU_TOLERANCE
    nondeterministic = getattr(op, "has_nondeterministic_output", False)  # newer than torch 2.9
    if nondeterministic:
        excluded = "op_db: the output is non-deterministic"
    for info in op.decorators:
        decorators = info.decorators if isinstance(info, DecorateInfo) else [info]
        if isinstance(info, DecorateInfo) and not info.is_active(*TEST, device_type, dtype, {}):
            tolerances_only = any(
                info.is_active(*test, device_type, dtype, {}) for test in TOLERANCE_TESTS.get(device_type, ())
            )
            if not tolerances_only:
                continue
            decorators = [d for d in decorators if isinstance(d, (toleranceOverride, precisionOverride))]
        for decorator in decorators:
            name = getattr(decorator, "__name__", type(decorator).__name__)
            if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
                atol, rtol = max(atol, decorator.d[dtype].atol), max(rtol, decorator.d[dtype].rtol)
            elif isinstance(decorator, precisionOverride) and dtype in decorator.d:
                atol = max(atol, decorator.d[dtype])
            elif decorator is unittest.expectedFailure:
                excluded = excluded or "op_db expects test_compare_cpu to fail here"
            elif getattr(decorator, "__qualname__", "").startswith("skip.<locals>"):  # unittest.skip(reason)
                cells = dict(zip(decorator.__code__.co_freevars, decorator.__closure__ or (), strict=True))
                reason = cells["reason"].cell_contents if "reason" in cells else "skipped"
                excluded = excluded or f"{SKIPPED}: {reason}"
            elif name in ONLY and device_type not in ONLY[name]:
                excluded = excluded or f"op_db: {name} (not run on {device_type})"
    return excluded, atol, rtol
