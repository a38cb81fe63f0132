"""The ``claims-changes`` directive: verdicts that moved, and which versions moved.

For every claim and backend it compares the newest record with the one before
it (from an earlier build or a committed results file) and lists those whose
verdict differs, with the packages whose versions differ between the two.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ..changes import describe
from .claim import claim_ref, verdict_badge
from .markup import paragraph, table
from .state import get_state
from .tracking import ALL_CLAIMS, note_shown


class ClaimsChangesDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        state = get_state(self.env.app)
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
                new, old = entries[0], entries[1]
                if new.record.verdict is old.record.verdict:
                    continue
                rows.append(
                    [
                        claim_ref(claim_id, nodes.literal("", claim_id)),
                        backend,
                        paragraph(verdict_badge(old), f" {old.record.date}, {old.origin}"),
                        paragraph(verdict_badge(new), f" {new.record.date}, {new.origin}"),
                        describe(old.record.environment, new.record.environment),
                    ]
                )
        intro = paragraph(
            f"{compared} claim/backend pairs have at least two records; "
            f"{len(rows)} of them changed verdict between their two newest records."
        )
        if not rows:
            return [intro]
        return [intro, table(["Claim", "Backend", "Before", "Now", "What differs"], rows, ["tc-changes"])]


def setup_changes(app) -> None:
    app.add_directive("claims-changes", ClaimsChangesDirective)
