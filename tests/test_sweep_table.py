"""The coverage table a record carries: validation, bounds, counts, CSV."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from torchclaims.evidence.coverage_table import MAX_DETAIL, SweepTable, TableBuilder
from torchclaims.sphinxext.views.downloads import table_csv

LEGEND = {"N": "native", "M": "mismatch", "X": "excluded"}


def small_table() -> SweepTable:
    builder = TableBuilder(
        "operators",
        "operator",
        ["add", "mul", "sin"],
        {"float32": LEGEND, "int64": LEGEND},
        {"n": "matched", "m": "mismatch"},
        {"k": "keepdim=True"},
    )
    builder.set("add", "float32", "N", samples="nn", arguments="2/ 1/k")
    builder.set("mul", "float32", "M", "sample 1: max err 3 (atol 0.001)", "nm")
    builder.set("sin", "float32", "X", "op_db skips it")
    builder.set("add", "int64", "N", samples="n")
    builder.add_operators("add", ["aten::add.Tensor"])
    builder.count_overloads(["aten::add.Tensor", "aten::mul.Tensor", "aten::sin"])
    return builder.table()


def test_a_table_states_its_denominator_in_dispatcher_overloads_and_each_cells_argument_kinds():
    table = small_table()
    assert table.overloads.summary() == "1 of 3 backend-relevant overloads measured, 2 unknown"
    assert table.overloads.unknown == ["aten::mul.Tensor", "aten::sin"]
    assert table.column("float32").arguments == {0: "2/ 1/k"}
    data = json.loads(table.model_dump_json())
    del data["overloads"], data["argument_legend"]
    for column in data["columns"]:
        del column["arguments"]
    assert SweepTable.model_validate(data).overloads is None  # a table recorded before they were kept still reads


def test_the_builder_keeps_argument_tokens_only_where_they_pair_with_the_sample_codes():
    builder = TableBuilder("operators", "operator", ["add"], {"float32": LEGEND}, {"n": "matched"}, {"k": "keepdim"})
    builder.set("add", "float32", "N", samples="nn", arguments="2/")
    assert builder.table().column("float32").arguments == {}


def test_builder_fills_unset_cells_as_not_listed_and_counts_only_listed():
    table = small_table()
    int64 = table.column("int64")
    assert int64.codes == "N.."
    assert int64.listed == 1
    assert table.column("float32").count() == {"N": 1, "M": 1, "X": 1}
    assert table.summary()[1] == "int64: 1 listed; 1 native (100.0%)"
    assert table.summary()[0].startswith("float32: 3 listed; 1 native (33.3%)")


def test_round_trip_through_json_keeps_every_cell():
    table = small_table()
    again = SweepTable.model_validate(json.loads(table.model_dump_json()))
    assert again == table
    assert list(again.cells())[1] == ("mul", "float32", "mismatch", "sample 1: max err 3 (atol 0.001)", "nm")


def test_csv_has_one_line_per_listed_cell_and_no_formulas():
    lines = table_csv(small_table()).splitlines()
    assert lines[0] == "operator,column,outcome,samples,detail"
    assert len(lines) == 1 + 4
    assert "mul,float32,mismatch,nm,sample 1: max err 3 (atol 0.001)" in lines
    builder = TableBuilder("operators", "operator", ["=HYPERLINK(1)"], {"float32": LEGEND})
    builder.set("=HYPERLINK(1)", "float32", "M", "@cmd")
    assert table_csv(builder.table()).splitlines()[1] == "'=HYPERLINK(1),float32,mismatch,,'@cmd"


def test_details_are_clipped_to_one_bounded_line():
    builder = TableBuilder("operators", "operator", ["add"], {"float32": LEGEND})
    builder.set("add", "float32", "M", "line one\nline two " + "x" * 1000)
    detail = builder.table().column("float32").details[0]
    assert len(detail) == MAX_DETAIL and "\n" not in detail and detail.endswith("...")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["columns"][0].update(codes="N"), "has 1 codes for 3 rows"),
        (lambda d: d["columns"][0].update(codes="NQ."), "codes \\['Q'\\] that its legend does not name"),
        (lambda d: d.update(rows=["add", "add", "sin"]), "a row name appears twice"),
        (lambda d: d["columns"][0]["details"].update({"7": "x"}), "row index 7, outside the table"),
        (lambda d: d["columns"][0]["samples"].update({"0": "nz"}), "sample codes \\['z'\\]"),
        (lambda d: d["columns"][0]["legend"].update({"long": "x"}), "legend"),
        (lambda d: d["columns"][0]["details"].update({"1": "y" * (MAX_DETAIL + 1)}), "details"),
        (lambda d: d.update(rows=[f"op{i}" for i in range(6000)]), "rows"),
        (lambda d: d["columns"][0]["arguments"].update({"0": "2/"}), "1 argument tokens for 2 sample codes at row 0"),
        (lambda d: d["columns"][0]["arguments"].update({"2": "2/"}), "1 argument tokens for 0 sample codes at row 2"),
        (lambda d: d["columns"][0]["arguments"].update({"0": "2/z 1/"}), "argument kinds \\['z'\\]"),
        (lambda d: d["columns"][0]["arguments"].update({"0": "/2/ 1/"}), "'/2/' at row 0 is not ranks/letters"),
        (lambda d: d["columns"][0]["arguments"].update({"0": "2/<b> 1/"}), "arguments"),
        (lambda d: d["columns"][0]["arguments"].update({"0": "2/ " * 1000}), "arguments"),
        (lambda d: d["overloads"].update(measured=9), "9 overloads measured of only 3"),
        (lambda d: d["overloads"].update(unknown=["aten::x"] * 3), "3 unknown overloads listed"),
        (lambda d: d["overloads"].update(unknown=["<b>"]), "overloads.unknown"),
        (lambda d: d["overloads"].update(relevant=-1), "overloads.relevant"),
        (lambda d: d.update(kernels={"9": ["aten::x"]}), "kernels for row index 9, outside the table"),
        (lambda d: d.update(kernels={"0": ["aten::x"] * 65}), "kernels of row 'add': 65"),
        (lambda d: d.update(backward_operators={"3": ["aten::x"]}), "backward_operators for row index 3, outside"),
        (lambda d: d.update(backward_operators={"1": ["aten::x"] * 65}), "backward_operators of row 'mul': 65"),
        (lambda d: d.update(backward_operators={"1": ["<script>"]}), "backward_operators.1.0"),
    ],
)
def test_hostile_tables_are_rejected_with_the_reason(change, message):
    data = json.loads(small_table().model_dump_json())
    change(data)
    with pytest.raises(ValidationError, match=message):
        SweepTable.model_validate(data)


def test_builder_rejects_a_code_outside_the_legend():
    builder = TableBuilder("operators", "operator", ["add"], {"float32": LEGEND})
    with pytest.raises(ValueError, match="not in the legend"):
        builder.set("add", "float32", "Z")


def test_a_results_file_with_a_broken_table_is_rejected_naming_file_and_field(tmp_path):
    from factories import make_record, write_results_file
    from torchclaims.errors import InvalidFileError
    from torchclaims.evidence.results import read_results

    path = write_results_file(tmp_path / "r.json", [make_record("opinfo-coverage", tables=[small_table()])])
    assert read_results(path).records[0].tables[0] == small_table()
    data = json.loads(path.read_text())
    data["records"][0]["tables"][0]["columns"][0]["codes"] = "NN"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as caught:
        read_results(path)
    assert str(path) in str(caught.value) and "records.0.tables.0" in str(caught.value)
    assert "has 2 codes for 3 rows" in str(caught.value)


def test_the_runner_deadline_reaches_the_script(monkeypatch):
    import time

    from torchclaims.verify import DEADLINE_ENV, verification

    monkeypatch.setenv("TORCHCLAIMS_BACKEND", "cpu")
    monkeypatch.delenv(DEADLINE_ENV, raising=False)
    v = verification("any-claim")
    assert v.time_left() is None
    monkeypatch.setenv(DEADLINE_ENV, str(time.time() + 100))
    assert 95 < v.time_left() <= 100
    monkeypatch.setenv(DEADLINE_ENV, str(time.time() - 5))
    assert v.time_left() == 0.0


def test_a_row_names_dispatched_operators_of_any_namespace_and_nothing_else():
    """torch defines operators outside aten (torch_nn:: in 2.13); a name that is not
    namespace::operator[.overload] is refused."""
    builder = TableBuilder("operators", "operator", ["add"], {"float32": LEGEND})
    builder.add_operators("add", ["aten::add.Tensor", "torch_nn::_linear_cross_entropy_batch_chunked"])
    assert builder.table().operators == {0: ["aten::add.Tensor", "torch_nn::_linear_cross_entropy_batch_chunked"]}
    builder.add_operators("add", ["<img src=x>"])
    with pytest.raises(ValueError, match="operators"):
        builder.table()


def test_the_operators_page_states_the_denominator_in_overloads_and_links_the_unknown_ones():
    from rendered import written
    from torchclaims.sphinxext.directives.coverage_tables import _overloads, unknown_overloads

    table = small_table()
    html = written(_overloads(table, "run-unknown-overloads.txt"))
    assert "1 of 3 backend-relevant overloads measured, 2 unknown" in html
    assert '<a href="run-unknown-overloads.txt">The unknown overloads (text)</a>' in html
    assert "aten::sin" not in html  # thousands of names on a real table: a download, not the page
    assert unknown_overloads(table) == "aten::mul.Tensor\naten::sin\n"
    data = json.loads(table.model_dump_json())
    data["overloads"]["definition"] = "<script>x</script>"
    assert "&lt;script&gt;" in written(_overloads(SweepTable.model_validate(data), "x.txt"))
    del data["overloads"]
    assert _overloads(SweepTable.model_validate(data), "x.txt") is None  # a table recorded before: nothing stated
    assert unknown_overloads(SweepTable.model_validate(data)) == ""


def test_the_denominator_counts_the_overloads_a_rows_gradients_dispatched_which_the_row_keeps_apart():
    builder = TableBuilder("operators", "operator", ["mul"], {"float32": LEGEND})
    builder.add_operators("mul", ["aten::mul.Tensor"])
    builder.add_operators("mul", ["aten::mul.Tensor", "aten::sum.dim_IntList"], backward=True)
    builder.count_overloads(["aten::mul.Tensor", "aten::sum.dim_IntList", "aten::sin"])
    table = builder.table()
    assert table.operators == {0: ["aten::mul.Tensor"]}
    assert table.backward_operators == {0: ["aten::mul.Tensor", "aten::sum.dim_IntList"]}
    assert table.overloads.summary() == "2 of 3 backend-relevant overloads measured, 1 unknown"


def test_the_operators_page_shows_a_backward_column_with_its_outcomes_and_denominator():
    from rendered import written
    from torchclaims.coverage.operators import BACKWARD_OUTCOMES, OUTCOMES
    from torchclaims.sphinxext.directives.coverage_tables import _bar_svg, _overloads, _summary

    builder = TableBuilder(
        "operators", "operator", ["conv2d", "gelu"], {"float32": OUTCOMES, "float32 backward": BACKWARD_OUTCOMES}
    )
    builder.set("conv2d", "float32", "R", "run on the device: sample 0: RuntimeError: no")
    builder.set("conv2d", "float32 backward", "W", "forward with gradients on the device: sample 0: RuntimeError: no")
    builder.set("gelu", "float32", "N")
    builder.set("gelu", "float32 backward", "M", "1 of 2 samples differ")
    builder.add_operators("gelu", ["aten::gelu_backward"], backward=True)
    builder.count_overloads(["aten::gelu_backward", "aten::gelu"])
    table = builder.table()
    summary = " ".join(written(_summary(table)).split())
    assert "<p>float32 backward</p></th>" in summary
    # its own column's share: one of its two cells
    assert "<p>not run (forward failed)</p></td> <td><p>—</p></td> <td><p>1 (50.0%)</p></td>" in summary
    assert "<title>not run (forward failed): 1 of 2 (50.0%)</title>" in written(_bar_svg(table))
    assert "calls and gradients dispatched them" in written(_overloads(table, "x.txt"))


def test_an_opened_row_loads_the_operators_its_gradients_dispatched_and_the_first_view_leaves_them_out():
    from torchclaims.sphinxext.views.sweep_data import first_view, row_details

    builder = TableBuilder("operators", "operator", ["gelu"], {"float32": LEGEND, "float32 backward": LEGEND})
    builder.add_operators("gelu", ["aten::gelu_backward"], backward=True)
    table = builder.table()
    assert row_details(table)["backward_operators"] == {"0": ["aten::gelu_backward"]}
    assert "backward_operators" not in first_view(table)
