"""The ``coverage-table`` directive: a sweep's whole table, per run, searchable.

``{coverage-table} <claim-id>`` renders, for every run (result record) of the
claim that carries a coverage table:

* first, one interactive table for all runs (``torchclaims-sweep.js``): pick a
  run, search by name, filter by column and outcome, and compare two runs row
  by row (what became native, what started to mismatch). What it shows lives in
  the URL, so a finding can be linked; ``#row-<name>`` opens that row, which is
  where the site search sends a row's name, and ``#run-<run>/row-<name>`` opens
  it in that run, where the search sends a run in which the row fails
  (coverage_index.py); an operator table's backward columns (``float32
  backward``: each row's gradients) are columns like the others, and a row's
  details name what its gradients dispatched on the CPU. Its data are
  loaded per run from ``_static/coverage/<run>.js`` only when picked
  (page_data.py), so the page stays small however large the tables are; what
  only an opened row shows (samples with their argument kinds, operators and
  kernels) from ``<run>.details.js``, when a row of the run first opens
  (sweep_data.py);
* then, for the newest run of each backend column: the outcome counts of every
  column with their shares and the denominator, the denominator in dispatcher
  overloads where the table states one ("N of M backend-relevant overloads
  measured, K unknown", the unknown ones in ``<run>-unknown-overloads.txt``
  beside the data files, linked), a stacked-bar plot
  (inline SVG, as HTML element nodes: no script, no image file), a CSV download of the table and a
  link to the results file that holds the record.

The data files are written at ``build-finished`` from the results store, the
same store the directive read, so a page never shows a run whose file is
missing. Each run's table is shipped once: the JSON a reader downloads is the
results file the site publishes anyway (downloads.py).
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ...evidence.coverage_table import SweepTable
from ...evidence.memo import code_digest
from ...evidence.store import Entry
from ...fileio import made_from, write_if_changed
from ...site_addresses import evidence_anchor, slug
from ..build.coverage_index import CoverageDomain
from ..build.links import claim_ref
from ..build.page_data import write_data_script
from ..build.state import get_state, warn
from ..build.tracking import note_shown
from ..views.downloads import download_for, table_csv
from ..views.elements import element, html_element
from ..views.markup import table
from ..views.sweep_data import first_view, row_details

DATA_DIR = "_static/coverage"  # in the html output
DATA_KEY = "torchclaims-coverage.key"  # in the doctrees folder: what the data files were made of
SCRIPT = "torchclaims-sweep.js"  # added only to pages that hold a table
# A run's data for opened rows, beside its first view's; torchclaims-sweep.js finds it by these two names.
DETAILS = ".details.js"
UNKNOWN = "-unknown-overloads.txt"  # a run's unknown dispatcher overloads, linked from its denominator line


def run_name(claim_id: str, entry: Entry) -> str:
    """The file stem of one run's data: claim, column and time, filesystem-safe."""
    return slug(f"{claim_id} {entry.column} {entry.record.started_at:%Y%m%dT%H%M%S}")


def runs_with_tables(store, claim_id: str) -> list[tuple[Entry, SweepTable]]:
    """Every run of the claim that carries a table, newest first (one table per run)."""
    return [(entry, entry.record.tables[0]) for entry in store.history(claim_id) if entry.record.tables]


def run_label(entry: Entry) -> str:
    return f"{entry.column} — {entry.record.date} ({entry.origin})"


def payload(claim_id: str, entry: Entry, sweep: SweepTable) -> dict:
    env = entry.record.environment
    return {
        "claim": claim_id,
        "run": run_label(entry),
        "date": entry.record.date,
        "origin": entry.origin,
        "environment": {
            "backend": env.backend,
            "device": env.device_name,
            "torch": env.torch,
            "packages": env.packages,
        },
        "conditions": entry.record.conditions,
        "table": first_view(sweep),
    }


def details_name(name: str) -> str:
    """The data name of a run's row details (a run's name ends in its time, never in this suffix)."""
    return f"{name}-details"


def write_data(app, exception) -> None:
    """build-finished: the data script and CSV of every run shown; files of runs no longer shown go."""
    if exception is not None or app.builder.format != "html":
        return
    state = get_state(app.env)
    out = Path(app.outdir, DATA_DIR)
    with_tables = [c for c in state.claims.claims if runs_with_tables(state.store, c)]
    # What the files are made of: the runs shown and the code writing them. A
    # build that shows the same runs leaves the files alone without rebuilding them.
    key = state.store.digest(with_tables) + code_digest(
        "sphinxext/directives/coverage_tables.py",
        "sphinxext/build/page_data.py",
        "sphinxext/views/downloads.py",
        "sphinxext/views/sweep_data.py",
    )
    key_file = Path(app.doctreedir) / DATA_KEY
    names = [
        run_name(claim_id, entry) for claim_id in with_tables for entry, _ in runs_with_tables(state.store, claim_id)
    ]
    files = [out / f"{name}{suffix}" for name in names for suffix in (".csv", ".js", DETAILS, UNKNOWN)]
    if made_from(key_file, key, files):
        return
    out.mkdir(parents=True, exist_ok=True)
    for claim_id in with_tables:
        for entry, sweep in runs_with_tables(state.store, claim_id):
            name = run_name(claim_id, entry)
            write_data_script(out / f"{name}.js", name, payload(claim_id, entry, sweep))
            write_data_script(out / f"{name}{DETAILS}", details_name(name), row_details(sweep))
            write_if_changed(out / f"{name}.csv", table_csv(sweep))
            write_if_changed(out / f"{name}{UNKNOWN}", unknown_overloads(sweep))
    for stale in {path for path in out.iterdir() if path.is_file()} - set(files):
        stale.unlink()
    write_if_changed(key_file, key)


def _add_script(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """html-page-context: the table's script on the pages that hold a table, and nowhere else."""
    domain = app.env.get_domain(CoverageDomain.name)
    if domain.has_table(pagename):
        app.add_js_file(SCRIPT)


def _bar_svg(sweep: SweepTable) -> html_element:
    """One stacked bar per column, shares of its listed cells, and a legend; titles name each part."""
    width, height, label_w = 560, 22, 110
    parts: list[html_element] = []
    shown: dict[str, None] = {}
    for row, column in enumerate(sweep.columns):
        y = row * (height + 6)
        parts.append(element("text", f"{column.name} ({column.listed})", x=0, y=y + 15, class_="tc-svg-label"))
        x, listed = float(label_w), max(column.listed, 1)
        for code, count in column.count().most_common():
            w = (width - label_w) * count / listed
            outcome = column.legend[code]
            shown.setdefault(outcome, None)
            title = f"{outcome}: {count} of {column.listed} ({100 * count / listed:.1f}%)"
            parts.append(
                element(
                    "rect",
                    element("title", title),
                    x=f"{x:.1f}",
                    y=y,
                    width=f"{w:.1f}",
                    height=height,
                    class_=f"tc-o tc-o-{slug(outcome)}",
                )
            )
            x += w
    y = len(sweep.columns) * (height + 6) + 4
    for index, outcome in enumerate(shown):  # the legend: three entries a line, so it fits a phone
        lx, ly = (index % 3) * (width // 3), y + (index // 3) * 18
        parts.append(element("rect", x=lx, y=ly, width=12, height=12, class_=f"tc-o tc-o-{slug(outcome)}"))
        parts.append(element("text", outcome, x=lx + 16, y=ly + 11, class_="tc-svg-label"))
    total = y + ((len(shown) + 2) // 3) * 18
    return element(
        "svg",
        *parts,
        class_="tc-sweep-plot",
        viewBox=f"0 0 {width} {total}",
        role="img",
        aria_label="outcome shares per column",
    )


def _summary(sweep: SweepTable) -> nodes.table:
    """Outcomes down, columns across: count, share and the denominator."""
    totals: dict[str, int] = {}
    for column in sweep.columns:
        for code, count in column.count().items():
            totals[column.legend[code]] = totals.get(column.legend[code], 0) + count
    outcomes = sorted(totals, key=lambda outcome: -totals[outcome])  # the commonest first
    rows = [["listed (denominator)"] + [str(column.listed) for column in sweep.columns]]
    for outcome in outcomes:
        cells = []
        for column in sweep.columns:
            count = sum(n for code, n in column.count().items() if column.legend[code] == outcome)
            cells.append(f"{count} ({100 * count / column.listed:.1f}%)" if column.listed and count else "—")
        if any(cell != "—" for cell in cells):
            rows.append([outcome] + cells)
    return table(["outcome"] + [column.name for column in sweep.columns], rows, ["tc-sweep-summary"])


def _overloads(sweep: SweepTable, listing: str) -> html_element | None:
    """The table's denominator in dispatcher overloads, with a link to ``listing``, the unknown ones as text (one
    per line: thousands of names, which would weigh more than the rest of the page); None when it states none."""
    count = sweep.overloads
    if count is None:
        return None
    definition = count.definition or "ATen overloads a backend must implement"
    return element(
        "p",
        element("strong", "Dispatcher overloads: "),
        f"{count.summary()}. {definition}. The rows' calls and gradients dispatched them on the CPU reference. ",
        element("a", "The unknown overloads (text)", href=listing),
        ".",
        class_="tc-sweep-overloads",
    )


def unknown_overloads(sweep: SweepTable) -> str:
    """The unknown overloads of a table, one per line, as its download lists them."""
    count = sweep.overloads
    names = count.unknown if count is not None else []
    more = count.relevant - count.measured - len(names) if count is not None else 0
    return "".join(f"{name}\n" for name in names) + (f"... and {more} more\n" if more > 0 else "")


class CoverageTableDirective(SphinxDirective):
    """``{coverage-table} <claim-id>``: see the module docstring."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env)
        claim_id = self.arguments[0]
        if claim_id not in state.claims.claims:
            warn(f"unknown claim id {claim_id!r}", "directive", location=self.get_location())
            return []
        domain = self.env.get_domain(CoverageDomain.name)
        if domain.has_table(self.env.docname):  # the table's state is the page's URL: one table a page
            warn(
                "a page holds one coverage table; put this one on a page of its own",
                "directive",
                location=self.get_location(),
            )
            return []
        note_shown(self.env, [claim_id], state.digest([claim_id]), key=f"coverage:{claim_id}")
        runs = runs_with_tables(state.store, claim_id)
        if not runs:
            return [nodes.paragraph("", "No result record of this claim carries a coverage table yet.")]
        item = runs[0][1].item
        domain.note_rows(self.env.docname, item, ((run_name(claim_id, e), e.column, sweep) for e, sweep in runs))
        base = posixpath.dirname(self.env.docname)
        relative = lambda path: posixpath.relpath(path, base)  # noqa: E731
        options = [
            {
                "name": run_name(claim_id, e),
                "label": run_label(e),
                "src": relative(f"{DATA_DIR}/{run_name(claim_id, e)}.js"),
            }
            for e, _ in runs
        ]
        noscript = element(
            "noscript", "The searchable table needs JavaScript; the CSV downloads below hold every cell."
        )
        out: list[nodes.Node] = [
            element("div", noscript, class_="tc-sweep", data_item=item, data_runs=json.dumps(options))
        ]
        newest: dict[str, tuple[Entry, SweepTable]] = {}
        for entry, sweep in runs:
            newest.setdefault(entry.column, (entry, sweep))
        for entry, sweep in newest.values():
            section = nodes.container(classes=["tc-sweep-run"])
            head = nodes.paragraph()
            head += nodes.strong("", entry.column)
            head += nodes.Text(f" — {entry.record.date}, {len(sweep.rows)} {sweep.item}s ({entry.origin}) · ")
            anchor = evidence_anchor(claim_id, entry.backend, entry.version)
            head += claim_ref(claim_id, nodes.inline("", "verdict and environment"), anchor=anchor)
            head += nodes.Text(" · download the table (")
            head += nodes.reference("", "CSV", refuri=relative(f"{DATA_DIR}/{run_name(claim_id, entry)}.csv"))
            head += nodes.Text(") or the ")
            head += nodes.reference("", "results file (JSON)", refuri=relative(download_for(entry).json))
            section += head
            section += _summary(sweep)
            overloads = _overloads(sweep, relative(f"{DATA_DIR}/{run_name(claim_id, entry)}{UNKNOWN}"))
            if overloads is not None:
                section += overloads
            section += _bar_svg(sweep)
            out.append(section)
        return out


def setup_coverage_tables(app) -> None:
    app.add_directive("coverage-table", CoverageTableDirective)
    app.connect("html-page-context", _add_script)
    app.connect("build-finished", write_data, priority=400)  # before publishing copies the site
