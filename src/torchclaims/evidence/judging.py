"""Judging a record again from what it recorded, whoever wrote it.

A record's verdict must follow from its checks' outcomes (the one rule,
:func:`torchclaims.evidence.records.combine`), and a check that says it holds must
have every measurement within the tolerance it states: "max abs error = 1
(<= 0 + 0 x |reference|)" is not a check that holds, whatever the script's
code said. The tolerances the verification API writes are read back here;
a tolerance in words ("raises", "exit code 0") judges nothing here and is
left to the check. The runner judges the build's own records with this
before writing them, and admission (torchclaims.evidence.admission) every record it
loads, so a script that patches the verification API or rewrites its record
cannot make a measurement pass that fails. Nor can a record hold on a
coverage table with cells it did not reach.
"""

from __future__ import annotations

import operator
import re
from datetime import datetime, timedelta
from pathlib import Path

from ..errors import InvalidFileError, Problem
from .records import Measurement, ResultRecord, Verdict, combine, now, read_record

# Clocks of the machines that ran a record may be a little ahead of ours.
CLOCK_SKEW = timedelta(minutes=15)
FUTURE = "UTC lies in the future"  # ends every problem of a date refused for lying beyond now


def in_future(moment: datetime) -> str:
    """What is wrong with a date beyond now (and the clock skew allowed)."""
    return f"{moment:%Y-%m-%d %H:%M} {FUTURE}"


def dated_in_future(problems: list[Problem]) -> bool:
    """Whether any of ``problems`` refused a date for lying in the future: the same input passes later."""
    return any(problem.message.endswith(FUTURE) for problem in problems)


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_COMPARISON = re.compile(rf"^(<=|>=|<|>|==|!=)\s*({_NUMBER})$")
_CLOSE = re.compile(rf"^<=\s*({_NUMBER})\s*\+\s*({_NUMBER})\s*x\s*\|reference\|$")  # check.close
_LITERAL = re.compile(r"^==\s*(True|False)$")  # check.equal of tensors
_OPERATORS = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
    "==": operator.eq,
    "!=": operator.ne,
}
# torch's words in a process forked after its parent started the device's runtime
# (CUDA, XPU): a fact about the harness that forked it, never what a program sees.
FORKED_AFTER_START = re.compile(r"Cannot re-initialize \w+ in forked subprocess")
MAGNITUDE = ": largest reference magnitude"  # check.close records it beside ": max abs error"
MAX_ABS = ": max abs error"


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def close_bounds(tolerance: str) -> tuple[float, float] | None:
    """(atol, rtol) of a tolerance ``check.close`` wrote ("<= 1e-05 + 0.0001 x |reference|"), else None."""
    close = _CLOSE.match(tolerance.strip())
    return (float(close.group(1)), float(close.group(2))) if close else None


def measurement_fails(measurement: Measurement, others: dict[str, Measurement]) -> str | None:
    """Why ``measurement`` is outside the tolerance it states, or None when it
    is within it or its tolerance is not one that can be read back."""
    tolerance = measurement.tolerance.strip()
    shown = f"{measurement.name!r} = {measurement.value!r} is not {tolerance}"
    close = close_bounds(tolerance)
    if close:
        value = _number(measurement.value)
        atol, rtol = close
        scale = _number(getattr(others.get(measurement.name.removesuffix(MAX_ABS) + MAGNITUDE), "value", None))
        if value is None and isinstance(measurement.value, str):  # nan or inf, stored as text
            return shown
        if value is None:
            return None
        if scale is None:
            if rtol == 0:
                scale = 0.0
            else:
                return (
                    f"{measurement.name!r} is judged against the largest reference magnitude, "
                    "which the check did not record"
                )
        return None if value <= atol + rtol * scale else f"{shown} (the largest reference magnitude is {scale:g})"
    literal = _LITERAL.match(tolerance)
    if literal and isinstance(measurement.value, bool):
        return None if measurement.value is (literal.group(1) == "True") else shown
    comparison = _COMPARISON.match(tolerance)
    if comparison:
        value = _number(measurement.value)
        if value is None:
            return shown if isinstance(measurement.value, str) and measurement.value in ("nan", "inf", "-inf") else None
        if not _OPERATORS[comparison.group(1)](value, float(comparison.group(2))):
            return shown
    return None


def judgement_problems(record: ResultRecord) -> list[tuple[str, str]]:
    """(field, message) for each way a record's stated outcomes disagree with
    what it recorded: the verdict with its checks, a check that holds with a
    measurement outside its tolerance or on the harness's own fork message."""
    found = []
    expected = combine([check.outcome for check in record.checks])
    if record.verdict is not expected:
        checks = ", ".join(c.outcome.value for c in record.checks) or "none"
        found.append(("verdict", f"says {record.verdict.value}, but its checks ({checks}) give {expected.value}"))
    for index, table in enumerate(record.tables):
        reached, listed = table.reach()
        if record.verdict is Verdict.HOLDS and reached < listed:
            found.append(
                (f"tables.{index}", f"says holds, but table {table.name!r} reached {reached} of {listed} listed cells")
            )
    for index, check in enumerate(record.checks):
        if check.outcome is not Verdict.HOLDS:
            continue  # never more hopeful than its evidence: a refutation needs no measurement to back it
        others = {m.name: m for m in check.measurements}
        for number, measurement in enumerate(check.measurements):
            why = measurement_fails(measurement, others)
            if why:
                found.append((f"checks.{index}.measurements.{number}", f"check {check.name!r} says holds, but {why}"))
            if isinstance(measurement.value, str) and FORKED_AFTER_START.search(measurement.value):
                found.append(
                    (
                        f"checks.{index}.measurements.{number}",
                        f"check {check.name!r} says holds on {measurement.name!r} = {measurement.value[:120]!r}: "
                        "torch's message for a process forked after its parent started the device's runtime, "
                        "an artefact of the harness that ran it, not evidence about the claim",
                    )
                )
    return found


def read_own_record(path: Path) -> ResultRecord:
    """Read a record the runner wrote (this build's, an earlier build's, the
    history's) and judge it as a results file's records are judged: a record
    that fails is an InvalidFileError naming the file, the field and the check."""
    record = read_record(path)
    problems = [
        Problem(path, name, f"claim {record.claim_id}: {message}") for name, message in judgement_problems(record)
    ]
    if record.started_at > now() + CLOCK_SKEW:
        problems.append(
            Problem(
                path,
                "started_at",
                f"claim {record.claim_id}: {in_future(record.started_at)}",
            )
        )
    if problems:
        raise InvalidFileError(problems)
    return record
