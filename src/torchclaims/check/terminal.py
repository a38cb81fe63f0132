"""The report for a terminal: one line per backend × release, then the operators that matter.

Fits a screen: operators are grouped across releases, at most :data:`SHOWN`
of each status are listed with the first evidence link of each, and the rest
are counted (``--json`` and ``--html`` carry everything).
"""

from __future__ import annotations

from ..evidence.records import Verdict
from ..run.sandbox import WITHOUT
from .device_evidence import passing_hint
from .report import FALLBACK, NATIVE, NOT_COVERED, RAISES, RUN_WORDS, SET_ASIDE, WRONG, BackendRun, Report

SHOWN = 6
LOG_LINES = 8  # of an errored run's output (--json and --html carry all the record kept)
COUNTED = (  # column header, status
    ("native", NATIVE),
    ("fallback", FALLBACK),
    ("wrong", WRONG),
    ("raises", RAISES),
    ("uncovered", NOT_COVERED),
)


def _groups(report: Report, status: str) -> dict[tuple[str, str], list]:
    """(operator, dtype) -> [(column, finding)] for findings with ``status``, over the targeted columns."""
    groups: dict[tuple[str, str], list] = {}
    for column in report.columns:
        for finding in column.operators:
            if finding.status == status and column.targeted:
                groups.setdefault((finding.operator, finding.dtype), []).append((column, finding))
    return groups


def summary(report: Report) -> str:
    used = report.used
    backward = sum("backward" in u["phases"] for u in used)
    lines = [
        f"torchclaims check {report.target}: {len(used)} ATen operator x dtype pairs "
        f"({len(used) - backward} in the forward pass, {backward} in the backward pass)"
        + (f"; architecture {report.architecture}" if report.architecture else "")
    ]
    width = max([len(c.label) for c in report.columns] + [16])
    lines.append(
        f"{'backend x release':<{width}}  " + " ".join(f"{h:>9}" for h, _ in COUNTED) + "  rows matched  measured on"
    )
    for column in report.columns:
        counts = column.counts()
        flag = " FLAGGED" if column.flagged else ""
        target = "" if column.targeted else " (not targeted)"
        where = f"{column.device_name}, {', '.join(column.dates)}"
        lines.append(
            f"{column.label:<{width}}  "
            + " ".join(f"{counts[s]:>9}" for _, s in COUNTED)
            + f"  {column.matching or '-':<12}  {where}{flag}{target}"
        )
    architectures: dict[str, list[str]] = {}
    for column in report.columns:
        if column.architecture is not None:
            architectures.setdefault(f"{column.architecture.what} ({column.architecture.url})", []).append(column.label)
    for what, labels in architectures.items():
        on = "every release above" if len(labels) == len(report.columns) else ", ".join(labels)
        lines.append(f"architecture: {what} on {on}")
    lines += _standings(report)
    for status in (WRONG, RAISES, FALLBACK):
        groups = _groups(report, status)
        if not groups:
            continue
        lines.append(f"{status}: {len(groups)} operator x dtype pairs")
        for (operator, dtype), items in list(groups.items())[:SHOWN]:
            releases = ", ".join(column.label for column, _ in items)
            lines.append(f"  {operator} [{dtype}] on {releases}")
            judged = [e for e in items[0][1].evidence if e.status == status]
            for evidence in judged[:2]:
                lines.append(f"      {evidence.what} ({evidence.match}) {evidence.url}")
                if evidence.detail:
                    lines.append(f"        {evidence.detail[:110]}")
                if evidence.workaround:
                    lines.append(f"        workaround: {evidence.workaround[:400]}")
        if len(groups) > SHOWN:
            lines.append(f"  ... and {len(groups) - SHOWN} more (--json or --html lists every one)")
    nowhere = [
        u
        for u in used
        if all(
            f.status == NOT_COVERED
            for c in report.columns
            if c.targeted
            for f in c.operators
            if (f.operator, f.dtype) == (u["operator"], u["dtype"])
        )
    ]
    if nowhere:
        names = ", ".join(sorted({u["operator"] for u in nowhere}))
        lines.append(f"not covered by any targeted table or claim: {len(nowhere)} pairs: {names[:400]}")
    for measured in report.measured:
        lines += _run(measured)
    if report.problems:
        lines.append(f"{len(report.problems)} committed record(s) left out by the load checks (--json lists them)")
    if report.sandbox.startswith(WITHOUT):
        lines.append(f"the model's code {report.sandbox[:300]}")
    if report.links:
        lines.append(f"evidence links: {report.links}")
    lines.append(f"result: {report.result_line()}")
    return "\n".join(lines)


def _run(measured: BackendRun) -> list[str]:
    """A run on a backend: its outcome, checks and what its measurements show, and the log of one that errored."""
    where = f"record in {measured.results_file}" if measured.results_file else "no record"
    mode = f" ({measured.mode})" if measured.mode else ""
    lines = [f"run on {measured.backend}{mode}: {RUN_WORDS[measured.outcome]} ({where})"]
    if measured.reason:
        lines.append(f"  reason: {measured.reason[:300]}")
    for check in measured.checks:
        lines.append(
            f"  {check['outcome']:<10} {check['name']}" + (f": {check['detail'][:150]}" if check["detail"] else "")
        )
    if measured.precision:
        lines.append(f"  precision mode: {measured.precision[:300]}")
    if measured.fallbacks is not None:
        seen = ", ".join(measured.fallbacks) or "none, by the backend's own counters"
        lines.append(f"  ran on the CPU through the fallback: {seen[:400]}")
    if measured.refused:
        lines.append(f"  raised with the fallback forbidden, so it needs it: {', '.join(measured.refused)[:400]}")
    lines += [f"  {difference.describe()}" for difference in measured.differences]
    if measured.passing_atol is not None:
        lines.append(f"  {passing_hint(measured.passing_atol)}")
    if measured.set_aside:
        lines.append(f"  {SET_ASIDE}")
    if measured.outcome is Verdict.ERROR:
        lines += [f"  | {line[:200]}" for line in _log_end(measured.log_tail)]
    return lines


def _standings(report: Report) -> list[str]:
    """Every target backend: measured or not, how much is unknown, and the vendor's word (its first claim)."""
    lines = ["target backends: what is measured, what is unknown, and the vendor's word (no verdict):"]
    for standing in report.backends:
        word = ""
        if standing.vendor:
            first = standing.vendor[0]
            source = f", {first.source}" if first.source else ""
            word = f"; the vendor's word: {len(standing.vendor)} attributed claim(s), e.g. {first.claim} "
            word += f"({first.publisher}{source})"
        asked = " (targeted)" if standing.asked else ""
        lines.append(f"  {standing.backend:<7}{asked} {standing.line()}{word}")
    return lines


def _log_end(log: str) -> list[str]:
    """The last lines of a log that say something: a traceback's end names the exception."""
    return [line for line in log.splitlines() if line.strip()][-LOG_LINES:]
