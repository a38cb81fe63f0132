"""The ``claim-measure`` role: a figure in prose, read from the newest record.

``{claim-measure}`opinfo-coverage xla operators that match``` renders the
measurement "operators that match" of the newest record of claim
opinfo-coverage on backend xla, with where and when it was measured, and links
to the claim's evidence. Prose then cannot drift from the evidence: when the
record changes, the page changes with it. A measurement name that occurs in
several checks is qualified with its check: ``<check name> :: <measurement>``.
No record, no figure: a missing one renders as such and warns.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxRole

from ...evidence.records import Measurement
from ...evidence.scope import ran_on
from ...evidence.store import Entry
from ...site_addresses import evidence_anchor
from ..build.links import claim_ref
from ..build.state import get_state, warn
from ..build.tracking import note_shown

QUALIFIER = " :: "


def parse(text: str) -> tuple[str, str, str, str] | None:
    """'<claim> <backend> [<check> :: ]<measurement>' -> (claim, backend, check, measurement)."""
    parts = text.split(maxsplit=2)
    if len(parts) < 3:
        return None
    claim_id, backend, name = parts
    check, _, measurement = name.rpartition(QUALIFIER)
    return claim_id, backend, check.strip(), " ".join(measurement.split())


def find(entry: Entry, check: str, name: str) -> tuple[list[Measurement], list[str]]:
    """The measurements called ``name`` (in check ``check`` if given), and the checks holding them."""
    found, where = [], []
    for result in entry.record.checks:
        if check and result.name != check:
            continue
        for measurement in result.measurements:
            if measurement.name == name:
                found.append(measurement)
                where.append(result.name)
    return found, where


def figure_text(measurement: Measurement) -> str:
    value = measurement.value
    shown = f"{value:.3g}" if isinstance(value, float) else str(value)
    return shown + (f" {measurement.unit}" if measurement.unit else "")


class ClaimMeasureRole(SphinxRole):
    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        state = get_state(self.env)
        parsed = parse(self.text)
        if parsed is None:
            return self._missing(f"expected '<claim-id> <backend> <measurement name>', got {self.text!r}")
        claim_id, backend, check, name = parsed
        if claim_id not in state.claims.claims:
            return self._missing(f"unknown claim id {claim_id!r}")
        note_shown(self.env, [claim_id], state.digest([claim_id]))
        entries = [e for e in state.store.history(claim_id) if e.backend == backend]
        if not entries:
            return self._missing(f"no record of {claim_id} on {backend}", f"no record of {claim_id} on {backend}")
        entry = entries[0]
        found, where = find(entry, check, name)
        if len(found) != 1:
            problem = (
                "has no measurement"
                if not found
                else (
                    f"has {len(found)} measurements (checks: {'; '.join(where)}); "
                    f"qualify it as '<check>{QUALIFIER}<name>'"
                )
            )
            label = f"no single measurement named {name} in the newest record of {claim_id} on {backend}"
            return self._missing(
                f"the newest record of {claim_id} on {backend} ({entry.origin}) {problem} {name!r}", label
            )
        where_when = f" ({ran_on(entry.record.environment)}, {entry.version}, {entry.record.date})"
        out = nodes.inline(classes=["tc-measure"], support_smartquotes=False)
        out += nodes.Text(figure_text(found[0]))
        out += nodes.inline("", where_when, classes=["tc-date"])
        return [claim_ref(claim_id, out, anchor=evidence_anchor(claim_id, entry.backend, entry.version))], []

    def _missing(self, message: str, label: str = "") -> tuple[list[nodes.Node], list[nodes.system_message]]:
        warn(f"claim-measure: {message}", "measure", location=self.get_location())
        shown = f"[{label or 'no record'}]"
        return [nodes.inline("", shown, classes=["tc-badge", "tc-notrun"])], []


def setup_measure(app) -> None:
    app.add_role("claim-measure", ClaimMeasureRole())
