"""The ``claim`` and ``topic-claims`` directives and the ``claim-verdict`` role.

A claim renders as a section: verdict badges (one per backend column, text and
symbol, never colour alone), the statement, who made it and the sources with
quotes, caveats, the evidence of every backend with its environment, the
history across versions, and a link to the gallery example that verified it.
Everything about verdicts comes from the results store; no record, no verdict.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective, SphinxRole

from ..claims import Claim
from ..records import CheckResult, Verdict
from ..store import EARLIER_BUILD, THIS_BUILD, Entry
from ..topics import TOPICS
from .state import BuildState, get_state, warn
from .tracking import note_shown

SYMBOLS = {
    Verdict.HOLDS: "✔",
    Verdict.REFUTED: "✘",
    Verdict.UNVERIFIED: "?",
    Verdict.ERROR: "⚠",
}
NOT_RUN = "not run"


def badge(text: str, kind: str) -> nodes.inline:
    return nodes.inline("", text, classes=["tc-badge", f"tc-{kind}"])


def verdict_badge(entry: Entry | None, stale: str = "") -> nodes.inline:
    if entry is None:
        return badge(f"∅ {NOT_RUN}", "notrun")
    record = entry.record
    text = f"{SYMBOLS[record.verdict]} {record.verdict.value}"
    container = nodes.inline(classes=["tc-verdict"])
    container += badge(text, record.verdict.value)
    if stale:
        container += badge("stale", "stale")
    return container


def freshness_text(entry: Entry) -> str:
    env = entry.record.environment
    where = "this build" if entry.origin == THIS_BUILD else entry.origin
    return f"verified on {env.backend}, torch {env.torch}, {entry.record.date} ({where})"


def attributed_badge() -> nodes.inline:
    return badge("❝ attributed — no verdict", "attributed")


def paragraph(*children) -> nodes.paragraph:
    para = nodes.paragraph()
    for child in children:
        para += nodes.Text(child) if isinstance(child, str) else child
    return para


def _link(text: str, url: str) -> nodes.reference:
    return nodes.reference("", text, refuri=url)


def _doc_link(text: str, docname: str) -> addnodes.pending_xref:
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=f"/{docname}", refexplicit=True, refwarn=True)
    ref += nodes.inline("", text)
    return ref


def _bullets(items: list[nodes.Node]) -> nodes.bullet_list:
    bullets = nodes.bullet_list()
    for item in items:
        li = nodes.list_item()
        li += item
        bullets += li
    return bullets


def table(headers: list[str], rows: list[list[nodes.Node | str]], classes: list[str]) -> nodes.table:
    table = nodes.table(classes=classes)
    group = nodes.tgroup(cols=len(headers))
    table += group
    for _ in headers:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += _row(headers)
    body = nodes.tbody()
    group += body
    for row in rows:
        body += _row(row)
    return table


def _row(cells: list[nodes.Node | str]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += cell if isinstance(cell, nodes.Body) else paragraph(cell)
        row += entry
    return row


def _measurements(check: CheckResult) -> nodes.Node:
    lines = []
    for m in check.measurements:
        unit = f" {m.unit}" if m.unit else ""
        judged = f" ({m.tolerance})" if m.tolerance else ""
        value = f"{m.value:.4g}" if isinstance(m.value, float) else str(m.value)
        lines.append(paragraph(nodes.literal("", f"{m.name} = {value}{unit}{judged}")))
    if check.detail:
        lines.append(paragraph(check.detail))
    container = nodes.container(classes=["tc-measurements"])
    container.extend(lines or [paragraph("—")])
    return container


def evidence(state: BuildState, claim: Claim, entry: Entry) -> list[nodes.Node]:
    """Checks, conditions and environment of one record."""
    record, env = entry.record, entry.record.environment
    out: list[nodes.Node] = []
    stale = state.store.stale_reason(entry, state.script_sha.get(claim.id), state.max_age_days)
    head = paragraph(nodes.strong("", entry.column), " ", verdict_badge(entry, stale), " ", freshness_text(entry))
    out.append(head)
    if record.reason:
        out.append(paragraph(nodes.emphasis("", "Reason: "), record.reason))
    if stale:
        out.append(paragraph(nodes.emphasis("", "Stale: "), stale))
    if record.checks:
        rows = [[c.name, badge(f"{SYMBOLS[c.outcome]} {c.outcome.value}", c.outcome.value), _measurements(c)] for c in record.checks]
        out.append(table(["Check", "Outcome", "Measurements"], rows, ["tc-checks"]))
    facts = [f"{k}: {v}" for k, v in record.conditions.items()]
    facts.append(f"device: {env.device} ({env.device_name})")
    facts.append("software: " + ", ".join(f"{k} {v}" for k, v in sorted(env.packages.items())))
    if env.accelerator_runtime:
        facts.append("runtime: " + ", ".join(f"{k} {v}" for k, v in env.accelerator_runtime.items()))
    facts.append(f"Python {env.python} on {env.os} ({env.machine}); torchclaims {env.torchclaims}")
    if env.env_vars:
        facts.append("environment variables: " + ", ".join(f"{k}={v}" for k, v in env.env_vars.items()))
    facts.append(f"duration {record.duration_s:.2f} s; script {record.script.path} (sha256 {record.script.sha256[:12]})")
    details = nodes.container(classes=["tc-environment"])
    details += _bullets([paragraph(f) for f in facts])
    out.append(details)
    out.extend(figures(state, entry))
    if record.log_tail and record.verdict is Verdict.ERROR:
        out.append(nodes.literal_block(record.log_tail, record.log_tail, classes=["tc-log"]))
    return out


def figures(state: BuildState, entry: Entry) -> list[nodes.Node]:
    """Figures a results file brought (this build's own are on the gallery page)."""
    if entry.origin in (THIS_BUILD, EARLIER_BUILD) or state.results_dir is None:
        return []
    out = []
    for index, figure in enumerate(entry.record.figures, 1):
        if not (state.results_dir / figure).is_file():
            warn(f"{entry.origin} names figure {figure}, which is not in {state.results_dir}", "results")
            continue
        image = nodes.image(uri=f"{state.results_uri}/{figure}", alt=f"figure {index} of the {entry.column} run", width="420px")
        out.append(image)
    return out


def history(state: BuildState, claim: Claim) -> nodes.Node | None:
    entries = state.store.history(claim.id)
    if len(entries) < 2:
        return None
    rows = [[e.record.date, e.column, verdict_badge(e), e.origin] for e in entries]
    return table(["Date", "Backend and version", "Verdict", "From"], rows, ["tc-history"])


def claim_section(state: BuildState, claim: Claim, docname: str) -> nodes.section:
    section = nodes.section(ids=[f"claim-{claim.id}"], classes=["tc-claim"])
    section += nodes.title("", claim.title)
    latest = state.store.latest_by_column(claim.id)
    badges = nodes.paragraph(classes=["tc-badges"])
    if not claim.executable:
        badges += attributed_badge()
    elif not latest:
        badges += verdict_badge(None)
    for column, entry in latest.items():
        badges += nodes.inline("", column + " ", classes=["tc-column"])
        badges += verdict_badge(entry, state.store.stale_reason(entry, state.script_sha.get(claim.id), state.max_age_days))
        badges += nodes.Text(" ")
    section += badges
    statement = nodes.block_quote(classes=["tc-statement"])
    statement += paragraph(claim.statement)
    section += statement
    section += paragraph(
        nodes.emphasis("", "Claimed by "), claim.made_by, f" · topic: {TOPICS[claim.topic]} · about: {', '.join(claim.backends)} · id: ",
        nodes.literal("", claim.id),
    )
    sources = []
    for source in claim.sources:
        parts = [nodes.emphasis("", f"“{source.quote}”"), " — ", _link(source.publisher, source.url), f" ({source.date})"]
        if not source.confirmed:
            parts.append(badge("unconfirmed", "unconfirmed"))
        if source.note:
            parts.append(f" {source.note}")
        sources.append(paragraph(*parts))
    section += nodes.rubric("", "Sources")
    section += _bullets(sources)
    if claim.caveats:
        section += nodes.rubric("", "Caveats")
        section += _bullets([paragraph(c) for c in claim.caveats])
    if claim.executable:
        section += nodes.rubric("", "Evidence")
        if not latest:
            section += paragraph("No result record exists for this claim yet, so there is no verdict.")
        for entry in latest.values():
            section.extend(evidence(state, claim, entry))
        table = history(state, claim)
        if table is not None:
            section += nodes.rubric("", "History across versions")
            section += table
        if claim.id in state.script_sha:
            section += paragraph("Verification script: ", _doc_link(claim.script, state.example_docname(claim)))
        else:
            section += paragraph("Verification script: ", nodes.literal("", claim.script), " (missing: the claim cannot be verified)")
    if claim.see_also:
        links = [claim_ref(other, nodes.literal("", other)) for other in claim.see_also]
        section += paragraph("See also: ", *_join(links))
    return section


class claim_link(nodes.Inline, nodes.Element):  # noqa: N801 (docutils node naming)
    """A link to the section showing a claim, resolved once every page is read.

    Sphinx's own ``ref`` resolution would flatten the children to text, losing
    the verdict badges a matrix cell links with.
    """


def claim_ref(claim_id: str, child: nodes.Node) -> claim_link:
    return claim_link("", child, claim_id=claim_id)


class ResolveClaimLinks(SphinxPostTransform):
    default_priority = 5  # before Sphinx resolves its own references

    def run(self, **kwargs) -> None:
        labels = self.env.get_domain("std").labels
        for node in list(self.document.findall(claim_link)):
            target = labels.get(f"claim-{node['claim_id']}")
            if target is None:
                warn(f"claim {node['claim_id']!r} is not shown on any page, so it cannot be linked", "link", location=node)
                node.replace_self(node.children)
                continue
            docname, label, _ = target
            uri = self.app.builder.get_relative_uri(self.env.docname, docname) + f"#{label}"
            reference = nodes.reference("", "", *node.children, refuri=uri, internal=True)
            node.replace_self(reference)


def _join(items: list[nodes.Node]) -> list[nodes.Node | str]:
    out: list[nodes.Node | str] = []
    for i, item in enumerate(items):
        out.extend([", "] if i else [])
        out.append(item)
    return out


class ClaimDirective(SphinxDirective):
    """``{claim} <id>``: render one claim with its verdicts and evidence."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env.app)
        claim = state.claims.claims.get(self.arguments[0])
        if claim is None:
            warn(f"unknown claim id {self.arguments[0]!r}", "directive", location=self.get_location())
            return []
        note_shown(self.env, [claim.id], state.digest([claim.id]))
        _register_label(self.env, claim)
        return [claim_section(state, claim, self.env.docname)]


class TopicClaimsDirective(SphinxDirective):
    """``{topic-claims} <topic>``: every claim of a topic, in id order."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env.app)
        topic = self.arguments[0]
        if topic not in TOPICS:
            warn(f"unknown topic {topic!r}; expected one of {', '.join(TOPICS)}", "directive", location=self.get_location())
            return []
        claims = state.claims.by_topic()[topic]
        note_shown(self.env, [c.id for c in claims], state.digest([c.id for c in claims]), key=f"topic:{topic}")
        for claim in claims:
            _register_label(self.env, claim)
        return [claim_section(state, claim, self.env.docname) for claim in claims]


def _register_label(env, claim: Claim) -> None:
    """Make ``{ref}`claim-<id>``` resolve to the claim's section."""
    domain = env.get_domain("std")
    domain.labels[f"claim-{claim.id}"] = (env.docname, f"claim-{claim.id}", claim.title)
    domain.anonlabels[f"claim-{claim.id}"] = (env.docname, f"claim-{claim.id}")


class ClaimVerdictRole(SphinxRole):
    """``:claim-verdict:`<id>```: the verdict badge of a claim on this build's backend."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        state = get_state(self.env.app)
        claim_id = self.text.strip()
        if claim_id not in state.claims.claims:
            warn(f"unknown claim id {claim_id!r}", "role", location=self.get_location())
            return [nodes.literal("", claim_id)], []
        note_shown(self.env, [claim_id], state.digest([claim_id]))
        build = [e for e in state.store.history(claim_id) if e.origin == THIS_BUILD]
        entry = build[0] if build else None
        out = nodes.inline(classes=["tc-role"])
        out += verdict_badge(entry)
        out += nodes.Text(" " + freshness_text(entry) if entry else " (no record from this build)")
        return [out], []


def setup_claim(app) -> None:
    app.add_directive("claim", ClaimDirective)
    app.add_directive("topic-claims", TopicClaimsDirective)
    app.add_role("claim-verdict", ClaimVerdictRole())
    app.add_node(claim_link)
    app.add_post_transform(ResolveClaimLinks)
