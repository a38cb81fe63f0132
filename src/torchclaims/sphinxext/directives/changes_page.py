"""The ``claims-changes`` directive: verdicts that moved, and which versions moved.

For every claim and backend it compares the newest record with the one before
it (from an earlier build or a committed results file) of the same kind of
torch build, if there is one (evidence.builds) and lists those whose
verdict differs, with the packages whose versions differ between the two.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ...evidence.store import Entry
from ...history.changes import describe, predecessor
from ...site_addresses import evidence_anchor
from ..build.links import claim_ref
from ..build.state import get_state
from ..build.tracking import ALL_CLAIMS, note_shown
from ..views.evidence import origin_text, verdict_badge
from ..views.markup import paragraph, table


class ClaimsChangesDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        state = get_state(self.env)
        ids = list(state.claims.claims)
        note_shown(self.env, ids, state.digest(ids), key=ALL_CLAIMS)
        rows, compared = [], 0
        for claim_id in sorted(ids):
            by_backend: dict[str, list] = {}
            for entry in state.store.history(claim_id):
                by_backend.setdefault(entry.backend, []).append(entry)
            for backend, entries in sorted(by_backend.items()):
                if len(entries) < 2:
                    continue
                compared += 1
                new, old = entries[0], predecessor(entries)
                if new.record.verdict is old.record.verdict:
                    continue
                title = state.claims.claims[claim_id].title if claim_id in state.claims.claims else claim_id
                rows.append(
                    [
                        paragraph(claim_ref(claim_id, nodes.inline("", title)), " (", nodes.literal("", claim_id), ")"),
                        backend,
                        _run(claim_id, old),
                        _run(claim_id, new),
                        describe(old.record.environment, new.record.environment),
                    ]
                )
        intro = paragraph(
            f"{compared} claim/backend pairs have at least two records; "
            f"{len(rows)} of them changed verdict between their two newest records."
        )
        if not rows:
            return [intro]
        caption = "Verdicts that moved: each row names the two runs it compares"
        changes = table(
            ["Claim", "Backend", "Before (older run)", "Now (newer run)", "What differs"],
            rows,
            ["tc-changes"],
            caption=caption,
        )
        changes["support_smartquotes"] = False
        return [intro, changes]


def _run(claim_id: str, entry: Entry) -> nodes.paragraph:
    """The verdict of one run, naming it: backend and version, date, origin; it links to that run's evidence."""
    name = claim_ref(
        claim_id, nodes.inline("", entry.column), anchor=evidence_anchor(claim_id, entry.backend, entry.version)
    )
    return paragraph(verdict_badge(entry), " ", name, f", {entry.record.date}, {origin_text(entry)}")


def setup_changes(app) -> None:
    app.add_directive("claims-changes", ClaimsChangesDirective)
