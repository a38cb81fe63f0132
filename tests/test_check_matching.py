"""``torchclaims check``: which coverage rows speak for a model's operators, and which of their samples apply.

Against the committed tables, the example models in examples/check/ (a vision block and a transformer block,
2-D to 4-D tensors throughout) find convolution, layer norm, ``index_put_``, the upsample kernels and
``scatter.src`` in the rows that measured them, cite SDPA's row on every backend, and are not failed by a
0-dim sample's raise. Against a knowledge base written here, each reading of a cell's samples is shown to
both spare and flag a model.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from factories import (
    XLA_ENV,
    make_environment,
    make_kb,
    make_record,
    script_info,
    write_claim,
    write_results_file,
    write_script,
    write_xla_table,
)
from torchclaims.check import check_step
from torchclaims.check.names import own_operators, subjects
from torchclaims.check.report import BY_NAME, FALLBACK, NATIVE, NOT_COVERED, RAISES, WRONG
from torchclaims.check.target import as_step, load_target
from torchclaims.coverage.operators import OUTCOMES, SAMPLE_CODES
from torchclaims.evidence.coverage_table import ARGUMENT_KINDS as KIND_LEGEND
from torchclaims.evidence.coverage_table import TableBuilder

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "check"
COLUMNS = ("cpu · torch 2.13.0+cu130 (CUDA build)", "xla · torch_xla 2.9.0 on torch 2.9.0+cu128 (CUDA build)")
ZERO_DIM_RAISE = "sample 2: RuntimeError: Value out of range (expected to be in range of [0, -1], but got 0)"


def committed(target: str):
    return check_step(load_target(str(EXAMPLES / target)), root=ROOT)


def finding(report, label: str, operator: str, dtype: str = "float32"):
    (col,) = [c for c in report.columns if c.label == label]
    (found,) = [f for f in col.operators if f.operator == operator and f.dtype == dtype]
    return found


@pytest.fixture(scope="module")
def vision():
    return committed("vision_block.py:vision_step")


@pytest.fixture(scope="module")
def transformer():
    return committed("transformer_block.py:transformer_step")


# -- the examples, against the committed tables ----------------------------------------------------------------


@pytest.mark.parametrize("label", COLUMNS)
@pytest.mark.parametrize(
    "operator, row",
    [
        ("aten::convolution", "nn.functional.conv2d"),
        ("aten::native_layer_norm", "nn.functional.layer_norm"),
        ("aten::index_put_", "index_put"),
        ("aten::upsample_bilinear2d", "nn.functional.interpolate.bilinear"),
        ("aten::upsample_bicubic2d", "nn.functional.interpolate.bicubic"),
        ("aten::scatter.src", "scatter"),
    ],
)
def test_core_operators_are_found_in_the_rows_that_measured_them(vision, label, operator, row):
    """Those rows also dispatched operators the model never calls (conv2d's samples add and view_as_real,
    scatter's also scatter.reduce): a row speaks for what it is named for, whatever else took part."""
    found = finding(vision, label, operator)
    assert found.status != NOT_COVERED, found.note
    assert any(f"row {row} [float32]" in e.what for e in found.evidence)


def test_an_in_place_operator_is_measured_through_its_out_of_place_row(vision):
    (evidence,) = finding(vision, COLUMNS[1], "aten::index_put_").evidence
    assert evidence.what.endswith("measured as aten::index_put")


@pytest.mark.parametrize("label", COLUMNS)
def test_sdpa_is_looked_up_through_its_family_and_its_row_cited(transformer, label):
    """The CPU dispatches SDPA as _scaled_dot_product_flash_attention_for_cpu; the row of the op family is found
    on every backend by the family's name (op_db's samples take SDPA's math path on the CPU), and says so."""
    found = finding(transformer, label, "aten::_scaled_dot_product_flash_attention_for_cpu")
    (evidence,) = found.evidence
    assert evidence.what.startswith("opinfo-coverage row nn.functional.scaled_dot_product_attention [float32]: ")
    assert "matched by its family's name" in evidence.what and evidence.match == BY_NAME
    backward = finding(transformer, label, "aten::_scaled_dot_product_flash_attention_for_cpu_backward")
    assert backward.status == NOT_COVERED and "backward kernel" in backward.note


@pytest.mark.parametrize(
    "example, operator, row",
    [
        ("vision", "aten::cumsum", "cumsum"),
        ("transformer", "aten::_softmax", "softmax"),
        ("transformer", "aten::topk", "topk"),
    ],
)
def test_a_raise_only_for_a_0_dim_sample_does_not_apply_to_a_model_without_one(
    vision, transformer, example, operator, row
):
    report = {"vision": vision, "transformer": transformer}[example]
    found = finding(report, COLUMNS[1], operator)
    assert found.status == NATIVE
    (evidence,) = [e for e in found.evidence if f"row {row} [float32]: raises" in e.what]
    assert "had a 0-dim input; your calls: " in evidence.what and "not affected" in evidence.what


def test_a_raise_on_samples_whose_argument_kinds_the_model_lacks_does_not_apply(vision):
    # the table records each sample's argument kinds: logsumexp raised on two 0-dim samples; the model's calls are 3-D
    found = finding(vision, COLUMNS[1], "aten::logsumexp")
    assert found.status == NATIVE
    (evidence,) = found.evidence
    assert "samples 0, 5 of 8 had a 0-dim input; your calls: 3-D inputs: not affected" in evidence.what


def test_the_example_blocks_pass_and_each_backend_states_its_denominator(vision, transformer):
    for report in (vision, transformer):
        assert not report.failed
        (xla,) = [b for b in report.backends if b.backend == "xla"]
        assert xla.answered + xla.unknown == xla.pairs == len(report.used) and xla.answered > 0
        assert f"{xla.answered} of {xla.pairs} pairs have a measured answer" in xla.line()
        assert report.as_dict()["backends"][4]["answered"] == xla.answered


# -- a knowledge base whose samples are known ----------------------------------------------------------------


def sampled_kb(root: Path, cells: dict[str, tuple]) -> Path:
    """An operator table whose rows are ``row -> (cell code, sample codes, detail, operators dispatched[,
    argument tokens])``."""
    make_kb(root, "opinfo-coverage")
    builder = TableBuilder("operators", "operator", list(cells), {"float32": OUTCOMES}, SAMPLE_CODES, KIND_LEGEND)
    for row, (code, samples, detail, dispatched, *arguments) in cells.items():
        builder.set(row, "float32", code, detail, samples, *arguments)
        builder.add_operators(row, dispatched)
    return write_xla_table(root, builder.table())


def cumsum_of(root: Path, x: torch.Tensor):
    report = check_step(as_step((lambda t: t.cumsum(-1), (x,))), root=root)
    (found,) = [f for f in report.columns[0].operators if f.operator == "aten::cumsum"]
    return report, found


def test_a_0_dim_samples_raise_spares_2d_calls_and_flags_0_dim_ones(tmp_path):
    root = sampled_kb(tmp_path, {"cumsum": ("R", "nnrn", ZERO_DIM_RAISE, ["aten::cumsum"])})
    _, found = cumsum_of(root, torch.randn(3, 4))
    assert found.status == NATIVE
    assert "sample 2 of 4 had a 0-dim input; your calls: 2-D inputs: not affected" in found.evidence[0].what
    _, found = cumsum_of(root, torch.tensor(2.0))
    assert found.status == RAISES and "as your calls do: affected" in found.evidence[0].what


def test_a_bad_sample_whose_inputs_nothing_reveals_stands(tmp_path):
    detail = "2 of 4 samples differ; sample 1: Mismatched elements: 3 / 125; also raised: " + ZERO_DIM_RAISE
    root = sampled_kb(tmp_path, {"cumsum": ("M", "nmrm", detail, ["aten::cumsum"])})
    report, found = cumsum_of(root, torch.randn(3, 4))
    assert found.status == WRONG and report.failed
    what = found.evidence[0].what
    assert "sample 2 of 4 had a 0-dim input" in what and "samples 1, 3 of 4 went wrong with inputs" in what
    assert "could not tell whether yours match" in what


def test_recorded_argument_kinds_say_which_bad_samples_a_models_calls_meet_without_any_quoted_problem(tmp_path):
    # nothing in the detail reveals an input: only the tokens the sweep recorded per sample do
    detail = "sample 2: RuntimeError: boom; also no kernel: sample 3: NotImplementedError"
    root = sampled_kb(tmp_path, {"cumsum": ("R", "nnrk", detail, ["aten::cumsum"], "2/ 1/n 0/ 2/c")})
    _, found = cumsum_of(root, torch.randn(3, 4))
    assert found.status == NATIVE
    what = found.evidence[0].what
    assert "samples 2, 3 of 4 had a 0-dim input or a complex input; your calls: 2-D inputs: not affected" in what
    _, found = cumsum_of(root, torch.tensor(2.0))
    assert found.status == RAISES
    assert "sample 2 of 4 had a 0-dim input, as your calls do: affected" in found.evidence[0].what
    assert "sample 3 of 4 had a complex input; your calls: 0-D inputs: not affected" in found.evidence[0].what
    root = sampled_kb(tmp_path / "plain", {"cumsum": ("M", "nm", "", ["aten::cumsum"], "2/ 2/")})
    report, found = cumsum_of(root, torch.randn(3, 4))
    assert found.status == WRONG and report.failed  # a plain 2-D sample stands for 2-D calls
    assert "sample 1 of 2 had no argument kind your calls lack: affected" in found.evidence[0].what


def test_a_sample_that_went_wrong_only_on_an_empty_input_spares_calls_with_elements_and_flags_empty_ones(tmp_path):
    # the layer_norm backward of torch_xla 2.9.0: its output on a (0, 1) input requires no gradients
    detail = "1 of 3 samples differ; compare: sample 2: none of the device's outputs requires gradients"
    root = sampled_kb(tmp_path, {"cumsum": ("M", "nnm", detail, ["aten::cumsum"], "2/ 1/ 2/e")})
    report, found = cumsum_of(root, torch.randn(3, 4))
    assert found.status == NATIVE and not report.failed
    assert "sample 2 of 3 had an empty input (a dimension of size 0); your calls: 2-D inputs: not affected" in (
        found.evidence[0].what
    )
    report, found = cumsum_of(root, torch.randn(0, 4))
    assert found.status == WRONG and report.failed
    assert "sample 2 of 3 had an empty input (a dimension of size 0), as your calls do: affected" in (
        found.evidence[0].what
    )


@pytest.mark.parametrize(
    "detail, status",
    [
        ("CPU fallback: aten::cumsum_other.out", NATIVE),  # the fallback was in another operator
        ("CPU fallback: aten::cumsum", FALLBACK),
        ("CPU fallback: aten::a, aten::b, aten::c...", FALLBACK),  # clipped: the list may go on with cumsum
    ],
)
def test_a_cells_cpu_fallback_counts_only_for_the_operators_it_names(tmp_path, detail, status):
    root = sampled_kb(tmp_path, {"cumsum": ("F", "nfnf", detail, ["aten::cumsum", "aten::cumsum_other.out"])})
    assert cumsum_of(root, torch.randn(3, 4))[1].status == status


def test_a_row_speaks_for_what_it_is_named_for_not_for_what_took_part(tmp_path):
    root = sampled_kb(
        tmp_path,
        {
            "cumsum": ("N", "nn", "", ["aten::cumsum", "aten::flip"]),  # flip took part; the model never calls it
            "cummax": ("M", "mm", "", ["aten::cumsum", "aten::cummax"]),  # named for cummax: not blamed on cumsum
        },
    )
    _, found = cumsum_of(root, torch.randn(3, 4))
    assert found.status == NATIVE and [e.what for e in found.evidence] == [
        "opinfo-coverage row cumsum [float32]: native"
    ]


def test_a_cast_row_speaks_only_for_casts_to_its_dtype(tmp_path):
    root = sampled_kb(
        tmp_path,
        {
            "cfloat": ("R", "rr", "sample 0: RuntimeError: Type not supported: ComplexFloat", ["aten::_to_copy"]),
            "long": ("N", "nn", "", ["aten::_to_copy"]),
        },
    )

    def cast(fn):
        report = check_step(as_step((fn, (torch.randn(3, 4),))), root=root)
        (found,) = report.columns[0].operators
        return found

    assert cast(lambda t: t.long()).status == NATIVE
    assert cast(lambda t: t.to(torch.complex64)).status == RAISES
    double = cast(lambda t: t.double())
    assert double.status == NOT_COVERED and "no cast row for a cast to float64" in double.note


@pytest.mark.parametrize(
    "row, dispatched, expected",
    [
        ("nn.functional.interpolate.bicubic", ["aten::upsample_bicubic2d"], {"aten::upsample_bicubic2d"}),
        (
            "nn.functional.conv2d",
            ["aten::add.Tensor", "aten::convolution", "aten::view_as_real"],
            {"aten::convolution"},
        ),
        ("square", ["aten::pow.Tensor_Scalar"], {"aten::pow.Tensor_Scalar"}),  # named for none: its one kernel
        ("nn.functional.avg_pool1d", ["aten::avg_pool2d", "aten::squeeze.dim"], {"aten::avg_pool2d"}),
        ("nn.functional.pad.reflect", ["aten::reflection_pad1d", "aten::reflection_pad2d"], None),
        ("cov", ["aten::mm", "aten::div.Tensor", "aten::sum"], set()),  # composes several kernels: none
    ],
)
def test_own_operators(row, dispatched, expected):
    assert own_operators(row, dispatched) == (set(dispatched) if expected is None else expected)


def test_subjects_join_a_family_but_not_its_backward():
    assert "aten::scaled_dot_product_attention" in subjects("aten::_scaled_dot_product_efficient_attention")
    assert "aten::scaled_dot_product_attention" not in subjects("aten::_scaled_dot_product_flash_attention_backward")
    assert "aten::index_put" in subjects("aten::index_put_")


def test_a_defect_claim_about_one_backends_kernel_speaks_for_the_family(tmp_path):
    """A claim naming the CUDA kernel of SDPA flags the kernel the CPU dispatches for the same call."""
    root = sampled_kb(tmp_path, {})
    write_claim(
        root / "claims",
        "defect-sdpa",
        topic="op-coverage",
        aten_operators=["aten::_scaled_dot_product_efficient_attention"],
    )
    write_script(root, "defect-sdpa")
    records = [make_record("defect-sdpa", "refuted", environment=XLA_ENV, script=script_info(root, "defect-sdpa"))]
    write_results_file(root / "results" / "defect.json", records, make_environment(**XLA_ENV))
    q = torch.randn(1, 2, 4, 8)
    report = check_step(as_step((lambda t: torch.nn.functional.scaled_dot_product_attention(t, t, t), (q,))), root=root)
    (col,) = report.columns
    (sdpa,) = [f for f in col.operators if f.operator.startswith("aten::_scaled_dot_product_")]
    assert sdpa.status == WRONG and report.failed
