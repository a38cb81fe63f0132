"""The report as SARIF 2.1.0, the format code-scanning pages read.

One result per operator × dtype × backend whose status is a risk (known
wrong, raises, CPU fallback) on some release of the backend: its level, the
releases, the evidence links and a fix hint: the defect claim's workaround
when it has one, then the releases of that backend where the operator runs
natively, else the ``--accept`` that would waive it and what it waives. A
finding the user accepted is kept, suppressed. The results point at the
model's file (the step's operators have no line of their own); a
``package.module`` target is named as a logical location.

A run on a backend (``--backend``) adds what it measured: each operator the
backend's counters saw fall back to the CPU, or that raised with the fallback
forbidden (the fix: the backend's switch, which makes such an operator raise
where it would run on the CPU), and a parity that failed, with each
difference's size against its tolerance (the fix: the ``--atol`` that would
pass, or the precision mode the run used).
"""

from __future__ import annotations

from ..backends import all_backends
from ..evidence.records import Verdict
from ..site_addresses import CHECK_PAGE, Links
from .device_evidence import passing_hint
from .report import FALLBACK, NATIVE, RAISES, STATUSES, WRONG, BackendRun, ColumnReport, OperatorFinding, Report

VERSION = "2.1.0"
SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
RULES = {  # status: rule id, level, description
    WRONG: ("known-wrong", "error", "An operator the model uses is known to give wrong results on a backend"),
    RAISES: ("raises", "warning", "An operator the model uses raised or had no kernel on a backend"),
    FALLBACK: ("cpu-fallback", "note", "An operator the model uses ran through the CPU fallback on a backend"),
}
MEASURED_RULES = {  # what a run on a backend found: rule id, level, description
    "fallback": ("measured-cpu-fallback", "warning", "An operator ran on the CPU in the model's run on the device"),
    "parity": ("measured-parity", "error", "The model's outputs or gradients on the device differ from the CPU's"),
}


def _fix(status: str, findings: list[tuple[ColumnReport, OperatorFinding]], works: list[str]) -> str:
    """The defect claim's workaround first, when one is known; then where it works, or what --accept waives."""
    known = (e.workaround for _, f in findings for e in f.evidence if e.status == status and e.workaround)
    workaround = next(known, "")
    rest = _elsewhere(status, findings, works)
    return f"workaround: {workaround}; {rest}" if workaround else rest


def _elsewhere(status: str, findings: list[tuple[ColumnReport, OperatorFinding]], works: list[str]) -> str:
    if works:
        return f"runs natively on {', '.join(works)}"
    evidence = [e for _, f in findings for e in f.evidence if e.status == status and e.accept_id]
    if not evidence:
        return "no release of this backend is known to run it natively"
    first = evidence[0]
    return f"if the model's calls cannot meet it, --accept {first.accept_id} waives {first.what.split(':')[0]}"


def _location(target: str) -> dict:
    spec = target.rpartition(":")[0]
    if spec.endswith(".py"):
        return {"physicalLocation": {"artifactLocation": {"uri": spec}}}
    return {"logicalLocations": [{"fullyQualifiedName": target, "kind": "module"}]}


def _results(report: Report) -> list[dict]:
    grouped: dict[tuple[str, str, str], list[tuple[ColumnReport, OperatorFinding]]] = {}
    for column in report.columns:
        for finding in column.operators:
            grouped.setdefault((column.backend, finding.operator, finding.dtype), []).append((column, finding))
    results = []
    for (backend, operator, dtype), findings in grouped.items():
        risky = [(c, f) for c, f in findings if f.status in RULES]
        if not risky:
            continue
        status = min((f.status for _, f in risky), key=STATUSES.index)
        at = [(c, f) for c, f in risky if f.status == status]
        works = [c.label for c, f in findings if f.status == NATIVE]
        rule, level, _ = RULES[status]
        targeted = any(c.targeted for c, _ in at)
        evidence = [e for _, f in at for e in f.evidence if e.status == status]
        fix = _fix(status, at, works)
        if status == FALLBACK and not works:
            fix += f"; {_switch_hint(backend)}"
        releases = ", ".join(c.label for c, _ in at)
        text = f"{operator} [{dtype}] {status} on {releases}: {evidence[0].what if evidence else ''}. Fix: {fix}."
        result = {
            "ruleId": rule,
            "level": level if targeted else "note",
            "message": {"text": text},
            "locations": [_location(report.target)],
            "partialFingerprints": {"operatorBackend": f"{operator}|{dtype}|{backend}"},
            "properties": {
                "backend": backend,
                "operator": operator,
                "dtype": dtype,
                "releases": [c.label for c, _ in at],
                "evidence": sorted({e.url for e in evidence}),
                "fix": fix,
                "targeted": targeted,
            },
        }
        if all(f.accepted for _, f in at):
            waived = sorted({e.accept_id for e in evidence if e.accepted})
            result["suppressions"] = [{"kind": "external", "justification": "--accept " + ", --accept ".join(waived)}]
        results.append(result)
    return results


def _switch_hint(backend: str) -> str:
    switch = getattr(all_backends().get(backend), "fallback_switch", None)
    if switch is None or not switch.eager:
        return f"no switch forbids the CPU fallback on {backend}: the operator needs a kernel there, or another one"
    return f"run with {switch.variable}={switch.value} to find every operator that needs the fallback"


def _measured(run: BackendRun, location: dict) -> list[dict]:
    """One result per operator the run saw fall back or refuse, and one for parity that failed."""
    where = run.backend + (f" ({run.mode})" if run.mode else "")

    def result(kind: str, key: str, text: str, fix: str, **properties) -> dict:
        rule, level, _ = MEASURED_RULES[kind]
        return {
            "ruleId": rule,
            "level": level,
            "message": {"text": f"{text}. Fix: {fix}."},
            "locations": [location],
            "partialFingerprints": {"operatorBackend": f"{key}|measured|{where}"},
            "properties": {"backend": run.backend, "mode": run.mode, "fix": fix, **properties},
        }

    found = [(name, "ran on the CPU through the fallback") for name in run.fallbacks or []]
    found += [(name, "raised with the CPU fallback forbidden: it runs only through it") for name in run.refused]
    results = [
        result("fallback", name, f"{name} {what} in the run on {where}", _switch_hint(run.backend), operator=name)
        for name, what in found
    ]
    if run.outcome is Verdict.REFUTED:
        failing = [d for d in run.differences if not d.passes]
        hints = [passing_hint(run.passing_atol)] if run.passing_atol is not None else []
        hints.append(f"or a precision mode other than the one the run used ({run.precision or 'not recorded'})")
        sizes = "; ".join(d.describe() for d in failing) or "; ".join(c["detail"] for c in run.checks if c["detail"])
        results.append(
            result(
                "parity",
                "parity",
                f"parity failed on {where}: {sizes}",
                "; ".join(hints),
                differences=[{"what": d.what, "max_abs": d.max_abs, "allowed": d.allowed} for d in failing],
                passing_atol=run.passing_atol,
                precision=run.precision,
            )
        )
    return results


def sarif(report: Report) -> dict:
    """The SARIF log of ``report``; the rules' help lives on the site its links point to."""
    help_uri = Links(report.site).page(CHECK_PAGE)
    rules = [
        {"id": rule, "shortDescription": {"text": text}, "helpUri": help_uri, "defaultConfiguration": {"level": level}}
        for rule, level, text in [*RULES.values(), *MEASURED_RULES.values()]
    ]
    return {
        "$schema": SCHEMA,
        "version": VERSION,
        "runs": [
            {
                "tool": {"driver": {"name": "torchclaims check", "informationUri": help_uri, "rules": rules}},
                "results": _results(report)
                + [r for run in report.measured for r in _measured(run, _location(report.target))],
                "properties": {"result": report.result, "resultLine": report.result_line()},
            }
        ],
    }
