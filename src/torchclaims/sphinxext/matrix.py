"""The ``claims-matrix`` directive: claims × backends, the home of the site.

A column for every backend with a record (grid.py), headed by the backend (a
link to its accelerator page), the device its records ran on, the version
shown and that version's totals; a backend with no record at all is named once
above the table instead of filling a column with empty cells. A row per claim,
grouped by topic. A cell shows the newest verdict of that version, its date and
source (said once in the header when every cell of the version shares it),
marks the backends the claim is about ("target"), says in the cell when a
verdict is outside the claim's scope, and links to the evidence of that run,
where the reason and the environment are. An attributed claim says once across
its row that it has no verdict. Every other version of a backend can be picked
in its header; a backend whose releases were swept also offers each series'
whole range there (versions.py). Their cells are not in the page, which
would weigh several times as much with them: they are written once beside it
(page_data.py) and loaded when the reader first picks another version.
Filters (topic, the backend a claim is about, verdict, text) and the version
choice live in the URL (static/torchclaims.js); a legend, a "built on … with …" stamp and the
downloads of every results file sit beside the grid. The markup is written here
rather than as a docutils table so that cells can carry scopes and data
attributes; all text in it is escaped.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ..claims import Claim
from ..evidence.scope import about_text, and_words
from ..evidence.store import EARLIER_BUILD
from ..topics import TOPICS
from .accelerators import accelerator_backends, page_docname
from .downloads import download_for
from .evidence import SYMBOLS, UNCONFINED, origin_text
from .grid import ATTRIBUTED, KINDS, NOT_RUN, Cell, Column, Grid, device_words
from .links import evidence_anchor, href_marker, matrix_anchor, raw_html, register_label
from .markup import esc
from .page_data import data_name, data_src, later_data
from .state import BuildState, get_state
from .tracking import ALL_CLAIMS, note_shown
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


def _run(cell: Cell, shown: bool, shared_mark: str) -> str:
    symbol, word = WORDS[cell.kind]
    note = f", {cell.entry.record.note}" if cell.entry and cell.entry.record.note else ""
    inner = f'<span class="tc-badge tc-{cell.kind}">{symbol} {esc(word + note)}</span>'
    if cell.entry is not None:
        inner += f' <span class="tc-date">{esc(cell.entry.record.date)}</span>'
        if cell.entry.source.mark != shared_mark:
            inner += f' <span class="tc-badge tc-source">{esc(cell.entry.source.mark)}</span>'
        inner += f' <span class="tc-badge tc-unconfined">{UNCONFINED}</span>' if cell.entry.record.unconfined else ""
        inner += ' <span class="tc-badge tc-stale">stale</span>' if cell.stale else ""
        inner += "" if cell.target else ' <span class="tc-scope">outside its scope</span>'
    attributes = f'data-version="{esc(cell.version)}" data-verdict="{cell.kind}"' + ("" if shown else " hidden")
    if cell.entry is None:
        return f'<span class="tc-run" {attributes}>{inner}</span>'
    href = href_marker(cell.claim.id, evidence_anchor(cell.claim.id, cell.backend, cell.version))
    return f'<a class="tc-run {cell.entry.source.css_class}" href="{href}" {attributes}>{inner}</a>'


def _cell(grid: Grid, claim: Claim, column: Column, ranges: list[RangeView], marks: dict[str, str]) -> tuple[str, str]:
    """The cell with the version its header shows, and the runs of every other version (loaded when picked)."""
    target = claim.covers(column.backend)
    mark = '<span class="tc-target-mark">◎ target</span>' if target else ""
    cells = grid.cells(claim, column.backend)
    shown = _run(cells[0], True, marks.get(cells[0].version, "")) if cells else ""
    later = "".join(_run(cell, False, marks.get(cell.version, "")) for cell in cells[1:])
    later += "".join(view.run_html(claim.id) for view in ranges if claim.executable)  # (versions.py)
    classes = ' class="tc-target"' if target else ""
    return f'<td data-backend="{esc(column.backend)}"{classes}>{mark}{shown}</td>', later


def _totals(grid: Grid, column: Column) -> str:
    out = []
    for i, version in enumerate(column.versions or ("",)):
        counts = grid.totals(column.backend, version)
        items = "".join(
            f'<span class="tc-total tc-total-{kind}">{WORDS[kind][0]}&#8239;{counts[kind]}'
            f'<span class="tc-sr"> {WORDS[kind][1]}</span></span>'
            for kind in TOTALED
        )
        out.append(f'<span class="tc-totals" data-version="{esc(version)}"{"" if i == 0 else " hidden"}>{items}</span>')
    return "".join(out)


def _header(grid: Grid, column: Column, ranges: list[RangeView], marks: dict[str, str], pages: dict[str, str]) -> str:
    backend = esc(column.backend)
    devices = "".join(
        f'<span class="tc-device" data-version="{esc(v)}"{"" if i == 0 else " hidden"}>'
        f"{esc(' / '.join(column.devices.get(v, ())))}"
        + (f'<span class="tc-badge tc-source">{esc(marks[v])}</span>' if v in marks else "")
        + "</span>"
        for i, v in enumerate(column.versions)
    )
    picks = [(v, v) for v in column.versions] + [(view.value, view.label) for view in ranges]
    if len(picks) > 1:
        options = "".join(f'<option value="{esc(v)}">{esc(label)}</option>' for v, label in picks)
        version = (
            f'<label class="tc-version"><span class="tc-sr">version shown for {backend}</span>'
            f'<select data-tc-version="{backend}">{options}</select></label>'
        )
    else:
        version = f'<span class="tc-version">{esc(column.shown)}</span>'
    name = f'<a href="{esc(pages[column.backend])}">{backend}</a>' if column.backend in pages else backend
    return (
        f'<th scope="col" data-backend="{backend}"><span class="tc-backend">{name}</span>'
        f"{devices}{version}{_totals(grid, column)}</th>"
    )


def _attributed(claim: Claim, span: int) -> str:
    """One cell across the row of a claim that has no verdict anywhere."""
    words = f"❝ {and_words(claim.claimed_by)}'s word, no public method: no verdict on any backend"
    return (
        f'<td class="tc-attributed-row" colspan="{span}"><span class="tc-run" data-verdict="{ATTRIBUTED}">'
        f'<span class="tc-badge tc-attributed">{esc(words)}</span></span></td>'
    )


def _row(
    grid: Grid,
    claim: Claim,
    columns: list[Column],
    ranges: dict[str, list[RangeView]],
    marks: dict[str, dict[str, str]],
) -> tuple[str, dict[str, str]]:
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
    about = f'<span class="tc-about">{esc("about " + and_words(claim.about))}</span>'
    head = f'<th scope="row"><a href="{href_marker(claim.id)}">{esc(claim.title)}</a>{about}</th>'
    later: dict[str, str] = {}
    if claim.executable:
        cells = ""
        for column in columns:
            cell, later[column.backend] = _cell(
                grid, claim, column, ranges.get(column.backend, []), marks[column.backend]
            )
            cells += cell
    else:
        cells = _attributed(claim, len(columns))
    row = (
        f'<tr class="tc-claim-row" id="{matrix_anchor(claim.id)}" data-topic="{esc(claim.topic)}" '
        f'data-about="{esc(" ".join(claim.about))}" '
        f'data-text="{esc(" ".join(words).lower())}">{head}{cells}</tr>'
    )
    return row, {backend: runs for backend, runs in later.items() if runs}


def _no_record(grid: Grid, empty: list[Column], pages: dict[str, str]) -> str:
    """The backends with no record at all, named once instead of a column of empty cells each."""
    if not empty:
        return ""
    names = [
        (f'<a href="{esc(pages[c.backend])}">{esc(c.backend)}</a>' if c.backend in pages else esc(c.backend))
        + f" ({esc(c.reader_name)})"
        for c in empty
    ]
    about = {c.backend: sum(1 for claim in grid.claims.claims.values() if claim.covers(c.backend)) for c in empty}
    counts = ", ".join(f"{n} about {esc(b)}" for b, n in about.items())
    return (
        f'<p class="tc-no-record">No record yet from {", ".join(names)}: no claim ran there, so they have no column. '
        f"Claims about them: {counts}; each page lists them with what ran on stand-ins.</p>"
    )


def _backend_notes(grid: Grid, pages: dict[str, str]) -> str:
    """Shown when the reader filters by a backend: what the columns beside its claims are."""
    notes = []
    for column in grid.columns:
        name = esc(column.reader_name)
        where = (
            "its column shows what ran there, and the other columns what ran on stand-ins"
            if column.versions
            else (
                "no claim ran there yet, so every column shows a stand-in: evidence about what ran there, never about "
                + name
            )
        )
        page = (
            f' <a href="{esc(pages[column.backend])}">What is known about {name}</a>.'
            if column.backend in pages
            else ""
        )
        notes.append(
            f'<p class="tc-backend-note" data-backend="{esc(column.backend)}" hidden>'
            f"Claims about {esc(column.backend)} ({name}): {where}.{page}</p>"
        )
    return "".join(notes)


def _filters(grid: Grid, total: int) -> str:
    def select(name: str, label: str, values: list[tuple[str, str]]) -> str:
        options = "".join(f'<option value="{esc(v)}">{esc(text)}</option>' for v, text in values)
        return f'<label>{label} <select name="{name}">{options}</select></label>'

    topics = [("", "all topics")] + list(TOPICS.items())
    backends = [("", "any backend")] + [(c.backend, c.backend) for c in grid.columns]
    verdicts = [("", "any verdict")] + [
        (k, f"{WORDS[k][0]} {WORDS[k][1] if k != ATTRIBUTED else 'attributed'}") for k in KINDS
    ]
    return (
        '<form class="tc-filters" role="search" aria-label="Filter the claims">'
        + select("topic", "Topic", topics)
        + select("backend", "About", backends)
        + select("verdict", "Verdict", verdicts)
        + '<label>Text <input type="search" name="q" placeholder="title, id, who claims" autocomplete="off"></label>'
        + '<button type="reset">Show all</button>'
        + f'<p class="tc-count" role="status" aria-live="polite">{total} of {total} claims</p>'
        + "</form>"
    )


def _legend(state: BuildState, root: str) -> str:
    items = "".join(
        f'<li><span class="tc-badge tc-{k}">{WORDS[k][0]} {WORDS[k][1]}</span> {esc(MEANING[k])}</li>' for k in KINDS
    )
    return (
        '<aside class="tc-legend" aria-label="Legend"><h2>Legend</h2><ul>'
        + items
        + '<li><span class="tc-target-mark">◎ target</span> '
        "the claim is about this backend: a verdict here speaks to it</li>"
        + '<li><span class="tc-scope">outside its scope</span> a verdict on a backend the claim is not about '
        "(the CPU reference, XLA on the CPU): "
        "evidence about what ran there, never about the vendor's hardware</li>"
        + '<li><span class="tc-badge tc-stale">stale</span> made by an older script, or older than the age limit</li>'
        + "<li>Dates are UTC. A header's counts are for the version it shows; pick another version in the header. "
        "Click a cell for its evidence: the reason, the checks and the environment of that run.</li></ul>"
        + f'<p class="tc-stamp">{esc(stamp(state))}</p>'
        + _downloads(state, root)
        + "</aside>"
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


def _downloads(state: BuildState, root: str) -> str:
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
        items.append(
            f'<li>{esc(what)}: <a href="{root}{download.json}">JSON</a> · <a href="{root}{download.csv}">CSV</a></li>'
        )
    return '<h2>Downloads</h2><ul class="tc-downloads">' + "".join(items) + "</ul>" if items else ""


class ClaimsMatrixDirective(SphinxDirective):
    """``{claims-matrix}``: every claim against every backend with a record."""

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env.app)
        grid, claims = state.grid, state.claims
        ranges = range_views(self.env.app)  # backend -> its series' whole ranges, picked like a version
        note_shown(self.env, list(claims.claims), state.digest(list(claims.claims)), key=ALL_CLAIMS)
        if not claims.claims:
            return [nodes.paragraph("", "There are no claims yet.")]
        columns = [column for column in grid.columns if column.versions]
        empty = [column for column in grid.columns if not column.versions]
        pages = {
            b: self.env.app.builder.get_relative_uri(self.env.docname, d)
            for b in accelerator_backends()
            if (d := page_docname(self.env.app, b))
        }
        marks = {column.backend: shared_marks(grid, column) for column in columns}
        rows, later = [], {}
        for topic, topic_claims in claims.by_topic().items():
            if topic_claims:
                rows.append(
                    f'<tr class="tc-topic-row" data-topic="{esc(topic)}">'
                    f'<th scope="rowgroup" colspan="{len(columns) + 1}">'
                    f"<span>{esc(TOPICS[topic])}</span></th></tr>"
                )
            for claim in topic_claims:
                register_label(self.env, matrix_anchor(claim.id), claim.title)
                row, later[matrix_anchor(claim.id)] = _row(grid, claim, columns, ranges, marks)
                rows.append(row)
        total = len(claims.claims)
        caption = (
            f"{total} claims × {len(columns)} backends with records. "
            "Each cell: the newest verdict of the claim on the backend, "
            "for the version its header names; ∅ where no record exists."
        )
        later = {row: runs for row, runs in later.items() if runs}
        docname = self.env.docname
        data = f' data-tc-later="{esc(data_name(docname))}" data-tc-src="{esc(data_src(docname))}"' if later else ""
        heads = "".join(
            _header(grid, column, ranges.get(column.backend, []), marks[column.backend], pages) for column in columns
        )
        markup = (
            f'<div class="tc-matrix-page">{_filters(grid, total)}{_backend_notes(grid, pages)}'
            f'{_no_record(grid, empty, pages)}<div class="tc-matrix-layout">'
            '<div class="tc-matrix-scroll" tabindex="0" role="region" aria-label="Claims × backends (scrolls inside)">'
            f'<table class="tc-matrix"{data}><caption>{esc(caption)}</caption>'
            f'<thead><tr><th scope="col" class="tc-corner">Claim</th>{heads}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
            '<p class="tc-no-matches" hidden>No claim matches these filters. '
            '<button type="button" data-tc-reset>Show all claims</button></p></div>'
            f"{_legend(state, '../' * self.env.docname.count('/'))}</div></div>"
        )
        return [raw_html(markup)] + ([later_data("matrix", later)] if later else [])


def setup_matrix(app) -> None:
    app.add_directive("claims-matrix", ClaimsMatrixDirective)
