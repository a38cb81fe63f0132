"""The ``claim`` and ``topic-claims`` directives and the ``claim-verdict`` role.

A claim renders as a section: who makes the claim, about what, in their words;
the proposition we check and how it relates to their claim; one line per
backend with its newest verdict (text and symbol, never colour alone, with the
device it ran on, whether that backend is within the claim's scope, and the
reason in words), leading to its evidence, beside its strip across releases
(versions.py); a line for the backends the claim is about that have no record
yet; the sources with quotes (folded: the first one is quoted above), caveats,
and the evidence folded into one block that opens on demand (evidence.py); links to the gallery example and to the
claim's row in the matrix. Everything about verdicts comes from the results
store; no record, no verdict. Nothing here is smart-quoted: quotes, flags and
values stay as written.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective, SphinxRole

from ...claims import Claim, Relation
from ...evidence.records import Verdict
from ...evidence.scope import about_text, and_words, claimant_scopes
from ...evidence.store import THIS_BUILD, Entry
from ...site_addresses import claim_anchor, evidence_anchor
from ...topics import TOPICS
from ..build.links import claim_ref, matrix_ref, register_label
from ..build.state import BuildState, get_state, warn
from ..build.tracking import TOPIC, note_shown
from ..views.evidence import evidence, origin_text, reason, run_line, scope_words, verdict_badge
from ..views.grid import device_words
from ..views.markup import badge, bullets, doc_link, folded, join_nodes, paragraph, table
from ..views.versions import strip_placeholder
from ..views.workaround import quoted, workaround_block


def freshness_text(entry: Entry) -> str:
    """'— xla · XLA on the CPU (AMD EPYC) · torch_xla 2.9.0 on torch 2.9.0+cu128 (CUDA build), 2026-11-29,
    xla-….json': where, with what (the version label names torch and its build), when, from where."""
    env = entry.record.environment
    return f"— {env.backend} · {device_words(env)} · {entry.version}, {entry.record.date}, {origin_text(entry)}"


def attributed_badge() -> nodes.inline:
    return badge("❝ attributed — no verdict", "attributed")


def verdict_lines(state: BuildState, claim: Claim) -> nodes.Node:
    """One row per backend with a record: its newest verdict, leading to its evidence, and its strip across releases."""
    if not claim.executable:
        return nodes.container("", paragraph(attributed_badge()), classes=["tc-badges"])
    out = nodes.container(classes=["tc-badges"])
    rows, ran = [], set()
    for column in state.grid.columns:
        cell = state.grid.newest(claim, column.backend)
        if cell is None:
            continue
        ran.add(cell.backend)
        head, _, verdict, *rest = run_line(state.grid, cell)
        link = claim_ref(claim.id, verdict, anchor=evidence_anchor(claim.id, cell.backend, cell.version))
        rows.append(
            [
                paragraph(head),
                nodes.container("", paragraph(link, *rest), *reason(cell.entry, cell.stale)),
                nodes.container("", strip_placeholder(claim.id, cell.backend, cell.entry.record.reason)),
            ]
        )
    if rows:
        out += table(
            ["Backend", "Newest verdict", "Across releases"],
            rows,
            ["tc-headline"],
            caption="The newest verdict on each backend, and its runs across releases",
        )
    missing = [backend for backend in claim.about if backend not in ran]
    if missing:
        names = and_words([state.grid.column(b).header("").removesuffix(" · not run") for b in missing])
        out += paragraph(
            verdict_badge(None),
            nodes.inline(
                "",
                f" on {names}: the claim is about {'them' if len(missing) > 1 else 'it'}, and no record exists yet",
                classes=["tc-date"],
            ),
        )
    return out


def claimant_line(claim: Claim) -> nodes.paragraph:
    """'Claimed by AWS about AWS Trainium (TorchNeuron): “…” — … (2026); by PyTorch about the CPU: “…” — …':
    each claimant with what its own sources are about and its first quote, marked when unconfirmed."""
    parts: list = []
    for index, (claimant, scope) in enumerate(claimant_scopes(claim)):
        source = next(s for s in claim.sources if s.claimant == claimant)
        parts += [
            "; " if index else "",
            nodes.strong("", f"{'by' if index else 'Claimed by'} {claimant}"),
            f" about {scope}: ",
        ]
        parts += quoted(source)
    more = len(claim.sources) - len(claim.claimants)
    if more:
        parts.append(f" (and {more} more source{'s' if more > 1 else ''} below)")
    return paragraph(*parts)


def claim_and_proposition(claim: Claim) -> list[nodes.Node]:
    """Who claims what, in their words, kept apart from what we check."""
    if claim.relation is Relation.OWN_FINDING:
        says = paragraph(
            nodes.strong("", "Our own finding"),
            f" about {about_text(claim)}; no source makes this claim (the sources below are evidence).",
        )
    else:
        says = claimant_line(claim)
    says["classes"].append("tc-source-claim")
    intro = claim.relation.wording if claim.executable else "What they claim (attributed: no verdict here)"
    proposition = nodes.block_quote(classes=["tc-statement"])
    proposition += paragraph(nodes.emphasis("", f"{intro}: "), claim.proposition)
    return [says, proposition]


def _differs_on(state: BuildState, claim: Claim) -> list[str]:
    """The backends a workaround is for: those the claim is about, and any other where its newest run refuted it."""
    refuted = [
        column.backend
        for column in state.grid.columns
        if (cell := state.grid.newest(claim, column.backend)) and cell.entry.record.verdict is Verdict.REFUTED
    ]
    return list(claim.about) + [b for b in refuted if b not in claim.about]


def claim_section(state: BuildState, claim: Claim, docname: str) -> nodes.section:
    section = nodes.section(ids=[claim_anchor(claim.id)], classes=["tc-claim"], support_smartquotes=False)
    section += nodes.title("", claim.title)
    section.extend(claim_and_proposition(claim))
    section += verdict_lines(state, claim)
    section += paragraph(
        f"Topic: {TOPICS[claim.topic]} · id: ",
        nodes.literal("", claim.id),
        " · ",
        matrix_ref(claim.id, nodes.inline("", "its row in the matrix")),
    )
    sources = []
    for source in claim.sources:
        parts = quoted(source)
        if source.note:
            parts.append(f" {source.note}")
        sources.append(paragraph(*parts))
    count = f"{len(sources)} source{'s' if len(sources) > 1 else ''}"
    section += folded(
        [f"Sources ({count}): each quote with its publisher and date"], [bullets(sources)], classes=["tc-sources"]
    )
    if claim.caveats:
        section += nodes.rubric("", "Caveats")
        section += bullets([paragraph(c) for c in claim.caveats])
    section.extend(workaround_block(state.grid, claim, _differs_on(state, claim)))
    if claim.executable:
        block = evidence(state, claim, docname)
        section += (
            block
            if block is not None
            else paragraph("No result record exists for this claim yet, so there is no verdict.")
        )
        left_out = state.store.rejected.get(claim.id, [])
        if left_out:
            section += nodes.rubric("", "Records left out")
            section += paragraph(
                "These submitted records failed the checks every results file must pass, "
                "so they are not shown as verdicts:"
            )
            section += bullets([paragraph(f"{p.path.name} [{p.field}]: {p.message}") for p in left_out])
        if claim.id in state.script_sha:
            section += paragraph("Verification script: ", doc_link(claim.script, state.example_docname(claim)))
        else:
            section += paragraph(
                "Verification script: ",
                nodes.literal("", claim.script),
                " (missing or unreadable: it has no page, and the claim cannot be verified)",
            )
    if claim.see_also:
        links = [claim_ref(other, nodes.literal("", other)) for other in claim.see_also]
        section += paragraph("See also: ", *join_nodes(links))
    return section


class ClaimDirective(SphinxDirective):
    """``{claim} <id>``: render one claim with its verdicts and evidence."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env)
        claim_id = self.arguments[0]
        note_shown(self.env, [claim_id], state.digest([claim_id]))  # also when unknown: re-read once it exists
        claim = state.claims.claims.get(claim_id)
        if claim is None:
            warn(f"unknown claim id {claim_id!r}", "directive", location=self.get_location())
            return []
        _note_links(self.env, state, [claim])
        register_label(self.env, claim_anchor(claim.id), claim.title)
        return [claim_section(state, claim, self.env.docname)]


class TopicClaimsDirective(SphinxDirective):
    """``{topic-claims} <topic>``: every claim of a topic, in id order."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env)
        topic = self.arguments[0]
        if topic not in TOPICS:
            warn(
                f"unknown topic {topic!r}; expected one of {', '.join(TOPICS)}",
                "directive",
                location=self.get_location(),
            )
            return []
        claims = state.claims.by_topic()[topic]
        note_shown(self.env, [c.id for c in claims], state.digest([c.id for c in claims]), key=f"{TOPIC}{topic}")
        _note_links(self.env, state, claims)
        for claim in claims:
            register_label(self.env, claim_anchor(claim.id), claim.title)
        return [claim_section(state, claim, self.env.docname) for claim in claims]


def _note_links(env, state: BuildState, claims: list[Claim]) -> None:
    """Pages link to the claims in see_also and show the records of those measuring a workaround: re-read them
    when those change or go."""
    measuring = {claim.workaround.measured_by for claim in claims if claim.workaround}
    linked = sorted({other for claim in claims for other in claim.see_also} | measuring - {None})
    if linked:
        note_shown(env, linked, state.digest(linked), key="links:" + ",".join(linked))


class ClaimVerdictRole(SphinxRole):
    """``:claim-verdict:`<id>```: the verdict of a claim from this build;
    ``:claim-verdict:`<id> <backend>```: its newest verdict on that backend."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        state = get_state(self.env)
        claim_id, _, backend = self.text.strip().partition(" ")
        backend = backend.strip()
        note_shown(self.env, [claim_id], state.digest([claim_id]))  # also when unknown: re-read once it exists
        if claim_id not in state.claims.claims:
            warn(f"unknown claim id {claim_id!r}", "role", location=self.get_location())
            return [nodes.literal("", claim_id)], []
        ranked = state.store.ranked(claim_id)  # the build's own first: a file never outranks it
        chosen = (
            [e for e in ranked if e.backend == backend] if backend else [e for e in ranked if e.origin == THIS_BUILD]
        )
        entry = chosen[0] if chosen else None
        out = nodes.inline(classes=["tc-role"], support_smartquotes=False)
        out += verdict_badge(entry)
        if entry is None:
            missing = f"no record on {backend}" if backend else "no record from this build"
            if backend:
                warn(f"claim-verdict: {claim_id} has {missing}", "role", location=self.get_location())
            out += nodes.Text(f" ({missing})")
            return [out], []
        out += nodes.Text(" " + freshness_text(entry))
        out.extend(
            nodes.Text(n) if isinstance(n, str) else n
            for n in scope_words(state.claims.claims[claim_id], entry.backend)
        )
        return [
            claim_ref(claim_id, out, anchor=evidence_anchor(claim_id, entry.backend, entry.version)) if backend else out
        ], []


def setup_claim(app) -> None:
    app.add_directive("claim", ClaimDirective)
    app.add_directive("topic-claims", TopicClaimsDirective)
    app.add_role("claim-verdict", ClaimVerdictRole())
