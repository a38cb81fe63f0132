"""A check's report as data: what the model uses, and what each backend × release says of it.

Renderers (:mod:`.terminal`, :mod:`.html_report`) and the JSON output read
only this. Statuses, worst first: ``known wrong`` (a table cell that differs
from the CPU, or a refuted defect claim), ``raises`` (raises or has no kernel
on the device), ``CPU fallback``, ``native``; ``not covered`` when no
measurement judges the operator in its dtype there.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

WRONG, RAISES, FALLBACK, NATIVE, NOT_COVERED = "known wrong", "raises", "CPU fallback", "native", "not covered"
STATUSES = (WRONG, RAISES, FALLBACK, NATIVE, NOT_COVERED)  # worst first
EXACT, BY_NAME, CLAIM = "exact", "by name", "defect claim"  # how a piece of evidence was matched


@dataclass
class Evidence:
    status: str  # what this piece says (one of STATUSES)
    what: str  # "opinfo-coverage row nn.functional.pixel_shuffle [float32]: mismatch"
    url: str
    release: str  # "xla · torch_xla 2.9.0"
    date: str
    match: str  # EXACT, BY_NAME or CLAIM
    detail: str = ""
    accepted: bool = False  # the user accepted this row or claim (--accept): it leaves the exit gate alone


@dataclass
class OperatorFinding:
    operator: str
    dtype: str
    phases: list[str]
    status: str
    evidence: list[Evidence] = field(default_factory=list)
    note: str = ""  # why not covered
    accepted: bool = False  # every piece of evidence for the status is accepted


@dataclass
class ColumnReport:
    """One backend at one release."""

    label: str
    backend: str
    version: str
    device_name: str
    dates: list[str]
    targeted: bool
    matching: str  # how rows were matched: EXACT, BY_NAME, or "" without an operator table
    operators: list[OperatorFinding]
    architecture: Evidence | None = None

    def counts(self) -> Counter:
        return Counter(f.status for f in self.operators)

    @property
    def known_wrong(self) -> list[OperatorFinding]:
        """Known-wrong operators the user did not accept."""
        return [f for f in self.operators if f.status == WRONG and not f.accepted]

    @property
    def flagged(self) -> bool:
        return bool(self.known_wrong) or (self.architecture is not None and self.architecture.status == WRONG)


@dataclass
class BackendRun:
    """A run of the step on a backend (backend mode): the record's checks, and where it went."""

    backend: str
    verdict: str
    results_file: str
    checks: list[dict]  # name, outcome, detail

    @property
    def parity_failed(self) -> bool:
        """A parity check that did not hold, or none that ran (the step errored): never a pass."""
        parity = [c for c in self.checks if c["name"] in PARITY_CHECKS]
        return not parity or any(c["outcome"] != "holds" for c in parity)


PARITY_CHECKS = ("outputs match the CPU", "gradients match the CPU")


@dataclass
class Report:
    target: str
    used: list[dict]  # UsedOperator.as_dict()
    columns: list[ColumnReport]
    architecture: str = ""  # the model's transformers model_type, when it has one
    problems: list[str] = field(default_factory=list)  # records the load checks left out
    measured: list[BackendRun] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """The exit gate: known wrong on a targeted column, or measured parity that failed."""
        return any(c.targeted and c.flagged for c in self.columns) or any(m.parity_failed for m in self.measured)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["failed"] = self.failed
        return data
