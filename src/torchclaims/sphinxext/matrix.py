"""The ``claims-matrix`` directive: claims × backends, caniuse-style.

Rows are claims grouped by topic; columns are backend + version. Each cell shows
the verdict and its date, says when the backend is outside the claim's scope
(a verdict on the CPU reference is not a verdict on Trainium), and links to the
claim's evidence. The filters (topic, column, verdict) are plain JavaScript
shipped with the extension, so the page works offline. Counts never fold
``unverified``, ``error`` or ``not run`` into passing.
"""

from __future__ import annotations

import html

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ..freshness import stale_reason
from ..records import Verdict
from ..scope import ran_on
from ..topics import TOPICS
from .claim import NOT_RUN, SYMBOLS, claim_ref
from .markup import badge
from .state import get_state
from .tracking import ALL_CLAIMS, note_shown


def _cell(content: nodes.Node, classes: list[str]) -> nodes.entry:
    entry = nodes.entry(classes=classes)
    para = nodes.paragraph()
    para += content
    entry += para
    return entry


def _filters(columns: list[str]) -> nodes.raw:
    def options(values: list[tuple[str, str]]) -> str:
        return "".join(f'<option value="{html.escape(v)}">{html.escape(label)}</option>' for v, label in values)

    topics = [("", "all topics")] + [(key, title) for key, title in TOPICS.items()]
    cols = [("", "all backends")] + [(str(i), c) for i, c in enumerate(columns)]
    verdicts = [("", "any verdict")] + [(v.value, v.value) for v in Verdict] + [("notrun", NOT_RUN), ("attributed", "attributed")]
    markup = (
        '<form class="tc-filters" onsubmit="return false">'
        f'<label>Topic <select data-tc-filter="topic">{options(topics)}</select></label> '
        f'<label>Backend <select data-tc-filter="column">{options(cols)}</select></label> '
        f'<label>Verdict <select data-tc-filter="verdict">{options(verdicts)}</select></label>'
        "</form>"
    )
    return nodes.raw("", markup, format="html")


class ClaimsMatrixDirective(SphinxDirective):
    """``{claims-matrix}``: every claim against every backend column."""

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env.app)
        store, claims = state.store, state.claims
        note_shown(self.env, list(claims.claims), state.digest(list(claims.claims)), key=ALL_CLAIMS)
        columns = store.columns()
        headers = ["Claim"] + columns
        table = nodes.table(classes=["tc-matrix"])
        group = nodes.tgroup(cols=len(headers))
        table += group
        group.extend(nodes.colspec(colwidth=3 if i == 0 else 1) for i in range(len(headers)))
        head = nodes.thead()
        group += head
        head_row = nodes.row()
        for i, header in enumerate(headers):
            head_row += _cell(nodes.Text(header), [f"tc-col-{i - 1}"] if i else [])
        head += head_row
        body = nodes.tbody()
        group += body
        counts = {c: {} for c in columns}
        devices: dict[str, set[str]] = {c: set() for c in columns}
        for topic, topic_claims in claims.by_topic().items():
            if not topic_claims:
                continue
            topic_row = nodes.row(classes=["tc-topic-row", f"tc-topic-{topic}"])
            topic_row += _cell(nodes.strong("", TOPICS[topic]), ["tc-topic-title"])
            for i, _ in enumerate(columns):
                topic_row += _cell(nodes.Text(""), [f"tc-col-{i}"])
            body += topic_row
            for claim in topic_claims:
                row = nodes.row(classes=["tc-claim-row", f"tc-topic-{topic}"])
                row += _cell(claim_ref(claim.id, nodes.inline("", claim.title)), ["tc-claim-title"])
                latest = store.latest_by_column(claim.id)
                for i, column in enumerate(columns):
                    entry = latest.get(column)
                    if not claim.executable:
                        kind, content = "attributed", badge("❝ attributed", "attributed")
                    elif entry is None:
                        kind, content = "notrun", badge(f"∅ {NOT_RUN}", "notrun")
                    else:
                        kind = entry.record.verdict.value
                        stale = stale_reason(entry.record, state.script_sha.get(claim.id), state.max_age_days)
                        content = nodes.inline()
                        note = f", {entry.record.note}" if entry.record.note else ""
                        content += badge(f"{SYMBOLS[entry.record.verdict]} {kind}{note}", kind)
                        content += nodes.inline("", f" {entry.record.date}" + (" (stale)" if stale else ""), classes=["tc-date"])
                        if not claim.covers(entry.backend):
                            content += nodes.inline("", f"outside the scope of the claim ({', '.join(claim.about)})", classes=["tc-scope"])
                        content = claim_ref(claim.id, content)
                    counts[column][kind] = counts[column].get(kind, 0) + 1
                    if entry is not None:
                        devices[column].add(ran_on(entry.record.environment))
                    row += _cell(content, [f"tc-col-{i}", f"tc-verdict-{kind}"])
                body += row
        summary = nodes.bullet_list(classes=["tc-matrix-summary"])
        for column in columns:
            item = nodes.list_item()
            order = [v.value for v in Verdict] + ["notrun", "attributed"]
            text = ", ".join(f"{counts[column].get(k, 0)} {k if k != 'notrun' else NOT_RUN}" for k in order)
            item += nodes.paragraph("", f"{column} (ran as {', '.join(sorted(devices[column]))}): {text}")
            summary += item
        if not columns:
            return [nodes.paragraph("", "No result records exist yet: no claim has a verdict.")]
        return [_filters(columns), table, summary]


def setup_matrix(app) -> None:
    app.add_directive("claims-matrix", ClaimsMatrixDirective)
