"""The evidence of a claim: one folded block per backend, what differs between runs.

Each backend with records gets a ``<details>`` block with a stable anchor
(``claim-<id>--<backend>``, see links.py); each version's run inside it has its
own (``...--<version>``), which is where a matrix cell leads. The first run in
matrix order is shown whole; every other run shows only the checks whose
outcome or measurements differ from it and which versions and settings differ,
so the same table is never repeated per backend. Every summary line carries the
backend, device, version, date and origin, and says when the backend is
outside the claim's scope.
"""

from __future__ import annotations

from docutils import nodes

from ..changes import describe
from ..claims import Claim
from ..downloads import download_for
from ..grid import Cell, Grid
from ..records import CheckResult, ResultRecord, Verdict
from ..scope import ran_on, scope_note
from ..store import EARLIER_BUILD, THIS_BUILD, Entry
from .links import evidence_anchor
from .markup import badge, bullets, folded, link, paragraph, table, value_text
from .state import BuildState, warn

SYMBOLS = {Verdict.HOLDS: "✔", Verdict.REFUTED: "✘", Verdict.UNVERIFIED: "?", Verdict.ERROR: "⚠"}
NOT_RUN = "not run"


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
    if stale:
        container += badge("stale", "stale")
    return container


def origin_text(entry: Entry) -> str:
    """Where a record came from: this build, an earlier build, or a results file (and its label)."""
    if entry.origin in (THIS_BUILD, EARLIER_BUILD):
        return entry.origin
    return f"{entry.origin}" + (f", {entry.label}" if entry.label else "")


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
    """'xla · XLA on CPU (AMD EPYC) · torch_xla 2.9.0 ✘ refuted 2026-11-29, xla-….json (outside the scope …)'."""
    entry = cell.entry
    return [
        nodes.strong("", grid.column(cell.backend).header(cell.version)), " ", verdict_badge(entry, cell.stale),
        nodes.inline("", f" {entry.record.date}, {origin_text(entry)}", classes=["tc-date"]), *scope_words(cell.claim, cell.backend),
    ]


def _measurements(check: CheckResult) -> nodes.Node:
    container = nodes.container(classes=["tc-measurements"])
    for m in check.measurements:
        value = f"{m.value:.4g}" if isinstance(m.value, float) else str(m.value)
        text = f"{m.name} = {value}" + (f" {m.unit}" if m.unit else "")
        container += paragraph(value_text(text), *([nodes.inline("", f" ({m.tolerance})", classes=["tc-tolerance"])] if m.tolerance else []))
    if check.detail:
        container += paragraph(check.detail)
    if not len(container):
        container += paragraph("—")
    return container


def _same(check: CheckResult, other: CheckResult | None) -> bool:
    return other is not None and (check.outcome, check.detail, check.measurements) == (other.outcome, other.detail, other.measurements)


def checks(record: ResultRecord, reference: Cell | None, label: str) -> list[nodes.Node]:
    """The checks table; against a reference run, only the checks that differ from it."""
    theirs = {c.name: c for c in reference.entry.record.checks} if reference else {}
    shown = [c for c in record.checks if not _same(c, theirs.get(c.name))]
    rows = [[c.name, badge(f"{SYMBOLS[c.outcome]} {c.outcome.value}", c.outcome.value), _measurements(c)] for c in shown]
    out: list[nodes.Node] = []
    if rows:
        caption = f"Checks of the {label} run" + (" that differ from the run above" if reference else "")
        out.append(table(["Check", "Outcome", "Measurements"], rows, ["tc-checks"], caption=caption))
    same = [c.name for c in record.checks if c not in shown]
    if same:
        where = grid_label(reference)
        out.append(paragraph(f"{len(same)} check{'s' if len(same) > 1 else ''} with the same outcome and measurements as the {where} run: ", *_names(same)))
    return out


def grid_label(cell: Cell) -> str:
    return f"{cell.backend} · {cell.version}"


def _names(names: list[str]) -> list[nodes.Node]:
    out: list[nodes.Node] = []
    for i, name in enumerate(names):
        out.extend([nodes.Text("; ")] if i else [])
        out.append(nodes.emphasis("", name))
    return out


def environment(record: ResultRecord, reference: Cell | None) -> list[nodes.Node]:
    env = record.environment
    facts = [[f"{k}: ", value_text(v)] for k, v in record.conditions.items()]
    facts.append(["device: ", value_text(f"{env.device} ({env.device_name})")])
    facts.append(["software: ", value_text(", ".join(f"{k} {v}" for k, v in sorted(env.packages.items())))])
    if env.accelerator_runtime:
        facts.append(["runtime: ", value_text(", ".join(f"{k} {v}" for k, v in env.accelerator_runtime.items()))])
    facts.append([f"Python {env.python} on {env.os} ({env.machine}); torchclaims {env.torchclaims}"])
    facts.extend([f"variable {k}: ", value_text(v)] for k, v in env.env_vars.items())
    facts.append([f"duration {record.duration_s:.2f} s; script {record.script.path} (sha256 ", nodes.literal("", record.script.sha256[:12]), ")"])
    out: list[nodes.Node] = []
    if reference is not None:
        out.append(paragraph(nodes.emphasis("", f"Differs from the {grid_label(reference)} run: "), describe(reference.entry.record.environment, env)))
    out.append(folded(["Environment and conditions"], [bullets([paragraph(*f) for f in facts])], classes=["tc-environment"]))
    return out


def figures(state: BuildState, entry: Entry, label: str) -> list[nodes.Node]:
    """Figures a results file brought (this build's own are on the gallery page)."""
    if entry.origin in (THIS_BUILD, EARLIER_BUILD) or state.results_dir is None:
        return []
    out = []
    for index, figure in enumerate(entry.record.figures, 1):
        if not (state.results_dir / figure).is_file():
            warn(f"{entry.origin} names figure {figure}, which is not in {state.results_dir}", "results")
            continue
        out.append(nodes.image(uri=f"{state.results_uri}/{figure}", alt=f"figure {index} of the {label} run", width="420px"))
    return out


def run_body(state: BuildState, cell: Cell, reference: Cell | None, named: bool) -> nodes.container:
    """One run's evidence; ``named``: it opens with its own line (when its block holds several versions)."""
    record, label = cell.entry.record, grid_label(cell)
    body = nodes.container(ids=[evidence_anchor(cell.claim.id, cell.backend, cell.version)], classes=["tc-run"])
    if named:
        body += paragraph(*run_line(state.grid, cell))
    body += source_paragraph(cell.entry)
    if record.reason:
        body += paragraph(nodes.emphasis("", "Reason: "), record.reason)
    if cell.stale:
        body += paragraph(nodes.emphasis("", "Stale: "), cell.stale)
    body.extend(checks(record, reference, label))
    body.extend(environment(record, reference))
    body.extend(figures(state, cell.entry, label))
    if record.log_tail and record.verdict is Verdict.ERROR:
        body += nodes.literal_block(record.log_tail, record.log_tail, classes=["tc-log"])
    return body


def evidence_blocks(state: BuildState, claim: Claim) -> list[nodes.Node]:
    """One folded block per backend with records, in matrix order."""
    runs = state.grid.runs(claim)
    reference = runs[0] if runs else None
    blocks = []
    for column in state.grid.columns:
        mine = [cell for cell in runs if cell.backend == column.backend]
        if not mine:
            continue
        line = run_line(state.grid, mine[0])
        for other in mine[1:]:
            line += [nodes.inline("", f" · also {other.version}: ", classes=["tc-date"]), verdict_badge(other.entry, other.stale)]
        body = [run_body(state, cell, None if cell is reference else reference, named=len(mine) > 1) for cell in mine]
        blocks.append(folded(line, body, ids=[evidence_anchor(claim.id, column.backend)], classes=["tc-evidence"]))
    return blocks


def history(state: BuildState, claim: Claim, docname: str) -> nodes.Node | None:
    """Every record of the claim, newest first, each with its results file to download."""
    entries = state.store.history(claim.id)
    if len(entries) < 2:
        return None
    root = "../" * docname.count("/")
    rows = []
    for e in entries:
        download = download_for(e)
        files = paragraph(link("JSON", root + download.json), " · ", link("CSV", root + download.csv))
        where = paragraph(f"{e.column}, {ran_on(e.record.environment)}", *scope_words(claim, e.backend))
        rows.append([e.record.date, where, verdict_badge(e), e.source.describe(), files])
    return table(["Date", "Backend, version and device", "Verdict", "From", "Download"], rows, ["tc-history"], caption="Every record of this claim, newest first")
