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
downloads of every results file sit beside the grid. The markup is written here
rather than as a docutils table so that cells can carry scopes and data
attributes, from safe_html.Html, which escapes every value in it.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ...claims import Claim
from ...evidence.scope import about_text, and_words
from ...evidence.store import EARLIER_BUILD
from ...site_addresses import evidence_anchor, matrix_anchor
from ...topics import TOPICS
from ..build.links import href_marker, raw_html, register_label
from ..build.page_data import data_name, data_src, later_data
from ..build.state import BuildState, get_state
from ..build.tracking import ALL_CLAIMS, note_shown
from .accelerators import accelerator_backends, page_docname
from .downloads import download_for
from .evidence import SYMBOLS, UNCONFINED, origin_text
from .grid import ATTRIBUTED, KINDS, NOT_RUN, Cell, Column, Grid, device_words
from .safe_html import Html, attributes
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


def _run(cell: Cell, shown: bool, shared_mark: str) -> Html:
    symbol, word = WORDS[cell.kind]
    note = f", {cell.entry.record.note}" if cell.entry and cell.entry.record.note else ""
    inner = Html('<span class="tc-badge tc-{}">{} {}</span>').format(cell.kind, symbol, word + note)
    if cell.entry is not None:
        inner += Html(' <span class="tc-date">{}</span>').format(cell.entry.record.date)
        if cell.entry.source.mark != shared_mark:
            inner += Html(' <span class="tc-badge tc-source">{}</span>').format(cell.entry.source.mark)
        if cell.entry.record.unconfined:
            inner += Html(' <span class="tc-badge tc-unconfined">{}</span>').format(UNCONFINED)
        inner += Html(' <span class="tc-badge tc-stale">stale</span>') if cell.stale else ""
        inner += "" if cell.target else Html(' <span class="tc-scope">outside its scope</span>')
    data = attributes(data_version=cell.version, data_verdict=cell.kind, hidden=not shown)
    if cell.entry is None:
        return Html('<span class="tc-run"{}>{}</span>').format(data, inner)
    href = href_marker(cell.claim.id, evidence_anchor(cell.claim.id, cell.backend, cell.version))
    return Html('<a class="tc-run {}" href="{}"{}>{}</a>').format(cell.entry.source.css_class, href, data, inner)


def _cell(
    grid: Grid, claim: Claim, column: Column, ranges: list[RangeView], marks: dict[str, str]
) -> tuple[Html, Html]:
    """The cell with the version its header shows, and the runs of every other version (loaded when picked)."""
    target = claim.covers(column.backend)
    mark = Html('<span class="tc-target-mark">◎ about {}</span>').format(column.backend) if target else ""
    cells = grid.cells(claim, column.backend)
    shown = _run(cells[0], True, marks.get(cells[0].version, "")) if cells else ""
    later = Html("").join(_run(cell, False, marks.get(cell.version, "")) for cell in cells[1:])
    later += Html("").join(view.run_html(claim.id) for view in ranges if claim.executable)  # (versions.py)
    label = Html('<span class="tc-cell-backend">{}</span>').format(column.backend)  # shown where rows are cards
    td = Html("<td{}>{}{}{}</td>").format(
        attributes(data_backend=column.backend, class_="tc-target" if target else None), label, mark, shown
    )
    return td, later


def _totals(grid: Grid, column: Column) -> Html:
    out = Html("")
    for i, version in enumerate(column.versions or ("",)):
        counts = grid.totals(column.backend, version)
        items = Html("").join(
            Html(
                '<span class="tc-total tc-total-{}" data-kind="{}">{}&#8239;<span class="tc-n">{}</span>'
                '<span class="tc-sr"> {}</span></span>'
            ).format(kind, kind, WORDS[kind][0], counts[kind], WORDS[kind][1])
            for kind in TOTALED
        )
        out += Html('<span class="tc-totals"{}>{}</span>').format(attributes(data_version=version, hidden=i > 0), items)
    return out


def _backend_link(backend: str, pages: dict[str, str]) -> Html:
    """The backend's name, linking to its accelerator page where it has one."""
    if backend in pages:
        return Html('<a href="{}">{}</a>').format(pages[backend], backend)
    return Html("{}").format(backend)


def _header(grid: Grid, column: Column, ranges: list[RangeView], marks: dict[str, str], pages: dict[str, str]) -> Html:
    devices = Html("").join(
        Html('<span class="tc-device"{}>{}{}</span>').format(
            attributes(data_version=v, hidden=i > 0),
            " / ".join(column.devices.get(v, ())),
            Html('<span class="tc-badge tc-source">{}</span>').format(marks[v]) if v in marks else "",
        )
        for i, v in enumerate(column.versions)
    )
    picks = [(v, v) for v in column.versions] + [(view.value, view.label) for view in ranges]
    if len(picks) > 1:
        options = Html("").join(Html('<option value="{}">{}</option>').format(v, label) for v, label in picks)
        version = Html(
            '<label class="tc-version"><span class="tc-sr">version shown for {}</span>'
            '<select data-tc-version="{}">{}</select></label>'
        ).format(column.backend, column.backend, options)
    else:
        version = Html('<span class="tc-version">{}</span>').format(column.shown)
    return Html('<th scope="col" data-backend="{}"><span class="tc-backend">{}</span>{}{}{}</th>').format(
        column.backend, _backend_link(column.backend, pages), devices, version, _totals(grid, column)
    )


def _attributed(claim: Claim, span: int) -> Html:
    """One cell across the row of a claim that has no verdict anywhere."""
    words = f"❝ {and_words(claim.claimed_by)}'s word, no public method: no verdict on any backend"
    return Html(
        '<td class="tc-attributed-row" colspan="{}"><span class="tc-run" data-verdict="{}">'
        '<span class="tc-badge tc-attributed">{}</span></span></td>'
    ).format(span, ATTRIBUTED, words)


def _row(
    grid: Grid,
    claim: Claim,
    columns: list[Column],
    ranges: dict[str, list[RangeView]],
    marks: dict[str, dict[str, str]],
) -> tuple[Html, dict[str, Html]]:
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
    head = Html('<th scope="row"><a href="{}">{}</a><span class="tc-about">{}</span></th>').format(
        href_marker(claim.id), claim.title, "about " + and_words(claim.about)
    )
    later: dict[str, Html] = {}
    if claim.executable:
        cells = Html("")
        for column in columns:
            cell, later[column.backend] = _cell(
                grid, claim, column, ranges.get(column.backend, []), marks[column.backend]
            )
            cells += cell
    else:
        cells = _attributed(claim, len(columns))
    row = Html('<tr class="tc-claim-row" id="{}" data-topic="{}" data-about="{}" data-text="{}">{}{}</tr>').format(
        matrix_anchor(claim.id), claim.topic, " ".join(claim.about), " ".join(words).lower(), head, cells
    )
    return row, {backend: runs for backend, runs in later.items() if runs}


def _no_record(grid: Grid, empty: list[Column], pages: dict[str, str]) -> Html:
    """The backends with no record at all, named once instead of a column of empty cells each."""
    if not empty:
        return Html("")
    names = Html(", ").join(Html("{} ({})").format(_backend_link(c.backend, pages), c.reader_name) for c in empty)
    about = {c.backend: sum(1 for claim in grid.claims.claims.values() if claim.covers(c.backend)) for c in empty}
    counts = ", ".join(f"{n} about {b}" for b, n in about.items())
    return Html(
        '<p class="tc-no-record">No record yet from {}: no claim ran there, so they have no column. '
        "Claims about them: {}; each page lists them with what ran on stand-ins.</p>"
    ).format(names, counts)


def _backend_notes(grid: Grid, pages: dict[str, str]) -> Html:
    """Shown when the reader filters by a backend: what the columns beside its claims are."""
    notes = Html("")
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
            Html(' <a href="{}">What is known about {}</a>.').format(pages[column.backend], name)
            if column.backend in pages
            else ""
        )
        notes += Html('<p class="tc-backend-note" data-backend="{}" hidden>Claims about {} ({}): {}.{}</p>').format(
            column.backend, column.backend, name, where, page
        )
    return notes


def _filters(grid: Grid, total: int) -> Html:
    def select(name: str, label: str, values: list[tuple[str, str]]) -> Html:
        options = Html("").join(Html('<option value="{}">{}</option>').format(v, text) for v, text in values)
        return Html('<label>{} <select name="{}">{}</select></label>').format(label, name, options)

    topics = [("", "all topics")] + list(TOPICS.items())
    backends = [("", "any backend")] + [(c.backend, c.backend) for c in grid.columns]
    verdicts = [("", "any verdict")] + [
        (k, f"{WORDS[k][0]} {WORDS[k][1] if k != ATTRIBUTED else 'attributed'}") for k in KINDS
    ]
    return Html(
        '<form class="tc-filters" role="search" aria-label="Filter the claims">{}{}{}'
        '<label>Text <input type="search" name="q" placeholder="title, id, who claims" autocomplete="off"></label>'
        '<button type="reset">Show all</button>'
        '<p class="tc-count" role="status" aria-live="polite">{} of {} claims</p></form>'
    ).format(
        select("topic", "Topic", topics),
        select("backend", "About", backends),
        select("verdict", "Verdict", verdicts),
        total,
        total,
    )


def _legend(state: BuildState, root: str) -> Html:
    items = Html("").join(
        Html('<li><span class="tc-badge tc-{}">{} {}</span> {}</li>').format(k, WORDS[k][0], WORDS[k][1], MEANING[k])
        for k in KINDS
    )
    return Html(
        '<aside class="tc-legend" aria-label="Legend"><h2>Legend</h2><ul>{}'
        '<li><span class="tc-target-mark">◎ about cpu</span> '
        "the claim is about the backend of that column, so its verdict there speaks to it; "
        "it says nothing of the accelerator the filter names</li>"
        '<li><span class="tc-scope">outside its scope</span> a verdict on a backend the claim is not about '
        "(the CPU reference, XLA on the CPU): "
        "evidence about what ran there, never about the vendor's hardware</li>"
        '<li><span class="tc-badge tc-stale">stale</span> made by an older script, or older than the age limit</li>'
        "<li>Dates are UTC. A header's counts are for the version it shows and the rows shown; "
        "pick another version in the header. "
        "Click a cell for its evidence: the reason, the checks and the environment of that run.</li></ul>"
        '<p class="tc-stamp">{}</p>{}</aside>'
    ).format(items, stamp(state), _downloads(state, root))


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


def _downloads(state: BuildState, root: str) -> Html:
    files: dict[str, list] = {}
    for history in state.store.entries.values():
        for entry in history:
            if entry.origin != EARLIER_BUILD:
                files.setdefault(entry.origin, []).append(entry)
    items = Html("")
    for entries in sorted(files.values(), key=lambda entries: entries[0].column):
        download = download_for(entries[0])
        what = (
            f"{entries[0].column}, {len(entries)} record{'s' if len(entries) > 1 else ''} ({origin_text(entries[0])})"
        )
        items += Html('<li>{}: <a href="{}{}">JSON</a> · <a href="{}{}">CSV</a></li>').format(
            what, root, download.json, root, download.csv
        )
    return Html('<h2>Downloads</h2><ul class="tc-downloads">{}</ul>').format(items) if items else Html("")


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
        rows, later = Html(""), {}
        for topic, topic_claims in claims.by_topic().items():
            if topic_claims:
                rows += Html(
                    '<tr class="tc-topic-row" data-topic="{}"><th scope="rowgroup" colspan="{}">'
                    '<span>{} <span class="tc-topic-count">({} claim{})</span></span></th></tr>'
                ).format(
                    topic, len(columns) + 1, TOPICS[topic], len(topic_claims), "s" if len(topic_claims) > 1 else ""
                )
            for claim in topic_claims:
                register_label(self.env, matrix_anchor(claim.id), claim.title)
                row, later[matrix_anchor(claim.id)] = _row(grid, claim, columns, ranges, marks)
                rows += row
        total = len(claims.claims)
        caption = Html(
            '<span class="tc-caption-count">{} claims</span> × {} backends with records. '
            "Each cell: the newest verdict of the claim on the backend, "
            "for the version its header names; ∅ where no record exists."
        ).format(total, len(columns))
        later = {row: runs for row, runs in later.items() if runs}
        docname = self.env.docname
        data = attributes(data_tc_later=data_name(docname), data_tc_src=data_src(docname)) if later else ""
        heads = Html("").join(
            _header(grid, column, ranges.get(column.backend, []), marks[column.backend], pages) for column in columns
        )
        markup = Html(
            '<div class="tc-matrix-page">{}{}{}<div class="tc-matrix-layout">'
            '<div class="tc-matrix-scroll" tabindex="0" role="region" aria-label="Claims × backends">'
            '<table class="tc-matrix"{}><caption>{}</caption>'
            '<thead><tr><th scope="col" class="tc-corner">Claim</th>{}</tr></thead>'
            "<tbody>{}</tbody></table>"
            '<p class="tc-no-matches" hidden>No claim matches these filters. '
            '<button type="button" data-tc-reset>Show all claims</button></p></div>'
            "{}</div></div>"
        ).format(
            _filters(grid, total),
            _backend_notes(grid, pages),
            _no_record(grid, empty, pages),
            data,
            caption,
            heads,
            rows,
            _legend(state, "../" * docname.count("/")),
        )
        return [raw_html(markup)] + ([later_data("matrix", later)] if later else [])


def setup_matrix(app) -> None:
    app.add_directive("claims-matrix", ClaimsMatrixDirective)
