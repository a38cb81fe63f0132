"""The vendor's own word on an accelerator page, beside what our records measured.

Each statement of ``vendor_word/<backend>.toml`` (torchclaims.vendor_word) is
shown as attributed evidence: the vendor, the release, the date and the source,
never a verdict. Beside it, what our own records say: for an ATen operator, the
rows of every measured operator table that are that operator (one outcome per
dtype, read through the store: results/ and this build), and whether they
agree with the vendor's status; for an API, how the claims that measure it
read for the accelerator (torchclaims.sphinxext.reading). Nothing is typed:
a missing measurement is said to be missing.
"""

from __future__ import annotations

from collections import Counter

from docutils import nodes

from ...evidence.coverage_table import OPERATOR_TABLE, SweepTable
from ...evidence.scope import and_words
from ...vendor_word import Statement, Status, Subject, VendorWord
from .backend_summary import Summary
from .grid import Cell, Grid
from .markup import link, paragraph, table
from .reading import read

# Our outcomes each vendor status agrees with; any other measured outcome differs from it.
AGREES = {
    Status.NATIVE: {"native"},
    Status.SUPPORTED: {"native", "CPU fallback"},
    Status.HOST_ONLY: {"native"},
    Status.CPU_FALLBACK: {"CPU fallback"},
    Status.PARTIAL: {"native", "CPU fallback", "raises", "no kernel"},
    Status.UNSUPPORTED: {"raises", "no kernel"},
}
# Outcomes that say nothing about support: the cell was not compared.
UNJUDGED = {"excluded by OpInfo", "random: not compared", "no CPU reference", "not reached", "harness error"}


def rows_of(table: SweepTable, operator: str) -> list[int]:
    """The rows of an operator table that are ``operator`` ('aten::embedding' is row 'nn.functional.embedding',
    'aten::div' the rows 'div.*'), never those that merely dispatch it among others."""
    name = operator.split("::", 1)[1]
    return [
        i for i, row in enumerate(table.rows) if row in (name, f"nn.functional.{name}") or row.startswith(f"{name}.")
    ]


def outcomes(table: SweepTable, rows: list[int]) -> Counter:
    """Outcome name -> cells, over every dtype column of these rows."""
    found = Counter()
    for column in table.columns:
        for i in rows:
            code = column.codes[i]
            if code in column.legend:
                found[column.legend[code]] += 1
    return found


def operator_tables(grid: Grid) -> list[tuple[Cell, SweepTable]]:
    """The newest operator table of every column that has one, in matrix order."""
    found = []
    for column in grid.columns:
        for claim in grid.claims.executable():
            cell = grid.newest(claim, column.backend)
            sweep = next((t for t in cell.entry.record.tables if t.name == OPERATOR_TABLE), None) if cell else None
            if sweep is not None:
                found.append((cell, sweep))
                break
    return found


def compare_operator(statement: Statement, backend: str, tables: list[tuple[Cell, SweepTable]]) -> tuple[str, str]:
    """(our measurement, agreement) for an operator statement about ``backend``: the tables of the backends it
    names to compare with (its own by default)."""
    measured, verdicts = [], []
    compared = statement.compare_with or [backend]
    for cell, sweep in [(c, t) for c, t in tables if c.backend in compared]:
        counts = outcomes(sweep, rows_of(sweep, statement.name))
        judged = Counter({k: n for k, n in counts.items() if k not in UNJUDGED})
        if not judged:
            continue
        shown = ", ".join(f"{k} {n}" for k, n in judged.most_common())
        measured.append(f"{cell.where} ({cell.version}): {shown} (dtype cells)")
        other = sorted(set(judged) - AGREES[statement.status])
        verdicts.append(f"{cell.where}: differs ({', '.join(other)})" if other else f"{cell.where}: agrees")
    if not measured:
        return f"no row of our operator tables on {and_words(compared)} is this operator", "not measured"
    return "; ".join(measured), "; ".join(verdicts)


def compare_api(statement: Statement, summary: Summary) -> tuple[str, str]:
    """(our measurement, agreement) for an API statement: how each claim that measures it reads here."""
    standings = {s.claim.id: s for s in summary.standings}
    readings = [read(standings[c], summary.backend) for c in statement.measured_by if c in standings]
    if not readings:
        return "no claim of ours measures it", "not measured"
    measured = "; ".join(f"{r.standing.claim.title}: {r.action.value.lower()} ({r.why})" for r in readings)
    on_hardware = [r for r in readings if r.on_hardware]
    agreement = (
        "compare the verdict on the hardware with the statement"
        if on_hardware
        else f"not yet measured on {summary.backend} hardware"
    )
    return measured, agreement


def vendor_section(word: VendorWord, summary: Summary, grid: Grid) -> nodes.section:
    """'The vendor's own word': one row per statement, beside our measurement and whether the two agree."""
    section = nodes.section(ids=[f"vendor-word-{word.backend}"], classes=["tc-vendor-word"])
    section += nodes.title("", f"{word.publisher}'s own word, per release")
    section += paragraph(
        f"What {word.publisher} states about {word.backend}, quoted from its documentation with the release and the "
        "date: attributed, never a verdict. Beside each statement, what our own records measured, and where."
    )
    tables = operator_tables(grid)
    header = ["About", f"{word.publisher} says", "Release, date, source", "Our measurement", "Agreement"]
    rows = []
    for statement in word.statements:
        if statement.subject is Subject.OPERATOR:
            ours, agreement = compare_operator(statement, word.backend, tables)
        else:
            ours, agreement = compare_api(statement, summary)
        said = paragraph(nodes.strong("", statement.status.value), f": “{statement.quote}”")
        if statement.note:
            said += nodes.inline("", f" ({statement.note})", classes=["tc-note"])
        source = paragraph(f"{statement.release}, {statement.date}, ", link("source", statement.url))
        rows.append([paragraph(nodes.literal("", statement.name)), said, source, paragraph(ours), paragraph(agreement)])
    section += table(header, rows, classes=["tc-vendor-table"])
    return section
