"""The ``claims-matrix`` directive: claims × backends, the home of the site.

A column for every backend with a record (grid.py), headed by the backend (a
link to its accelerator page), the device its records ran on, the version
shown and that version's totals; a backend with no record at all is named once
above the table instead of filling a column with empty cells. A row per claim,
grouped by topic. A cell shows the newest verdict of that version, its date and
source (said once in the header when every cell of the version shares it),
marks the backends the claim is about ("◎ about cpu": the claim speaks to that
backend, never a verdict on the accelerator a reader filtered by), says in the
cell when a verdict is outside the claim's scope, and links to the evidence of that run,
where the reason and the environment are. An attributed claim says once across
its row that it has no verdict. Every other version of a backend can be picked
in its header; a backend whose releases were swept also offers each series'
whole range there (versions.py). Their cells are not in the page, which
would weigh several times as much with them: they are written once beside it
(page_data.py) and loaded when the reader first picks another version.
Filters (topic, the backend a claim is about, verdict, text) and the version
choice live in the URL (static/torchclaims.js), which also counts again, over
the rows a filter leaves, every figure the page states: the header tallies,
the caption and the topic rows (the numbers written here are those of the
unfiltered view, from the same cells). On a phone the rows become cards in
one scroll, each cell named by its backend (``tc-cell-backend``). A legend, a "built on … with …" stamp and the
downloads of every results file sit beside the grid. It is a tree of HTML
elements (elements.py) rather than a docutils table so that cells can carry
scopes and the data attributes the script reads; the HTML writer escapes every
value in it.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ...claims import Claim
from ...evidence.scope import about_text, and_words
from ...evidence.store import EARLIER_BUILD
from ...site_addresses import evidence_anchor, matrix_anchor
from ...topics import TOPICS
from ..build.links import claim_href, register_label
from ..build.page_data import data_name, data_src, later_markup
from ..build.state import BuildState, get_state
from ..build.tracking import ALL_CLAIMS, note_shown
from .accelerators import accelerator_backends, page_docname
from .downloads import download_for
from .elements import element, html_element, joined
from .evidence import SYMBOLS, UNCONFINED, origin_text
from .grid import ATTRIBUTED, KINDS, NOT_RUN, Cell, Column, Grid, device_words
from .versions import RangeView, range_views

WORDS = {
    **{v.value: (s, v.value) for v, s in SYMBOLS.items()},
    NOT_RUN: ("∅", "not run"),
    ATTRIBUTED: ("❝", "no verdict"),
}
TOTALED = KINDS[:-1]  # attributed claims have no verdict on any backend: not counted per column


def shared_marks(grid: Grid, column: Column) -> dict[str, str]:
    """version -> the source mark every record of that version shares (said once, in the header)."""
    out = {}
    for version in column.versions:
        marks = {
            cell.entry.source.mark
            for claim in grid.claims.executable()
            for cell in [grid.cell(claim, column.backend, version)]
            if cell.entry
        }
        if len(marks) == 1:
            out[version] = marks.pop()
    return out


def _run(cell: Cell, shown: bool, shared_mark: str) -> html_element:
    symbol, word = WORDS[cell.kind]
    note = f", {cell.entry.record.note}" if cell.entry and cell.entry.record.note else ""
    inner: list[nodes.Node | str] = [element("span", f"{symbol} {word}{note}", class_=f"tc-badge tc-{cell.kind}")]
    if cell.entry is not None:
        marks = [
            element("span", cell.entry.record.date, class_="tc-date"),
            element("span", cell.entry.source.mark, class_="tc-badge tc-source")
            if cell.entry.source.mark != shared_mark
            else None,
            element("span", UNCONFINED, class_="tc-badge tc-unconfined") if cell.entry.record.unconfined else None,
            element("span", "stale", class_="tc-badge tc-stale") if cell.stale else None,
            None if cell.target else element("span", "outside its scope", class_="tc-scope"),
        ]
        inner += [part for mark in marks if mark is not None for part in (" ", mark)]
    data = {"data_version": cell.version, "data_verdict": cell.kind, "hidden": not shown}
    if cell.entry is None:
        return element("span", *inner, class_="tc-run", **data)
    href = claim_href(cell.claim.id, evidence_anchor(cell.claim.id, cell.backend, cell.version))
    return element("a", *inner, class_=f"tc-run {cell.entry.source.css_class}", href=href, **data)


def _cell(
    grid: Grid, claim: Claim, column: Column, ranges: list[RangeView], marks: dict[str, str]
) -> tuple[html_element, list[nodes.Node]]:
    """The cell with the version its header shows, and the runs of every other version (loaded when picked)."""
    target = claim.covers(column.backend)
    mark = element("span", f"◎ about {column.backend}", class_="tc-target-mark") if target else ""
    cells = grid.cells(claim, column.backend)
    shown = _run(cells[0], True, marks.get(cells[0].version, "")) if cells else ""
    later: list[nodes.Node] = [_run(cell, False, marks.get(cell.version, "")) for cell in cells[1:]]
    later += [view.run_element(claim.id) for view in ranges] if claim.executable else []  # (versions.py)
    label = element("span", column.backend, class_="tc-cell-backend")  # shown where rows are cards
    td = element("td", label, mark, shown, data_backend=column.backend, class_="tc-target" if target else None)
    return td, later


def _totals(grid: Grid, column: Column) -> list[html_element]:
    out = []
    for i, version in enumerate(column.versions or ("",)):
        counts = grid.totals(column.backend, version)
        items = [
            element(
                "span",
                f"{WORDS[kind][0]}\N{NARROW NO-BREAK SPACE}",
                element("span", counts[kind], class_="tc-n"),
                element("span", f" {WORDS[kind][1]}", class_="tc-sr"),
                class_=f"tc-total tc-total-{kind}",
                data_kind=kind,
            )
            for kind in TOTALED
        ]
        out.append(element("span", *items, class_="tc-totals", data_version=version, hidden=i > 0))
    return out


def _backend_link(backend: str, pages: dict[str, str]) -> nodes.Node:
    """The backend's name, linking to its accelerator page where it has one."""
    return element("a", backend, href=pages[backend]) if backend in pages else nodes.Text(backend)


def _header(
    grid: Grid, column: Column, ranges: list[RangeView], marks: dict[str, str], pages: dict[str, str]
) -> html_element:
    devices = [
        element(
            "span",
            " / ".join(column.devices.get(v, ())),
            element("span", marks[v], class_="tc-badge tc-source") if v in marks else "",
            class_="tc-device",
            data_version=v,
            hidden=i > 0,
        )
        for i, v in enumerate(column.versions)
    ]
    picks = [(v, v) for v in column.versions] + [(view.value, view.label) for view in ranges]
    if len(picks) > 1:
        version = element(
            "label",
            element("span", f"version shown for {column.backend}", class_="tc-sr"),
            element(
                "select", *(element("option", label, value=v) for v, label in picks), data_tc_version=column.backend
            ),
            class_="tc-version",
        )
    else:
        version = element("span", column.shown, class_="tc-version")
    return element(
        "th",
        element("span", _backend_link(column.backend, pages), class_="tc-backend"),
        *devices,
        version,
        *_totals(grid, column),
        scope="col",
        data_backend=column.backend,
    )


def _attributed(claim: Claim, span: int) -> html_element:
    """One cell across the row of a claim that has no verdict anywhere."""
    words = f"❝ {and_words(claim.claimed_by)}'s word, no public method: no verdict on any backend"
    badge = element("span", words, class_="tc-badge tc-attributed")
    return element(
        "td", element("span", badge, class_="tc-run", data_verdict=ATTRIBUTED), class_="tc-attributed-row", colspan=span
    )


def _row(
    grid: Grid,
    claim: Claim,
    columns: list[Column],
    ranges: dict[str, list[RangeView]],
    marks: dict[str, dict[str, str]],
) -> tuple[html_element, dict[str, list[nodes.Node]]]:
    """The row, and backend -> the runs of its other versions."""
    words = [
        claim.title,
        claim.id,
        " ".join(claim.claimed_by),
        " ".join(claim.about),
        about_text(claim),
        TOPICS[claim.topic],
        claim.proposition,
    ]
    head = element(
        "th",
        element("a", claim.title, href=claim_href(claim.id)),
        element("span", "about " + and_words(claim.about), class_="tc-about"),
        scope="row",
    )
    later: dict[str, list[nodes.Node]] = {}
    if claim.executable:
        cells = []
        for column in columns:
            cell, later[column.backend] = _cell(
                grid, claim, column, ranges.get(column.backend, []), marks[column.backend]
            )
            cells.append(cell)
    else:
        cells = [_attributed(claim, len(columns))]
    row = element(
        "tr",
        head,
        *cells,
        class_="tc-claim-row",
        id=matrix_anchor(claim.id),
        data_topic=claim.topic,
        data_about=" ".join(claim.about),
        data_text=" ".join(words).lower(),
    )
    return row, {backend: runs for backend, runs in later.items() if runs}


def _no_record(grid: Grid, empty: list[Column], pages: dict[str, str]) -> html_element | str:
    """The backends with no record at all, named once instead of a column of empty cells each."""
    if not empty:
        return ""
    names = joined(", ", [[_backend_link(c.backend, pages), f" ({c.reader_name})"] for c in empty])
    about = {c.backend: sum(1 for claim in grid.claims.claims.values() if claim.covers(c.backend)) for c in empty}
    counts = ", ".join(f"{n} about {b}" for b, n in about.items())
    return element(
        "p",
        "No record yet from ",
        *names,
        f": no claim ran there, so they have no column. Claims about them: {counts}; "
        "each page lists them with what ran on stand-ins.",
        class_="tc-no-record",
    )


def _backend_notes(grid: Grid, pages: dict[str, str]) -> list[html_element]:
    """Shown when the reader filters by a backend: what the columns beside its claims are."""
    notes = []
    for column in grid.columns:
        name = column.reader_name
        if column.stand_in:  # its own column is a stand-in too: XLA on the CPU
            where = (
                f"its column shows what ran on {column.stand_in}, a stand-in like the other columns: "
                f"evidence about what ran there, never about {name}"
            )
        elif column.versions:
            where = "its column shows what ran there, and the other columns what ran on stand-ins"
        else:
            where = (
                "no claim ran there yet, so every column shows a stand-in: evidence about what ran there, never about "
                + name
            )
        page = (
            [" ", element("a", f"What is known about {name}", href=pages[column.backend]), "."]
            if column.backend in pages
            else []
        )
        notes.append(
            element(
                "p",
                f"Claims about {column.backend} ({name}): {where}.",
                *page,
                class_="tc-backend-note",
                data_backend=column.backend,
                hidden=True,
            )
        )
    return notes


def _filters(grid: Grid, total: int) -> html_element:
    def select(name: str, label: str, values: list[tuple[str, str]]) -> html_element:
        options = [element("option", text, value=v) for v, text in values]
        return element("label", f"{label} ", element("select", *options, name=name))

    topics = [("", "all topics")] + list(TOPICS.items())
    backends = [("", "any backend")] + [(c.backend, c.backend) for c in grid.columns]
    verdicts = [("", "any verdict")] + [
        (k, f"{WORDS[k][0]} {WORDS[k][1] if k != ATTRIBUTED else 'attributed'}") for k in KINDS
    ]
    search = element("input", type="search", name="q", placeholder="title, id, who claims", autocomplete="off")
    return element(
        "form",
        select("topic", "Topic", topics),
        select("backend", "About", backends),
        select("verdict", "Verdict", verdicts),
        element("label", "Text ", search),
        element("button", "Show all", type="reset"),
        element("p", f"{total} of {total} claims", class_="tc-count", role="status", aria_live="polite"),
        class_="tc-filters",
        role="search",
        aria_label="Filter the claims",
    )


def _legend(state: BuildState, root: str) -> html_element:
    def item(mark: html_element, meaning: str) -> html_element:
        return element("li", mark, " " + meaning)

    items = [
        item(element("span", f"{WORDS[k][0]} {WORDS[k][1]}", class_=f"tc-badge tc-{k}"), MEANING[k]) for k in KINDS
    ]
    items += [
        item(
            element("span", "◎ about cpu", class_="tc-target-mark"),
            "the claim is about the backend of that column, so its verdict there speaks to it; "
            "it says nothing of the accelerator the filter names",
        ),
        item(
            element("span", "outside its scope", class_="tc-scope"),
            "a verdict on a backend the claim is not about (the CPU reference, XLA on the CPU): "
            "evidence about what ran there, never about the vendor's hardware",
        ),
        item(
            element("span", "stale", class_="tc-badge tc-stale"),
            "made by an older script, or older than the age limit",
        ),
        element(
            "li",
            "Dates are UTC. A header's counts are for the version it shows and the rows shown; "
            "pick another version in the header. "
            "Click a cell for its evidence: the reason, the checks and the environment of that run.",
        ),
    ]
    return element(
        "aside",
        element("h2", "Legend"),
        element("ul", *items),
        element("p", stamp(state), class_="tc-stamp"),
        *_downloads(state, root),
        class_="tc-legend",
        aria_label="Legend",
    )


MEANING = {
    "holds": "the checks ran there and every one held",
    "refuted": "the checks ran and at least one did not hold",
    "unverified": "could not be checked there; the reason is given. Never counted as passing",
    "error": "the verification itself broke: no evidence either way",
    NOT_RUN: "no record of this claim on this backend and version",
    ATTRIBUTED: "testimony or a figure without a public method: attributed, no verdict",
}


def stamp(state: BuildState) -> str:
    """'Updated 2026-11-30 14:05 UTC by a build on AMD EPYC (cpu) with torch 2.13.0, …'.

    The page is rendered again only when something it shows changed, so the
    time is when its content last changed, not when the site was last built."""
    when = f"Updated {state.built_at:%Y-%m-%d %H:%M} UTC by a build"
    env = state.outcome.probe.environment if state.outcome else None
    if env is None:
        return f"{when} that ran no claim: its records are those an earlier build left."
    return (
        f"{when} on {device_words(env)} ({env.backend}) with torch {env.torch}, Python {env.python}, "
        f"torchclaims {env.torchclaims}."
    )


def _downloads(state: BuildState, root: str) -> list[html_element]:
    files: dict[str, list] = {}
    for history in state.store.entries.values():
        for entry in history:
            if entry.origin != EARLIER_BUILD:
                files.setdefault(entry.origin, []).append(entry)
    items = []
    for entries in sorted(files.values(), key=lambda entries: entries[0].column):
        download = download_for(entries[0])
        what = (
            f"{entries[0].column}, {len(entries)} record{'s' if len(entries) > 1 else ''} ({origin_text(entries[0])})"
        )
        json, csv = element("a", "JSON", href=root + download.json), element("a", "CSV", href=root + download.csv)
        items.append(element("li", f"{what}: ", json, " · ", csv))
    return [element("h2", "Downloads"), element("ul", *items, class_="tc-downloads")] if items else []


def _topic_row(topic: str, count: int, span: int) -> html_element:
    words = element("span", f"({count} claim{'s' if count > 1 else ''})", class_="tc-topic-count")
    return element(
        "tr",
        element("th", element("span", f"{TOPICS[topic]} ", words), scope="rowgroup", colspan=span),
        class_="tc-topic-row",
        data_topic=topic,
    )


class ClaimsMatrixDirective(SphinxDirective):
    """``{claims-matrix}``: every claim against every backend with a record."""

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env)
        grid, claims = state.grid, state.claims
        ranges = range_views(self.env)  # backend -> its series' whole ranges, picked like a version
        note_shown(self.env, list(claims.claims), state.digest(list(claims.claims)), key=ALL_CLAIMS)
        if not claims.claims:
            return [nodes.paragraph("", "There are no claims yet.")]
        columns = [column for column in grid.columns if column.versions]
        empty = [column for column in grid.columns if not column.versions]
        pages = {
            b: state.relative_uri(self.env.docname, d)
            for b in accelerator_backends()
            if (d := page_docname(self.env, b))
        }
        marks = {column.backend: shared_marks(grid, column) for column in columns}
        rows: list[html_element] = []
        later: dict[tuple[str, ...], list[nodes.Node]] = {}  # (row, backend) -> the runs of its other versions
        for topic, topic_claims in claims.by_topic().items():
            if topic_claims:
                rows.append(_topic_row(topic, len(topic_claims), len(columns) + 1))
            for claim in topic_claims:
                register_label(self.env, matrix_anchor(claim.id), claim.title)
                row, runs = _row(grid, claim, columns, ranges, marks)
                rows.append(row)
                later.update(((matrix_anchor(claim.id), backend), cells) for backend, cells in runs.items())
        total = len(claims.claims)
        caption = element(
            "caption",
            element("span", f"{total} claims", class_="tc-caption-count"),
            f" × {len(columns)} backends with records. Each cell: the newest verdict of the claim on the backend, "
            "for the version its header names; ∅ where no record exists.",
        )
        docname = self.env.docname
        heads = [
            _header(grid, column, ranges.get(column.backend, []), marks[column.backend], pages) for column in columns
        ]
        table = element(
            "table",
            caption,
            element("thead", element("tr", element("th", "Claim", scope="col", class_="tc-corner"), *heads)),
            element("tbody", *rows),
            class_="tc-matrix",
            data_tc_later=data_name(docname) if later else None,
            data_tc_src=data_src(docname) if later else None,
        )
        no_matches = element(
            "p",
            "No claim matches these filters. ",
            element("button", "Show all claims", type="button", data_tc_reset=True),
            class_="tc-no-matches",
            hidden=True,
        )
        scroll = element(
            "div",
            table,
            no_matches,
            class_="tc-matrix-scroll",
            tabindex="0",
            role="region",
            aria_label="Claims × backends",
        )
        page = element(
            "div",
            _filters(grid, total),
            *_backend_notes(grid, pages),
            _no_record(grid, empty, pages),
            element("div", scroll, _legend(state, "../" * docname.count("/")), class_="tc-matrix-layout"),
            class_="tc-matrix-page",
        )
        return [page] + ([later_markup("matrix", later)] if later else [])


def setup_matrix(app) -> None:
    app.add_directive("claims-matrix", ClaimsMatrixDirective)
