"""Per-row changes of coverage tables between two runs: the engine and `torchclaims diff`."""

from __future__ import annotations

from factories import make_environment, make_record, write_results_file
from torchclaims.cli import main
from torchclaims.coverage.operators import OUTCOMES
from torchclaims.evidence.coverage_table import TableBuilder
from torchclaims.history.changes import ABSENT, table_changes
from torchclaims.history.upgrades import coverage_moves


def ops_table(cells: dict[tuple[str, str], str], rows=("add", "histc", "norm")):
    builder = TableBuilder("operators", "operator", list(rows), {"float32": OUTCOMES, "int64": OUTCOMES})
    for (row, column), code in cells.items():
        builder.set(row, column, code, f"detail of {row}/{column}/{code}")
    return builder.table()


OLD = {("add", "float32"): "N", ("histc", "float32"): "F", ("norm", "float32"): "N", ("add", "int64"): "N"}
NEW = {("add", "float32"): "N", ("histc", "float32"): "N", ("norm", "float32"): "M", ("norm", "int64"): "R"}


def test_changes_name_each_cell_that_moved_with_the_new_detail():
    old = make_record("opinfo-coverage", "refuted", tables=[ops_table(OLD)])
    new = make_record("opinfo-coverage", "refuted", tables=[ops_table(NEW)])
    moved = {(c.row, c.column): (c.old, c.new) for c in table_changes(old, new)}
    assert moved == {
        ("histc", "float32"): ("CPU fallback", "native"),
        ("norm", "float32"): ("native", "mismatch"),
        ("norm", "int64"): (ABSENT, "raises"),
        ("add", "int64"): ("native", ABSENT),
    }
    norm = [c for c in table_changes(old, new) if c.row == "norm" and c.column == "float32"][0]
    assert norm.detail == "detail of norm/float32/M"


def test_rows_present_in_one_run_only_count_as_leaving_or_joining_the_list():
    old = make_record("opinfo-coverage", tables=[ops_table({("add", "float32"): "N"}, rows=("add",))])
    new = make_record(
        "opinfo-coverage", tables=[ops_table({("add", "float32"): "N", ("sin", "float32"): "N"}, rows=("add", "sin"))]
    )
    assert [(c.row, c.old, c.new) for c in table_changes(old, new)] == [("sin", ABSENT, "native")]
    assert table_changes(old, make_record("opinfo-coverage")) == []  # no table to compare with


def test_diff_reports_per_operator_changes_grouped_by_transition(tmp_path, capsys):
    old = write_results_file(
        tmp_path / "old.json", [make_record("opinfo-coverage", "refuted", tables=[ops_table(OLD)])]
    )
    newer_env = make_environment(torch="2.14.1")
    new_record = make_record("opinfo-coverage", "refuted", tables=[ops_table(NEW)], environment=newer_env)
    new = write_results_file(tmp_path / "new.json", [new_record], newer_env)
    assert main(["diff", str(old), str(new), "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "opinfo-coverage: 4 table cells changed outcome" in out
    assert "  native -> mismatch (1)\n    norm [float32]\n" in out
    assert "  CPU fallback -> native (1)\n    histc [float32]\n" in out
    main(["diff", str(old), str(new), "--cells", "--root", str(tmp_path)])
    assert "norm [float32]: detail of norm/float32/M" in capsys.readouterr().out


def test_an_upgrade_comparison_lists_the_same_cells_as_diff():
    old = make_record("opinfo-coverage", "refuted", tables=[ops_table(OLD)])
    new = make_record("opinfo-coverage", "refuted", tables=[ops_table(NEW)])
    rows = {(m.what, m.before, m.after) for m in coverage_moves(old, new)}
    assert ("norm [float32]", "native", "mismatch") in rows
    assert len(rows) == len(table_changes(old, new)) == 4
