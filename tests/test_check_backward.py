"""``torchclaims check`` on a training step: its backward kernels against the operator table's backward columns.

A knowledge base written here holds one xla operator table: conv2d's row, whose forward matched and whose
gradients (``aten::convolution_backward``) differ from the CPU's in the ``float32 backward`` column, and
relu's, whose gradients dispatched ``aten::threshold_backward``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from factories import make_kb, write_xla_table
from torchclaims.check import check_step
from torchclaims.check.names import own_backward_operators
from torchclaims.check.report import NATIVE, NOT_COVERED, WRONG
from torchclaims.check.target import as_step
from torchclaims.coverage.operators import BACKWARD_OUTCOMES, OUTCOMES, SAMPLE_CODES
from torchclaims.evidence.coverage_table import TableBuilder

CONV, RELU = "nn.functional.conv2d", "nn.functional.relu"
MISMATCH = "1 of 2 samples differ; compare: sample 1: gradients: output 1: 4 of 8 elements differ beyond the tolerance"


def kb(root: Path, backward: bool = True) -> Path:
    make_kb(root, "opinfo-coverage")
    columns = {"float32": OUTCOMES} | ({"float32 backward": BACKWARD_OUTCOMES} if backward else {})
    builder = TableBuilder("operators", "operator", [CONV, RELU], columns, SAMPLE_CODES)
    builder.set(CONV, "float32", "N", samples="nn")
    builder.set(RELU, "float32", "N", samples="nn")
    builder.add_operators(CONV, ["aten::convolution"])
    builder.add_operators(RELU, ["aten::relu"])
    if backward:
        builder.set(CONV, "float32 backward", "M", MISMATCH, "nm")
        builder.set(RELU, "float32 backward", "N", samples="nn")
        builder.add_operators(CONV, ["aten::convolution_backward", "aten::sum.dim_IntList"], backward=True)
        builder.add_operators(RELU, ["aten::threshold_backward"], backward=True)
    return write_xla_table(root, builder.table())


def training_step(root: Path):
    conv = torch.nn.Conv2d(2, 3, 3)
    step = as_step((lambda x: torch.relu(conv(x)), (torch.randn(1, 2, 5, 5),), lambda out: out.sum()))
    report = check_step(step, root=root)
    return {(f.operator, f.dtype): f for f in report.columns[0].operators}, report


def test_a_models_backward_kernel_meets_the_rows_backward_column_and_its_mismatch(tmp_path):
    found, report = training_step(kb(tmp_path))
    backward = found["aten::convolution_backward", "float32"]
    assert backward.status == WRONG and report.failed
    (evidence,) = backward.evidence
    assert evidence.what.startswith(f"opinfo-coverage row {CONV} [float32 backward]: mismatch")
    assert evidence.detail == MISMATCH
    assert found["aten::convolution", "float32"].status == NATIVE  # the forward column speaks for the forward
    relu = found["aten::threshold_backward", "float32"]  # named for no forward of relu's: its one backward kernel
    assert relu.status == NATIVE and f"row {RELU} [float32 backward]" in relu.evidence[0].what


def test_a_table_without_backward_columns_has_no_answer_for_a_backward_kernel(tmp_path):
    found, _ = training_step(kb(tmp_path, backward=False))
    backward = found["aten::convolution_backward", "float32"]
    assert backward.status == NOT_COVERED and not backward.evidence
    assert "this table records no backward pass" in backward.note


def test_a_row_speaks_for_the_backward_kernels_of_what_it_is_named_for_and_not_for_what_merely_took_part():
    assert own_backward_operators(CONV, ["aten::convolution"], ["aten::convolution_backward", "aten::mul.Tensor"]) == {
        "aten::convolution_backward"
    }
    loss = own_backward_operators("nn.functional.nll_loss", ["aten::nll_loss_forward"], ["aten::nll_loss_backward"])
    assert loss == {"aten::nll_loss_backward"}
    relu = own_backward_operators(RELU, ["aten::relu"], ["aten::threshold_backward", "aten::zeros_like"])
    assert relu == {"aten::threshold_backward"}  # its one backward kernel, layout aside
    # a composite row whose gradients run other kernels beside a backward kernel speaks for none of them
    cond = ["aten::slice_backward", "aten::mul.Tensor", "aten::linalg_svd"]
    assert own_backward_operators("linalg.cond", ["aten::linalg_svd"], cond) == set()
    two = ["aten::_log_softmax_backward_data", "aten::threshold_backward"]
    assert own_backward_operators("composite", ["aten::add.Tensor"], two) == set()
