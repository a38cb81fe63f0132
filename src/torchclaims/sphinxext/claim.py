"""The ``claim`` and ``topic-claims`` directives and the ``claim-verdict`` role.

A claim renders as a section: who makes the claim, about what, in their words;
the proposition we check and how it relates to their claim; one verdict line
per backend column (text and symbol, never colour alone, with the device it ran
on and whether that backend is within the claim's scope); the sources with
quotes, caveats, the evidence of every backend with its environment, the
history across versions, and a link to the gallery example that verified it.
Everything about verdicts comes from the results store; no record, no verdict.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective, SphinxRole

from ..claims import Claim, Relation
from ..freshness import stale_reason
from ..records import CheckResult, Verdict
from ..scope import about_text, and_words, ran_on, scope_note
from ..store import EARLIER_BUILD, THIS_BUILD, Entry
from ..topics import TOPICS
from .markup import badge, bullets, doc_link, join_nodes, link, paragraph, table
from .state import BuildState, get_state, warn
from .tracking import note_shown

SYMBOLS = {
    Verdict.HOLDS: "✔",
    Verdict.REFUTED: "✘",
    Verdict.UNVERIFIED: "?",
    Verdict.ERROR: "⚠",
}
NOT_RUN = "not run"


def verdict_badge(entry: Entry | None, stale: str = "") -> nodes.inline:
    if entry is None:
        return badge(f"∅ {NOT_RUN}", "notrun")
    record = entry.record
    text = f"{SYMBOLS[record.verdict]} {record.verdict.value}" + (f", {record.note}" if record.note else "")
    container = nodes.inline(classes=["tc-verdict"])
    container += badge(text, record.verdict.value)
    if stale:
        container += badge("stale", "stale")
    return container


def freshness_text(entry: Entry) -> str:
    env = entry.record.environment
    where = "this build" if entry.origin == THIS_BUILD else entry.origin
    return f"verified on {ran_on(env)}, torch {env.torch}, {entry.record.date} ({where})"


def scope_badge(claim: Claim, backend: str) -> list[nodes.Node]:
    """Beside every verdict: what a verdict outside the claim's scope does not say."""
    note = scope_note(claim, backend)
    return [" ", nodes.inline("", f"({note})", classes=["tc-scope"])] if note else []


def verdict_line(state: BuildState, claim: Claim, entry: Entry) -> nodes.paragraph:
    """'cpu · torch 2.13.0 ✔ holds verified on cpu on <CPU>, ... (outside the claim's scope: ...)'."""
    stale = stale_reason(entry.record, state.script_sha.get(claim.id), state.max_age_days)
    return paragraph(
        nodes.strong("", entry.column), " ", verdict_badge(entry, stale), " ", freshness_text(entry), *scope_badge(claim, entry.backend)
    )


def attributed_badge() -> nodes.inline:
    return badge("❝ attributed — no verdict", "attributed")


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
    stale = stale_reason(entry.record, state.script_sha.get(claim.id), state.max_age_days)
    out.append(verdict_line(state, claim, entry))
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
    details += bullets([paragraph(f) for f in facts])
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
    rows = [
        [e.record.date, paragraph(f"{e.column}, {ran_on(e.record.environment)}", *scope_badge(claim, e.backend)), verdict_badge(e), e.origin]
        for e in entries
    ]
    return table(["Date", "Backend, version and device", "Verdict", "From"], rows, ["tc-history"])


def claim_and_proposition(claim: Claim) -> list[nodes.Node]:
    """Who claims what, in their words, kept apart from what we check."""
    if claim.relation is Relation.OWN_FINDING:
        says = paragraph(nodes.strong("", "Our own finding"), f" about {about_text(claim)}; no source makes this claim (the sources below are evidence).")
    else:
        first = claim.sources[0]
        more = f" (and {len(claim.sources) - 1} more source{'s' if len(claim.sources) > 2 else ''} below)" if len(claim.sources) > 1 else ""
        says = paragraph(
            nodes.strong("", f"Claimed by {and_words(claim.claimed_by)}"), f" about {about_text(claim)}: ",
            nodes.emphasis("", f"“{first.quote}”"), " — ", link(first.publisher, first.url), f" ({first.date}){more}",
        )
    says["classes"].append("tc-source-claim")
    intro = claim.relation.wording if claim.executable else "What they claim (attributed: no verdict here)"
    proposition = nodes.block_quote(classes=["tc-statement"])
    proposition += paragraph(nodes.emphasis("", f"{intro}: "), claim.proposition)
    return [says, proposition]


def claim_section(state: BuildState, claim: Claim, docname: str) -> nodes.section:
    section = nodes.section(ids=[f"claim-{claim.id}"], classes=["tc-claim"])
    section += nodes.title("", claim.title)
    latest = state.store.latest_by_column(claim.id)
    section.extend(claim_and_proposition(claim))
    verdicts = nodes.container(classes=["tc-badges"])
    if not claim.executable:
        verdicts += paragraph(attributed_badge())
    elif not latest:
        verdicts += paragraph(verdict_badge(None))
    for entry in latest.values():
        verdicts += verdict_line(state, claim, entry)
    section += verdicts
    section += paragraph(f"Topic: {TOPICS[claim.topic]} · id: ", nodes.literal("", claim.id))
    sources = []
    for source in claim.sources:
        parts = [nodes.emphasis("", f"“{source.quote}”"), " — ", link(source.publisher, source.url), f" ({source.date})"]
        if not source.confirmed:
            parts.append(badge("unconfirmed", "unconfirmed"))
        if source.note:
            parts.append(f" {source.note}")
        sources.append(paragraph(*parts))
    section += nodes.rubric("", "Sources")
    section += bullets(sources)
    if claim.caveats:
        section += nodes.rubric("", "Caveats")
        section += bullets([paragraph(c) for c in claim.caveats])
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
            section += paragraph("Verification script: ", doc_link(claim.script, state.example_docname(claim)))
        else:
            section += paragraph("Verification script: ", nodes.literal("", claim.script), " (missing: the claim cannot be verified)")
    if claim.see_also:
        links = [claim_ref(other, nodes.literal("", other)) for other in claim.see_also]
        section += paragraph("See also: ", *join_nodes(links))
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
    """``:claim-verdict:`<id>```: the verdict of a claim from this build;
    ``:claim-verdict:`<id> <backend>```: its newest verdict on that backend."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        state = get_state(self.env.app)
        claim_id, _, backend = self.text.strip().partition(" ")
        backend = backend.strip()
        if claim_id not in state.claims.claims:
            warn(f"unknown claim id {claim_id!r}", "role", location=self.get_location())
            return [nodes.literal("", claim_id)], []
        note_shown(self.env, [claim_id], state.digest([claim_id]))
        history = state.store.history(claim_id)
        chosen = [e for e in history if e.backend == backend] if backend else [e for e in history if e.origin == THIS_BUILD]
        entry = chosen[0] if chosen else None
        out = nodes.inline(classes=["tc-role"])
        out += verdict_badge(entry)
        if entry is None:
            missing = f"no record on {backend}" if backend else "no record from this build"
            if backend:
                warn(f"claim-verdict: {claim_id} has {missing}", "role", location=self.get_location())
            out += nodes.Text(f" ({missing})")
            return [out], []
        out += nodes.Text(" " + freshness_text(entry))
        out.extend(nodes.Text(n) if isinstance(n, str) else n for n in scope_badge(state.claims.claims[claim_id], entry.backend))
        return [claim_ref(claim_id, out) if backend else out], []


def setup_claim(app) -> None:
    app.add_directive("claim", ClaimDirective)
    app.add_directive("topic-claims", TopicClaimsDirective)
    app.add_role("claim-verdict", ClaimVerdictRole())
    app.add_node(claim_link)
    app.add_post_transform(ResolveClaimLinks)
