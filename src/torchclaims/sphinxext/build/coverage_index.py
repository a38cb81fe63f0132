"""The rows of the coverage tables (operators, architectures) in the site search.

A coverage table's rows live in its data files, not in the page's text, so
Sphinx's full-text index never sees ``fft.fft`` or ``pixel_shuffle``. This
domain lists every row name a page's table holds as an object of the search
index (``Domain.get_objects``, Sphinx's documented way to put names there):
searching a name lists it as "operator, in <page title>", and the result links
to ``<page>#row-<name>``, which the table opens (static/torchclaims-sweep.js)
in its default run, the newest.

A row that fails in some run (mismatch, raises, no kernel, crash) is listed
once more per such run, named with the outcome and the run's backend and
version ("pixel_shuffle — mismatch on xla · torch_xla 2.9.0 on torch 2.9.0"),
linking to ``#run-<run>/row-<name>``, which opens the table on that run. Those
results come first: a reader searching a row wants where it goes wrong, not
the CPU reference where every cell is native. The rows add nothing to the page
itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sphinx.domains import Domain

from ...evidence.coverage_table import SweepTable
from ...site_addresses import row_anchor, run_row_anchor

# The outcome names (coverage/operators.py OUTCOMES, coverage/architectures.py STAGES and CAUSES) that say a
# row goes wrong on the run's backend; native, CPU fallback, matches, exclusions and harness trouble do not.
FAILING = frozenset({"mismatch", "raises", "no kernel", "crash or hang", "device raises", "op missing on the device"})

# Sphinx's search adds 15 to priority 0, 5 to 1 and -5 to 2 (searchtools.js Scorer.objPrio). A failing run's
# result matches the searched name only within its longer title, so the plain row of a name that fails somewhere
# goes to 2: an exact match there (11 - 5) still ranks below every failing run's result (15).
FIRST, PLAIN, AFTER_FAILING = 0, 1, 2


def failing_outcomes(sweep: SweepTable) -> dict[str, list[str]]:
    """Row -> its failing outcomes in this table, in column order, each once; rows without one are left out."""
    found: dict[str, dict[str, None]] = {}
    for row, _column, outcome, _detail, _samples in sweep.cells():
        if outcome in FAILING:
            found.setdefault(row, {})[outcome] = None
    return {row: list(outcomes) for row, outcomes in found.items()}


class CoverageDomain(Domain):
    """docname -> (item, row names, failing runs) of the coverage table on that page; a failing run is
    (row, run name, its result's title)."""

    name = "tc-coverage"
    label = "Coverage tables"
    initial_data: dict = {"rows": {}}

    def note_rows(self, docname: str, item: str, runs: Iterable[tuple[str, str, SweepTable]]) -> None:
        """``runs``: (run name, column label 'xla · torch_xla 2.9.0 on torch 2.9.0', table) of each run shown."""
        names: set[str] = set()
        failing: list[tuple[str, str, str]] = []
        for run, column, sweep in runs:
            names.update(sweep.rows)
            for row, outcomes in failing_outcomes(sweep).items():
                failing.append((row, run, f"{row} — {', '.join(outcomes)} on {column}"))
        self.data["rows"][docname] = (item, sorted(names), sorted(failing))

    def has_table(self, docname: str) -> bool:
        return docname in self.data["rows"]

    def clear_doc(self, docname: str) -> None:
        self.data["rows"].pop(docname, None)

    def merge_domaindata(self, docnames: set[str], otherdata: dict) -> None:
        for docname in docnames:
            if docname in otherdata["rows"]:
                self.data["rows"][docname] = otherdata["rows"][docname]

    def resolve_any_xref(self, env, fromdocname, builder, target, node, contnode) -> list:
        return []  # rows are found by the search, never cross-referenced

    def get_objects(self) -> Iterator[tuple[str, str, str, str, str, int]]:
        for docname, (item, names, failing) in self.data["rows"].items():
            fails = {row for row, _, _ in failing}
            for name in names:
                yield name, name, item, docname, row_anchor(name), AFTER_FAILING if name in fails else PLAIN
            for row, run, title in failing:
                yield f"{row} in {run}", title, item, docname, run_row_anchor(run, row), FIRST


def setup_coverage_index(app) -> None:
    app.add_domain(CoverageDomain)
