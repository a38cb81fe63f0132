"""The verification API gallery scripts use.

A script opens one verification for its claim, runs named checks against the
configured device, and finishes; finishing prints a summary (which the gallery
page shows) and writes the result record::

    from torchclaims.verify import verification

    v = verification("device-switch-parity", model="MLP 16-32-4", inputs="batch of 8")
    with v.check("forward matches the CPU reference") as check:
        check.close(out.cpu(), reference, rtol=1e-4, atol=1e-5, what="logits")
    v.finish()

Inside a check, ``expect``/``close``/``equal`` judge evidence (a failed one makes
the check ``refuted``), ``unsupported`` says the backend lacks what the claim
needs (``unverified``), and any other exception makes the check an ``error``.
A check must be able to fail: one that judges nothing is an ``error``, and a
failure already recorded stays ``refuted`` whatever happens after it.

This package is the scripts' whole interface to torchclaims, with the
coverage sweeps' entry points in :mod:`torchclaims.coverage`: a script imports
what ``__all__`` names here, and :mod:`torchclaims.verify.distributed` for a job
over a process group. ``torchclaims lint`` refuses a script or gallery helper
that imports any other part of the package.
"""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
from pathlib import Path

from ..backends import Backend, requested_backend, resolve_backend
from ..caches import Caches
from ..claims import load_claim
from ..errors import UsageError
from ..evidence.coverage_table import SweepTable
from ..evidence.records import (
    CheckResult,
    Measurement,
    ResultRecord,
    ScriptInfo,
    Verdict,
    combine,
    now,
    record_json,
    write_record,
)
from ..project import RECORDS_DIR
from ..run._child import RECORD_FD_ENV

__all__ = ["Unsupported", "Verification", "load_claim", "resolve_backend", "verification"]

DEADLINE_ENV = "TORCHCLAIMS_DEADLINE"  # wall-clock time (epoch seconds) at which the runner stops the script
RECORD_PATH_ENV = "TORCHCLAIMS_RECORD_PATH"
RECORDS_DIR_ENV = "TORCHCLAIMS_RECORDS_DIR"
SCRIPT_ENV = "TORCHCLAIMS_SCRIPT"  # project-relative script path, set by the runner


NO_JUDGEMENT = (
    "the check judged nothing (no check.expect, check.close or check.equal, and no check.unsupported), "
    "so it could not have failed"
)


class Unsupported(Exception):
    """Raised inside a check when the backend lacks what the claim needs."""


class Check:
    """One named check; use as a context manager from :meth:`Verification.check`."""

    def __init__(self, name: str, verification: Verification):
        self.name = name
        self._verification = verification
        self._measurements: list[Measurement] = []
        self._failures: list[str] = []
        self._judgements = 0
        self._notes: list[str] = []
        self._started = 0.0

    # -- evidence -----------------------------------------------------------------
    def measure(self, name: str, value, unit: str = "", tolerance: str = ""):
        """Record a measurement (tensors and numpy scalars become Python numbers)."""
        if hasattr(value, "item"):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)
        self._measurements.append(Measurement(name=name, value=value, unit=unit, tolerance=tolerance))
        return value

    def expect(self, condition: bool, failure: str) -> bool:
        """Judge one piece of evidence; ``failure`` says what was seen when it fails."""
        self._judgements += 1
        if not condition:
            self._failures.append(failure)
        return bool(condition)

    def close(self, actual, expected, *, rtol: float, atol: float, what: str) -> bool:
        """Compare two tensors element-wise (on the CPU) within rtol/atol."""
        import torch

        actual = actual.detach().cpu()
        expected = expected.detach().cpu()
        if actual.shape != expected.shape:
            return self.expect(False, f"{what}: shape {tuple(actual.shape)} differs from {tuple(expected.shape)}")
        difference = (actual.double() - expected.double()).abs()
        max_abs = difference.max().item() if difference.numel() else 0.0
        scale = expected.double().abs().max().item() if expected.numel() else 0.0
        self.measure(f"{what}: max abs error", max_abs, tolerance=f"<= {atol:g} + {rtol:g} x |reference|")
        self.measure(f"{what}: largest reference magnitude", scale)
        ok = torch.allclose(actual.double(), expected.double(), rtol=rtol, atol=atol)
        return self.expect(ok, f"{what}: max abs error {max_abs:.3g} exceeds atol {atol:g} + rtol {rtol:g}")

    def equal(self, actual, expected, what: str) -> bool:
        """Exact equality of two values (tensors compared bit for bit)."""
        if hasattr(actual, "shape") and hasattr(expected, "shape"):
            import torch

            same = actual.shape == expected.shape and torch.equal(actual.detach().cpu(), expected.detach().cpu())
            self.measure(f"{what}: identical", same, tolerance="== True")
            return self.expect(same, f"{what}: values differ")
        self.measure(
            what, actual if isinstance(actual, (int, float, str, bool)) else repr(actual), tolerance=f"== {expected!r}"
        )
        return self.expect(actual == expected, f"{what}: got {actual!r}, expected {expected!r}")

    def note(self, text: str) -> None:
        """Add context a reader needs to interpret the measurements."""
        self._notes.append(text)

    def unsupported(self, reason: str):
        """Stop this check: the backend lacks what the claim needs (``unverified``)."""
        raise Unsupported(reason)

    # -- context manager ------------------------------------------------------------
    def __enter__(self) -> Check:
        self._started = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None and not issubclass(exc_type, Exception):
            return False  # SystemExit, KeyboardInterrupt: let the runner see them
        if exc_type is not None and exc_type is not Unsupported:
            traceback.print_exception(exc_type, exc, tb, file=sys.stderr)
        stopped = "" if exc_type is None else str(exc) if exc_type is Unsupported else f"{exc_type.__name__}: {exc}"
        if self._failures:  # evidence already refuted the check; what came after cannot undo that
            outcome = Verdict.REFUTED
            after = "then check.unsupported: " if exc_type is Unsupported else "then raised "
            detail = "; ".join(self._failures + ([after + stopped] if stopped else []))
        elif exc_type is Unsupported:
            outcome, detail = Verdict.UNVERIFIED, stopped
        elif exc_type is not None:
            outcome, detail = Verdict.ERROR, stopped
        elif not self._judgements:
            outcome, detail = Verdict.ERROR, NO_JUDGEMENT
        else:
            outcome, detail = Verdict.HOLDS, ""
        detail = "; ".join(filter(None, [detail, *self._notes]))
        self._verification._add(
            CheckResult(
                name=self.name,
                outcome=outcome,
                detail=detail,
                measurements=self._measurements,
                duration_s=round(time.perf_counter() - self._started, 4),
            )
        )
        return True  # the check is recorded; later checks still run


class Verification:
    """The verification of one claim on the configured backend."""

    def __init__(self, claim_id: str, backend: Backend, conditions: dict[str, str]):
        self.claim_id = claim_id
        self.backend = backend
        self.conditions = conditions
        self._checks: list[CheckResult] = []
        self._tables: list[SweepTable] = []
        self._started_at = now()
        self._clock = time.perf_counter()
        self._finished: ResultRecord | None = None
        self.device = backend.device()

    @property
    def reference_device(self):
        """The CPU, where reference results are computed."""
        import torch

        return torch.device("cpu")

    @property
    def on_reference(self) -> bool:
        """True when the configured backend is the CPU reference itself."""
        return self.device.type == "cpu"

    def check(self, name: str) -> Check:
        if self._finished is not None:
            raise UsageError(f"{self.claim_id}: check {name!r} opened after finish()")
        return Check(name, self)

    def sync(self) -> None:
        """Wait for queued device work (and, on lazy backends, execute the graph)."""
        self.backend.synchronize()

    def time_left(self) -> float | None:
        """Seconds until the runner's time limit stops this script (None when there is none).

        A long sweep sizes its own time guard from it, so that it ends with a
        record instead of being killed.
        """
        deadline = os.environ.get(DEADLINE_ENV)
        return None if not deadline else max(0.0, float(deadline) - time.time())

    def add_table(self, table: SweepTable) -> None:
        """Keep a coverage sweep's whole table in the result record."""
        if self._finished is not None:
            raise UsageError(f"{self.claim_id}: table {table.name!r} added after finish()")
        self._tables.append(table)

    def _add(self, result: CheckResult) -> None:
        self._checks.append(result)
        print(f"[{result.outcome.value:>10}] {result.name}" + (f": {result.detail}" if result.detail else ""))

    def finish(self) -> None:
        """Derive the verdict, print the summary and write the result record.

        Returns nothing, so that a gallery page shows the summary rather than
        the record's repr; the record is on disk and in ``self.record``.
        """
        from ..evidence.fingerprint import collect

        if self._finished is not None:
            return
        for table in self._tables:
            self._add(reach_check(table))
        verdict = combine([c.outcome for c in self._checks])
        record = ResultRecord(
            claim_id=self.claim_id,
            verdict=verdict,
            reason=_reason(verdict, self._checks),
            checks=self._checks,
            conditions=self.conditions,
            started_at=self._started_at,
            duration_s=round(time.perf_counter() - self._clock, 3),
            script=_script_info(),
            environment=collect(self.backend),
            tables=self._tables,
        )
        _hand_over(record, self.claim_id, self.backend.name)
        self._finished = record
        print(summary(record))

    @property
    def record(self) -> ResultRecord | None:
        """The result record, once finish() has run."""
        return self._finished


def reach_check(table: SweepTable) -> CheckResult:
    """The share of a table's listed cells it reached, as the check every record with a table carries.

    A partial table decides nothing about the cells it did not reach: the
    check is unverified then (never refuted: not reaching a cell is no
    evidence about it), so the claim cannot hold on a partial table.
    """
    reached, listed = table.reach()
    share = math.floor(1000 * reached / listed) / 10 if listed else 100.0  # never rounded up to 100%
    detail = ""
    if reached < listed:
        detail = (
            f"{listed - reached} of {listed} listed cells were not reached within the time guard "
            f"({share:g}% reached): the table decides nothing about them"
        )
    return CheckResult(
        name=f"the {table.name} table judged every listed cell",
        outcome=Verdict.UNVERIFIED if detail else Verdict.HOLDS,
        detail=detail,
        measurements=[
            Measurement(name="cells reached", value=reached, unit=f"of {listed}", tolerance=f"== {listed}"),
            Measurement(name="share reached", value=share, unit="%"),
        ],
    )


def _reason(verdict: Verdict, checks: list[CheckResult]) -> str:
    if not checks:
        return "the script finished without running any check"
    if verdict in (Verdict.UNVERIFIED, Verdict.ERROR):
        return "; ".join(f"{c.name}: {c.detail}" for c in checks if c.outcome is verdict)
    return ""


def _script_info() -> ScriptInfo:
    path = os.environ.get(SCRIPT_ENV) or sys.argv[0]
    return ScriptInfo.of(Path(path), path)


def _hand_over(record: ResultRecord, claim_id: str, backend: str) -> None:
    """To the runner's supervisor over its pipe (a sandboxed script can write no
    record file: the runner writes it, after judging it again); run by hand,
    to a record file."""
    channel = os.environ.pop(RECORD_FD_ENV, None)  # one record per run: the pipe is closed after it
    if channel is None:
        write_record(_record_path(claim_id, backend), record)
        return
    with os.fdopen(int(channel), "w", encoding="utf-8") as handle:
        handle.write(record_json(record))


def _record_path(claim_id: str, backend: str) -> Path:
    explicit = os.environ.get(RECORD_PATH_ENV)
    if explicit:
        return Path(explicit)
    return Caches(Path(os.environ.get(RECORDS_DIR_ENV, RECORDS_DIR))).record(backend, claim_id)


def summary(record: ResultRecord) -> str:
    env = record.environment
    lines = [
        f"Claim {record.claim_id}: {record.verdict.value.upper()}" + (f" ({record.note})" if record.note else ""),
        f"  on {env.backend} ({env.device}, {env.device_name}), torch {env.torch}, {record.date}",
    ]
    if record.reason:
        lines.append(f"  reason: {record.reason}")
    for check in record.checks:
        lines.append(f"  - {check.outcome.value:<10} {check.name}")
        for m in check.measurements:
            unit = f" {m.unit}" if m.unit else ""
            judged = f"  ({m.tolerance})" if m.tolerance else ""
            lines.append(f"      {m.name} = {m.value}{unit}{judged}")
    return "\n".join(lines)


def verification(claim_id: str, **conditions: str) -> Verification:
    """Start verifying ``claim_id`` on the backend chosen by ``TORCHCLAIMS_BACKEND``.

    Keyword arguments state the input conditions a reader needs (model, inputs,
    dtype, method); they are stored in the result record.
    """
    backend, _ = resolve_backend(requested_backend())
    reason = backend.check_available()
    if reason is not None:
        raise UsageError(f"backend {backend.name} is not usable here: {reason}")
    return Verification(claim_id, backend, {k: str(v) for k, v in conditions.items()})
