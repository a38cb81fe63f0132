"""The vendor's own word: a validated file per backend, shown beside our measurements, never as a verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import make_record, write_claim
from test_backend_summary import XLA_CPU
from torchclaims.claims import load_claims
from torchclaims.errors import InvalidFileError
from torchclaims.evidence.coverage_table import TableBuilder
from torchclaims.evidence.store import Entry, Store, load_store
from torchclaims.sphinxext.views.backend_summary import summarize
from torchclaims.sphinxext.views.grid import Grid
from torchclaims.sphinxext.views.vendor_word import compare_api, compare_operator, operator_tables
from torchclaims.vendor_word import Statement, Subject, load_vendor_word, load_vendor_words

ROOT = Path(__file__).resolve().parents[1]
STATEMENT = """
[[statements]]
subject = "operator"
name = "aten::embedding"
status = "supported"
quote = "The following list the aten operators supported by torch-neuronx."
url = "https://example.org/ops.html"
release = "2.29.0"
date = "2026-03-13"
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def test_a_valid_file_loads_and_a_broken_one_is_reported_with_its_file_and_field_never_taking_others_down(tmp_path):
    folder = tmp_path / "vendor_word"
    write(folder, "neuron", 'backend = "neuron"\npublisher = "AWS"\n' + STATEMENT)
    write(folder, "tpu", 'backend = "tpu"\npublisher = "Google"\n' + STATEMENT.replace('"supported"', '"fine"'))
    write(folder, "rocm", "backend = [")
    found = load_vendor_words(folder)
    assert list(found.by_backend) == ["neuron"]
    problems = {(p.path.name, p.field) for p in found.problems}
    assert ("tpu.toml", "statements.0.status") in problems
    assert ("rocm.toml", "") in problems


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (('name = "aten::embedding"', 'name = "embedding"'), "statements.0.name", "aten::embedding"),
        (('url = "https://', 'url = "http://'), "statements.0.url", "https"),
        (('date = "2026-03-13"', 'date = "March 2026"'), "statements.0.date", "pattern"),
        (('quote = "The', 'quote = "' + "word " * 40 + "The"), "statements.0.quote", "under 40 words"),
        (('release = "2.29.0"', 'release = "2.29.0"\nmeasured_by = ["x"]'), "statements.0.measured_by", "operator"),
        (('release = "2.29.0"', 'release = "2.29.0"\ncompare_with = ["tpuv9"]'), "statements.0.compare_with", "tpuv9"),
        (('release = "2.29.0"', 'release = "2.29.0"\nverdict = "holds"'), "statements.0.verdict", "xtra"),
    ],
)
def test_each_field_is_checked_and_the_error_names_the_file_and_the_field(tmp_path, change, field, message):
    path = write(tmp_path, "neuron", 'backend = "neuron"\npublisher = "AWS"\n' + STATEMENT.replace(*change))
    with pytest.raises(InvalidFileError) as raised:
        load_vendor_word(path)
    [problem] = raised.value.problems
    assert problem.path == path and problem.field == field and message in problem.message


def test_the_file_is_named_for_its_backend(tmp_path):
    path = write(tmp_path, "tpu", 'backend = "neuron"\npublisher = "AWS"\n' + STATEMENT)
    with pytest.raises(InvalidFileError, match="must equal the file name"):
        load_vendor_word(path)


OUTCOMES = {"N": "native", "F": "CPU fallback", "M": "mismatch", "R": "raises", "X": "excluded by OpInfo"}


def table_grid(tmp_path, codes: dict[str, str]) -> Grid:
    """An operator table on XLA on the CPU: rows for embedding and div (float32, int64 columns)."""
    builder = TableBuilder(
        "operators",
        "operator",
        ["nn.functional.embedding", "div.trunc", "embedding_bag"],
        {"float32": OUTCOMES, "int64": OUTCOMES},
    )
    for row, (f32, i64) in codes.items():
        builder.set(row, "float32", f32)
        builder.set(row, "int64", i64)
    write_claim(tmp_path / "claims", "op-table", about=["xla"])
    store = Store()
    store.add(Entry(make_record("op-table", environment=XLA_CPU, tables=[builder.table()]), "xla.json"))
    return Grid(load_claims(tmp_path / "claims"), store)


def statement(name: str, status: str = "supported", **fields) -> Statement:
    return Statement(
        subject=Subject.OPERATOR,
        name=name,
        status=status,
        quote="q",
        url="https://x.org",
        release="r",
        date="2026",
        **fields,
    )


def test_an_operator_statement_agrees_or_differs_with_the_rows_that_are_that_operator(tmp_path):
    grid = table_grid(tmp_path, {"nn.functional.embedding": "NX", "div.trunc": "NM", "embedding_bag": "RR"})
    tables = operator_tables(grid)
    ours, agreement = compare_operator(statement("aten::embedding", compare_with=["xla"]), "neuron", tables)
    # excluded cells judge nothing
    assert ours == "XLA on the CPU (torch_xla 2.9.0 on torch 2.9.0): native 1 (dtype cells)"
    assert agreement == "XLA on the CPU: agrees"  # embedding_bag, another operator, is not its row
    ours, agreement = compare_operator(statement("aten::div", compare_with=["xla"]), "neuron", tables)
    assert agreement == "XLA on the CPU: differs (mismatch)"
    _, agreement = compare_operator(statement("aten::div", "cpu-fallback", compare_with=["xla"]), "neuron", tables)
    assert agreement == "XLA on the CPU: differs (mismatch, native)"


def test_an_operator_is_compared_only_with_the_tables_it_names_and_absence_is_said(tmp_path):
    tables = operator_tables(table_grid(tmp_path, {"nn.functional.embedding": "NN"}))
    assert compare_operator(statement("aten::embedding"), "neuron", tables) == (
        "no row of our operator tables on neuron is this operator",
        "not measured",
    )
    assert compare_operator(statement("aten::pixel_shuffle", compare_with=["xla"]), "neuron", tables)[1] == (
        "not measured"
    )


def test_an_api_statement_shows_how_the_claims_that_measure_it_read_and_is_never_judged_by_a_stand_in(tmp_path):
    write_claim(tmp_path / "claims", "compile-dynamic", about=["neuron", "xla"])
    store = Store()
    store.add(Entry(make_record("compile-dynamic", environment=XLA_CPU), "xla.json"))
    summary = summarize(Grid(load_claims(tmp_path / "claims"), store), "neuron")
    api = Statement(
        subject=Subject.API,
        name="torch.compile(dynamic=True)",
        status="unsupported",
        quote="q",
        url="https://x.org",
        release="r",
        date="2026",
        measured_by=["compile-dynamic"],
    )
    ours, agreement = compare_api(api, summary)
    assert "works as written (the claim is about XLA on the CPU too: it held there)" in ours
    assert agreement == "not yet measured on neuron hardware"
    assert compare_api(api.model_copy(update={"measured_by": []}), summary) == (
        "no claim of ours measures it",
        "not measured",
    )


def test_the_committed_vendor_files_load_and_name_only_claims_that_exist():
    found = load_vendor_words(ROOT / "vendor_word")
    assert found.problems == [] and found.by_backend
    claims = load_claims(ROOT / "claims").claims
    named = {c for word in found.by_backend.values() for s in word.statements for c in s.measured_by}
    assert named and named <= set(claims)
    # and every operator it compares has a row in the committed tables it names, or says it has none
    grid = Grid(load_claims(ROOT / "claims"), load_store({}, None, ROOT / "results"))
    tables = operator_tables(grid)
    operators = [s for word in found.by_backend.values() for s in word.statements if s.subject is Subject.OPERATOR]
    measured = [s.name for s in operators if compare_operator(s, "neuron", tables)[1] != "not measured"]
    assert measured, "no vendor statement about an operator meets a row of our tables"
