"""A check's report as data: what the model uses, and what each backend × release says of it.

Renderers (:mod:`.terminal`, :mod:`.html_report`) and the JSON output read
only this. Statuses, worst first: ``known wrong`` (a table cell that differs
from the CPU, or a refuted defect claim), ``raises`` (raises or has no kernel
on the device), ``CPU fallback``, ``native``; ``not covered`` when no
measurement judges the operator in its dtype there.

A report's result, worst first: ``failed`` (evidence that the model goes
wrong: known wrong on a targeted backend, or measured parity that failed),
``error`` (a backend run broke: no evidence either way), ``unverified`` (a
backend could not be checked here, or a backend named by ``--target-backend``
was never measured), ``passed``. Neither of the middle two is
ever read as a pass or as a failure. The run the check adds with the CPU
fallback forbidden (``BackendRun.added``) decides the result only by its
parity: that it stops where an operator needs the fallback is what it is run
to show, not a fault, and the run beside it is the evidence either way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from ..evidence.records import Verdict
from .device_evidence import Difference

if TYPE_CHECKING:
    from .standing import BackendStanding

WRONG, RAISES, FALLBACK, NATIVE, NOT_COVERED = "known wrong", "raises", "CPU fallback", "native", "not covered"
STATUSES = (WRONG, RAISES, FALLBACK, NATIVE, NOT_COVERED)  # worst first
EXACT, BY_NAME, CLAIM = "exact", "by name", "defect claim"  # how a piece of evidence was matched
FAILED, ERROR, UNVERIFIED, PASSED = "failed", "error", "unverified", "passed"  # a report's result, worst first


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
    accept_id: str = ""  # what --accept takes to waive it: the row's name or the claim's id
    workaround: str = ""  # a defect claim's workaround, with who states it or the record that measures it


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
    verdict: str  # the record's
    results_file: str
    checks: list[dict]  # name, outcome, detail
    reason: str = ""  # the record's: why it is unverified or an error
    log_tail: str = ""  # the end of the step's output, kept for errors
    mode: str = ""  # how the backend was set, where it matters ("CPU fallback forbidden: ...")
    added: bool = False  # the run the check added with the fallback forbidden, beside the one as the environment set
    precision: str = ""  # the float32 precision mode the step ran in (.device_evidence)
    fallbacks: list[str] | None = None  # operators the backend's counters saw run on the CPU; None: not recorded
    refused: list[str] = field(default_factory=list)  # operators that raised because the fallback was forbidden
    differences: list[Difference] = field(default_factory=list)  # each compared value against its tolerance
    passing_atol: float | None = None  # the --atol under which every difference passes, when one fails

    @property
    def set_aside(self) -> bool:
        """An added run that did not hold and does not count: the reports say so where they show it."""
        return self.gates is None and self.outcome is not Verdict.HOLDS

    @property
    def gates(self) -> Verdict | None:
        """The outcome the report's result counts: an added run counts only when its parity failed."""
        return self.outcome if not self.added or self.outcome is Verdict.REFUTED else None

    @property
    def outcome(self) -> Verdict:
        """The run for the exit gate: refuted when parity failed, else error when anything broke (a parity
        check, another check or the step itself), else unverified when parity could not be checked here."""
        parity = [Verdict(c["outcome"]) for c in self.checks if c["name"] in PARITY_CHECKS]
        if Verdict.REFUTED in parity:
            return Verdict.REFUTED
        if self.verdict == Verdict.ERROR or any(c["outcome"] == Verdict.ERROR for c in self.checks):
            return Verdict.ERROR
        if not parity:  # the step ended before its parity checks, or never started
            return Verdict.UNVERIFIED if self.verdict == Verdict.UNVERIFIED else Verdict.ERROR
        return Verdict.UNVERIFIED if Verdict.UNVERIFIED in parity else Verdict.HOLDS

    @property
    def cause(self) -> str:
        """Why the run is an error or unverified: the record's reason, else its checks that broke."""
        broken = [f"{c['name']}: {c['detail']}" for c in self.checks if c["outcome"] == self.outcome]
        return self.reason or "; ".join(broken)


PARITY_CHECKS = ("outputs match the CPU", "gradients match the CPU")


@dataclass
class Report:
    target: str
    used: list[dict]  # UsedOperator.as_dict()
    columns: list[ColumnReport]
    architecture: str = ""  # the model's transformers model_type, when it has one
    problems: list[str] = field(default_factory=list)  # records the load checks left out
    measured: list[BackendRun] = field(default_factory=list)
    backends: list[BackendStanding] = field(default_factory=list)  # every target backend (.standing)
    sandbox: str = ""  # how the model's code was confined in the trace ("": the caller's own process)
    site: str = ""  # what evidence links start with (site_addresses.site_address)
    links: str = ""  # where they point and why, in words

    @property
    def unmeasured_targets(self) -> list[str]:
        """Backends named by --target-backend that no table or defect claim measured."""
        return [b.backend for b in self.backends if b.asked and not b.measured]

    @property
    def failed(self) -> bool:
        """Evidence that the model goes wrong: known wrong on a targeted column, or measured parity that failed."""
        return any(c.targeted and c.flagged for c in self.columns) or any(
            m.gates is Verdict.REFUTED for m in self.measured
        )

    @property
    def result(self) -> str:
        """FAILED, ERROR, UNVERIFIED or PASSED: the worst of the report (see the module docstring)."""
        outcomes = {m.gates for m in self.measured}
        if self.failed:
            return FAILED
        if Verdict.ERROR in outcomes:
            return ERROR
        return UNVERIFIED if Verdict.UNVERIFIED in outcomes or self.unmeasured_targets else PASSED

    def result_line(self) -> str:
        """The result in one line, naming every finding, error and backend not checked."""
        if self.result == PASSED:
            held = ", ".join(
                m.backend + (f" ({m.mode})" if m.mode else "") for m in self.measured if m.outcome is Verdict.HOLDS
            )
            return "no operator is known wrong on a targeted backend" + (
                f", and measured parity held on {held}" if held else ""
            )
        parts = [f"known wrong on {c.label}" for c in self.columns if c.targeted and c.flagged]
        parts += [
            RUN_PARTS[m.gates].format(backend=m.backend, cause=m.cause[:300]) + (f" ({m.mode})" if m.mode else "")
            for m in self.measured
            if m.gates in RUN_PARTS
        ]
        parts += [f"nothing measured on {name}" for name in self.unmeasured_targets]
        return f"{HEADLINES[self.result]}: " + "; ".join(parts)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["failed"] = self.failed
        data["result"] = self.result
        for run, measured in zip(data["measured"], self.measured, strict=True):
            run["outcome"] = measured.outcome.value
        return data


SET_ASIDE = "not in the result: in a run added with the fallback forbidden, only parity failing counts"
HEADLINES = {FAILED: "FAILED", ERROR: "ERROR", UNVERIFIED: "NOT CHECKED"}
RUN_WORDS = {  # a backend run's outcome, as the reports name it
    Verdict.HOLDS: "parity held",
    Verdict.REFUTED: "parity failed",
    Verdict.ERROR: "error, no evidence either way",
    Verdict.UNVERIFIED: "could not check",
}
RUN_PARTS = {  # what a backend run that did not pass adds to the result line
    Verdict.REFUTED: "parity failed on {backend}",
    Verdict.ERROR: "the run on {backend} errored: {cause}",
    Verdict.UNVERIFIED: "could not check {backend}: {cause}",
}
