"""What the knowledge base measured, per backend × release: tables and defect verdicts.

The committed results files pass the same load checks as on the site
(:class:`~torchclaims.evidence.admission.Admission`), so a record the site would leave
out is left out here too. Each column (``xla · torch_xla 2.9.0``, as the site
names it) gets the newest record, of each claim, that carries an operator or
architecture table, and the verdict of every defect claim (one that names the
ATen operators it concerns, ``Claim.aten_operators``) measured there, with the
records of the claims that measure a defect claim's workaround.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..claims import Claim, load_claims
from ..errors import Problem, UsageError
from ..evidence.admission import Admission
from ..evidence.coverage_table import ARCHITECTURE_TABLE, OPERATOR_TABLE, SweepTable
from ..evidence.records import ResultRecord
from ..evidence.store import Entry, load_store
from ..project import Folders


@dataclass(frozen=True)
class Measured:
    """One record of a claim in one column."""

    claim: Claim
    entry: Entry

    @property
    def record(self) -> ResultRecord:
        return self.entry.record


@dataclass
class Column:
    """One backend at one release, with what was measured there."""

    label: str  # "xla · torch_xla 2.9.0"
    backend: str
    version: str  # "torch_xla 2.9.0"
    device_name: str
    operators: tuple[Measured, SweepTable] | None = None
    architectures: tuple[Measured, SweepTable] | None = None
    defects: list[Measured] = field(default_factory=list)
    measuring: dict[str, Measured] = field(default_factory=dict)  # claims measuring a defect's workaround, by id

    @property
    def dates(self) -> list[str]:
        found = [m.record.date for m, _ in filter(None, (self.operators, self.architectures))]
        return sorted(set(found + [m.record.date for m in self.defects]))


@dataclass
class Knowledge:
    columns: list[Column]
    claims: dict[str, Claim]
    problems: list[Problem]


def _table(record: ResultRecord, name: str) -> SweepTable | None:
    return next((t for t in record.tables if t.name == name), None)


def load_knowledge(root: Path) -> Knowledge:
    """Every column of the committed results under ``root`` (claims/ and results/)."""
    if not Folders(root).claims.is_dir() or not Folders(root).results.is_dir():
        raise UsageError(f"{root} holds no claims/ and results/: point --root at a torchclaims checkout")
    claims = load_claims(Folders(root).claims)
    store = load_store({}, None, Folders(root).results, admission=Admission.for_project(root, claims.claims))
    columns: dict[str, Column] = {}
    measuring = {c.workaround.measured_by for c in claims.claims.values() if c.aten_operators and c.workaround}
    for claim_id, claim in sorted(claims.claims.items()):
        for label, entry in sorted(store.latest_by_column(claim_id).items()):
            record = entry.record
            column = columns.setdefault(
                label, Column(label, entry.backend, entry.version, record.environment.device_name)
            )
            measured = Measured(claim, entry)
            for name, attribute in ((OPERATOR_TABLE, "operators"), (ARCHITECTURE_TABLE, "architectures")):
                table = _table(record, name)
                if table is not None and getattr(column, attribute) is None:
                    setattr(column, attribute, (measured, table))
            if claim.aten_operators:
                column.defects.append(measured)
            if claim_id in measuring:
                column.measuring[claim_id] = measured
    kept = [c for c in columns.values() if c.operators or c.architectures or c.defects]
    return Knowledge(sorted(kept, key=lambda c: c.label), claims.claims, claims.problems + store.problems)
