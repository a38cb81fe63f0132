"""The evidence of a claim: one folded block, the first run whole and every other run as a landing of its own.

The block (``claim-<id>--evidence``) opens on demand. It shows the first run in
matrix order whole (its source, reason, checks and environment), then one table
with a row per record of the claim, by backend and version. A row is where a
matrix cell leads, so it reads on its own: the claim's title, the run, its
verdict with its own reason, the checks that did not hold with each
measurement against its bound, and only then how its configuration differs
from the first run's (a difference of set-up, not an upgrade), with its results
file to download. The table is written beside the page and loads when the
block opens (page_data.py): with a row per release it is most of a topic page.
Each backend's first row carries ``claim-<id>--<backend>`` and each version's
row ``claim-<id>--<backend>--<version>`` (links.py). Until the table loads, and
for good without JavaScript, the block holds each of those anchors with the
same reading (title, verdict, reason, failed checks) and a link to the run's
whole record. Every line names the backend, device, version, date and origin,
and says when the backend is outside the claim's scope.
"""

from __future__ import annotations

from docutils import nodes

from ...claims import Claim
from ...evidence.records import CheckResult, ResultRecord, Verdict
from ...evidence.scope import scope_note
from ...evidence.store import EARLIER_BUILD, THIS_BUILD, Entry
from ...site_addresses import evidence_anchor
from ...text_safety import quoted
from ..build.page_data import later
from ..build.state import BuildState, warn
from .downloads import download_for
from .grid import Cell, Grid
from .markup import badge, bullets, folded, link, paragraph, table, value_text

SYMBOLS = {Verdict.HOLDS: "✔", Verdict.REFUTED: "✘", Verdict.UNVERIFIED: "?", Verdict.ERROR: "⚠"}
NOT_RUN = "not run"
UNCONFINED = (
    "ran without sandbox"  # beside the verdict of a record whose script ran unconfined, or before the sandbox existed
)


# Characters of a run's reason a landing without JavaScript shows: every run of a page has one there, and an
# error's reason can hold a traceback; the whole record is linked beside it.
LANDING_REASON = 400


def verdict_badge(entry: Entry | None, stale: str = "") -> nodes.inline:
    """'✔ holds' (with what the verdict alone does not show), never colour alone, and
    always where it came from: a file submitted by hand looks different."""
    if entry is None:
        return badge(f"∅ {NOT_RUN}", "notrun")
    record = entry.record
    text = f"{SYMBOLS[record.verdict]} {record.verdict.value}" + (f", {record.note}" if record.note else "")
    container = nodes.inline(classes=["tc-verdict", entry.source.css_class])
    container += badge(text, record.verdict.value)
    container += badge(entry.source.mark, "source")
    if record.unconfined:  # its script could have written anywhere: the reader is told beside the verdict
        container += badge(UNCONFINED, "unconfined")
    if stale:
        container += badge("stale", "stale")
    return container


def origin_text(entry: Entry) -> str:
    """Where a record came from: this build, an earlier build, or a results file (and its label)."""
    if entry.origin in (THIS_BUILD, EARLIER_BUILD):
        return entry.origin
    return f"{entry.origin}" + (f", labelled {quoted(entry.label)}" if entry.label else "")  # the submitter's words


def source_paragraph(entry: Entry) -> nodes.paragraph:
    """Where a record came from, with links to the workflow run and its attestation."""
    source = entry.source
    parts: list = [nodes.emphasis("", "Source: "), source.describe()]
    run_url = source.provenance.run_url if source.provenance else ""
    if run_url:
        parts += [" · ", link("workflow run", run_url)]
    if source.attestation_url:
        check = "gh attestation verify FILE --repo " + source.provenance.repository
        parts += [" · ", link("attestations", source.attestation_url), " (check: ", nodes.literal("", check), ")"]
    return paragraph(*parts)


def scope_words(claim: Claim, backend: str) -> list[nodes.Node]:
    """Beside every verdict: what a verdict outside the claim's scope does not say."""
    note = scope_note(claim, backend)
    return [" ", nodes.inline("", f"({note})", classes=["tc-scope"])] if note else []


def run_line(grid: Grid, cell: Cell) -> list[nodes.Node]:
    """'xla · XLA on the CPU (AMD EPYC) · torch_xla 2.9.0 ✘ refuted 2026-11-29, xla-….json (outside the scope …)'."""
    entry = cell.entry
    return [
        nodes.strong("", grid.column(cell.backend).header(cell.version)),
        " ",
        verdict_badge(entry, cell.stale),
        nodes.inline("", f" {entry.record.date}, {origin_text(entry)}", classes=["tc-date"]),
        *scope_words(cell.claim, cell.backend),
    ]


def _measurements(check: CheckResult) -> nodes.Node:
    container = nodes.container(classes=["tc-measurements"])
    for m in check.measurements:
        value = f"{m.value:.4g}" if isinstance(m.value, float) else str(m.value)
        text = f"{m.name} = {value}" + (f" {m.unit}" if m.unit else "")
        container += paragraph(
            value_text(text),
            *([nodes.inline("", f" ({m.tolerance})", classes=["tc-tolerance"])] if m.tolerance else []),
        )
    if check.detail:
        container += paragraph(check.detail)
    if not len(container):
        container += paragraph("—")
    return container


def _same(check: CheckResult, other: CheckResult | None) -> bool:
    return other is not None and (check.outcome, check.detail, check.measurements) == (
        other.outcome,
        other.detail,
        other.measurements,
    )


def grid_label(cell: Cell) -> str:
    return f"{cell.backend} · {cell.version}"


def checks_table(record: ResultRecord, label: str) -> nodes.table:
    rows = [
        [c.name, badge(f"{SYMBOLS[c.outcome]} {c.outcome.value}", c.outcome.value), _measurements(c)]
        for c in record.checks
    ]
    return table(["Check", "Outcome", "Measurements"], rows, ["tc-checks"], caption=f"Checks of the {label} run")


def environment(record: ResultRecord) -> nodes.bullet_list:
    env = record.environment
    # "condition": the script's statement of its inputs, never read as a fact the build recorded
    facts = [[f"condition {k}: ", value_text(v)] for k, v in record.conditions.items()]
    facts.append(["device: ", value_text(f"{env.device} ({env.device_name})")])
    facts.append(["software: ", value_text(", ".join(f"{k} {v}" for k, v in sorted(env.packages.items())))])
    if env.accelerator_runtime:
        facts.append(["runtime: ", value_text(", ".join(f"{k} {v}" for k, v in env.accelerator_runtime.items()))])
    facts.append([f"Python {env.python} on {env.os} ({env.machine}); torchclaims {env.torchclaims}"])
    facts.extend([f"variable {k}: ", value_text(v)] for k, v in env.env_vars.items())
    facts.append(
        [
            f"duration {record.duration_s:.2f} s; script {record.script.path} (sha256 ",
            nodes.literal("", record.script.sha256[:12]),
            ")",
        ]
    )
    out = bullets([paragraph(*f) for f in facts])
    out["classes"].append("tc-environment")
    return out


def _value(m) -> str:
    value = f"{m.value:.4g}" if isinstance(m.value, float) else str(m.value)
    return value + (f" {m.unit}" if m.unit else "")


def _against_bound(m) -> str:
    """'max abs error = 0.5 (bound: <= 1e-05)': a measurement with the bound it was judged by."""
    return f"{m.name} = {_value(m)}" + (f" (bound: {m.tolerance})" if m.tolerance else "")


def failed_checks(record: ResultRecord, unverified: bool = True) -> list[nodes.Node]:
    """Each check that did not hold: what a landing shows first. A check refuted or in error comes with its
    measurements against their bounds; an unverified one (left out unless ``unverified``) with why it decides
    nothing: its measurements say nothing against a bound, and all of them, on every run of a page, made the
    page too heavy."""
    out = []
    for check in record.checks:
        if check.outcome is Verdict.HOLDS or (check.outcome is Verdict.UNVERIFIED and not unverified):
            continue
        parts: list = [
            nodes.emphasis("", check.name),
            " ",
            badge(f"{SYMBOLS[check.outcome]} {check.outcome.value}", check.outcome.value),
        ]
        if check.measurements and check.outcome is not Verdict.UNVERIFIED:
            parts.append(value_text(" " + "; ".join(_against_bound(m) for m in check.measurements)))
        if check.detail and check.detail not in record.reason:  # the reason says it already
            parts.append(f" {check.detail}")
        out.append(paragraph(*parts))
    return out


def differences(record: ResultRecord, first: ResultRecord, label: str) -> list[nodes.Node]:
    """How a run's set-up differs from the first run's (this run's value, then that one's: neither is
    an upgrade of the other), then the checks that hold here but measured otherwise there."""
    settings = first.environment.differences(record.environment)
    settings.update(
        {
            f"condition {k}": (first.conditions.get(k, "(absent)"), v)
            for k, v in record.conditions.items()
            if first.conditions.get(k) != v
        }
    )
    if "packages.torch" in settings:
        settings.pop("torch", None)  # the same version with its build tag: said once
    out: list[nodes.Node] = []
    if settings:
        out.append(paragraph(nodes.emphasis("", f"Configuration unlike the {label} run:")))
        items = [
            paragraph(value_text(f"{k.removeprefix('packages.')}: {b} here, {a} there"))
            for k, (a, b) in settings.items()
        ]
        out.append(bullets(items))
    theirs = {c.name: c for c in first.checks}
    for check in record.checks:
        other = theirs.get(check.name)
        if check.outcome is not Verdict.HOLDS or _same(check, other):
            continue  # a failed check is given whole above
        parts: list = [nodes.emphasis("", check.name), ": "]
        if other is None or other.outcome != check.outcome:
            parts.append(badge(f"{SYMBOLS[check.outcome]} {check.outcome.value}", check.outcome.value))
        before = {m.name: m for m in other.measurements} if other else {}
        moved = [m for m in check.measurements if before.get(m.name) != m]
        if moved:
            parts.append(
                value_text(
                    " "
                    + "; ".join(
                        f"{m.name} = {_value(m)}" + (f" (there {_value(before[m.name])})" if m.name in before else "")
                        for m in moved
                    )
                )
            )
        out.append(paragraph(*parts))
    return out or [paragraph(f"the same configuration as the {label} run")]


def figures(state: BuildState, entry: Entry, label: str) -> list[nodes.Node]:
    """Figures a results file brought (this build's own are on the gallery page)."""
    if entry.origin in (THIS_BUILD, EARLIER_BUILD) or state.results_dir is None:
        return []
    out = []
    for index, figure in enumerate(entry.record.figures, 1):
        if not (state.results_dir / figure).is_file():
            warn(f"{entry.origin} names figure {figure}, which is not in {state.results_dir}", "results")
            continue
        out.append(
            nodes.image(uri=f"{state.results_uri}/{figure}", alt=f"figure {index} of the {label} run", width="420px")
        )
    return out


def reason(entry: Entry, stale: str = "", limit: int | None = None) -> list[nodes.Node]:
    """The reason a record gives, and why it is stale: visible text, never a tooltip; past ``limit`` characters
    cut, saying so (a landing links the whole record)."""
    text = entry.record.reason
    if limit is not None and len(text) > limit:
        text = text[:limit].rstrip() + " … (cut here: the whole record has the rest)"
    out = [paragraph(nodes.emphasis("", "Reason: "), text)] if text else []
    return out + ([paragraph(nodes.emphasis("", "Stale: "), stale)] if stale else [])


def _ordered(state: BuildState, claim: Claim) -> list[tuple[Entry, Cell | None]]:
    """Every record of the claim in matrix order (backend, then version), each with the cell it stands for, if any."""
    shown = {id(cell.entry): cell for cell in state.grid.runs(claim)}
    order = {(c.backend, v): (i, j) for i, c in enumerate(state.grid.columns) for j, v in enumerate(c.versions)}
    entries = state.store.ranked(claim.id)
    return [
        (e, shown.get(id(e))) for e in sorted(entries, key=lambda e: order.get((e.backend, e.version), (len(order), 0)))
    ]


def claim_title(claim: Claim, anchors: list[str] = ()) -> nodes.paragraph:
    """The claim's title, first in whatever a link lands on (the anchors before it, so it is in view)."""
    title = paragraph(*(nodes.inline(ids=[anchor]) for anchor in anchors), nodes.strong("", claim.title))
    title["classes"].append("tc-run-claim")
    return title


def reading(entry: Entry, stale: str = "", landing: bool = False) -> list[nodes.Node]:
    """A run's verdict with its own reason, then the checks that did not hold against their bounds. A
    ``landing`` (the page's own text, for every run) cuts a long reason and leaves out unverified checks,
    which its reason accounts for; the runs table, loaded when opened, has them whole."""
    return [
        paragraph(verdict_badge(entry, stale)),
        *reason(entry, stale, LANDING_REASON if landing else None),
        *failed_checks(entry.record, unverified=not landing),
    ]


def _landings(state: BuildState, claim: Claim, landings: list[tuple[list[str], Cell, str]]) -> list[nodes.Node]:
    """Where a link into the table of runs lands before the table loads (or without JavaScript, for good):
    each run's anchors, the claim's title, the run, its reading and a link to its whole record."""
    if not landings:
        return []
    lines = nodes.bullet_list()
    for anchors, cell, url in landings:
        lines += nodes.list_item(
            "",
            claim_title(claim, anchors),
            paragraph(*run_where(state, cell.entry, labelled=False)),
            *reading(cell.entry, cell.stale, landing=True),
            paragraph(link("the whole record (JSON)", url)),
        )
    return [lines]


def run_where(state: BuildState, entry: Entry, labelled: bool = True) -> list[nodes.Node]:
    """'xla · XLA on the CPU (AMD EPYC) · torch_xla 2.9.0 2026-11-29, xla-run.json' and, when ``labelled``, the
    file's label (a landing leaves it to the whole record it links)."""
    origin = origin_text(entry) if labelled else entry.origin
    return [
        nodes.strong("", state.grid.column(entry.backend).header(entry.version)),
        nodes.Text(f" {entry.record.date}, {origin}"),
    ]


def evidence(state: BuildState, claim: Claim, docname: str) -> nodes.Node | None:
    """The folded evidence of a claim: the first run whole, then a row per record."""
    records = _ordered(state, claim)
    if not records:
        return None
    first_entry, first = records[0]
    label = grid_label(first)
    root = "../" * docname.count("/")
    whole = nodes.container(
        ids=[evidence_anchor(claim.id, first.backend), evidence_anchor(claim.id, first.backend, first.version)],
        classes=["tc-run"],
    )
    whole += claim_title(claim)
    whole += paragraph(nodes.emphasis("", "The first run, whole: "), *run_line(state.grid, first))
    whole += source_paragraph(first_entry)
    whole.extend(reason(first_entry, first.stale))
    whole += checks_table(first_entry.record, label)
    whole += paragraph(
        nodes.emphasis(
            "", f"Environment and conditions of the {label} run (the table gives only what differs from it):"
        )
    )
    whole += environment(first_entry.record)
    whole.extend(figures(state, first_entry, label))
    if first_entry.record.log_tail and first_entry.record.verdict is Verdict.ERROR:
        whole += nodes.literal_block(first_entry.record.log_tail, first_entry.record.log_tail, classes=["tc-log"])
    body: list[nodes.Node] = [whole]
    rows, ids, anchored, landings = [], [], {first.backend}, []
    for entry, cell in records:
        download = download_for(entry)
        where = paragraph(*run_where(state, entry))
        anchors = []
        if entry.backend not in anchored:  # where a link to the backend's evidence lands
            anchored.add(entry.backend)
            anchors.append(evidence_anchor(claim.id, entry.backend))
            where.extend(
                nodes.Text(n) if isinstance(n, str) else n for n in scope_words(claim, entry.backend)
            )  # once per backend
        if cell is None:
            where += nodes.inline(
                "", " (an older record of this version: the one above is shown in the matrix)", classes=["tc-date"]
            )
        stale = cell.stale if cell else ""
        differs = nodes.container(
            "",
            *(
                differences(entry.record, first_entry.record, label)
                if entry is not first_entry
                else [paragraph("its configuration: the first run, above")]
            ),
        )
        differs.extend(figures(state, entry, grid_label(cell)) if cell is not None and entry is not first_entry else [])
        if entry.record.log_tail and entry.record.verdict is Verdict.ERROR and entry is not first_entry:
            differs += folded(
                ["output"], [nodes.literal_block(entry.record.log_tail, entry.record.log_tail, classes=["tc-log"])]
            )
        rows.append(
            [
                nodes.container("", claim_title(claim, anchors), where),
                nodes.container("", *reading(entry, stale)),
                differs,
                paragraph(link("JSON", root + download.json), " · ", link("CSV", root + download.csv)),
            ]
        )
        ids.append(
            [evidence_anchor(claim.id, entry.backend, entry.version)]
            if cell is not None and entry is not first_entry
            else []
        )
        if anchors or ids[-1]:
            landing = cell or Cell(claim, entry.backend, entry.version, entry)
            landings.append((anchors + ids[-1], landing, root + download.json))
    runs = table(
        [
            "Claim and run",
            "Verdict, its reason and the checks that failed",
            f"Configuration unlike the {label} run",
            "Download",
        ],
        rows,
        ["tc-runs"],
        caption="Every record of this claim, by backend and version",
        row_ids=ids,
    )
    note = (
        f"Every record of this claim, by backend and version ({len(records)}), loads here when this block opens; "
        "each record in full:"
    )
    # most of a topic page's weight: loaded on demand, its anchors in the page
    body.append(later(f"claim-{claim.id}--runs", [runs], note, _landings(state, claim, landings)))
    backends = len({e.backend for e, _ in records})
    summary = [
        f"Evidence: {len(records)} record{'s' if len(records) > 1 else ''} "
        f"on {backends} backend{'s' if backends > 1 else ''}: "
        "checks, environment, what differs per release, downloads"
    ]
    return folded(summary, body, ids=[f"claim-{claim.id}--evidence"], classes=["tc-evidence"])
