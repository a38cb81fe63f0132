"""The report as SARIF 2.1.0, the format code-scanning pages read.

One result per operator × dtype × backend whose status is a risk (known
wrong, raises, CPU fallback) on some release of the backend: its level, the
releases, the evidence links and a fix hint: the releases of that backend
where the operator runs natively, else the ``--accept`` that would waive it
and what it waives. A finding the user accepted is kept, suppressed. The
results point at the model's file (the step's operators have no line of
their own); a ``package.module`` target is named as a logical location.
"""

from __future__ import annotations

from ..site_addresses import CHECK_PAGE, Links
from .report import FALLBACK, NATIVE, RAISES, STATUSES, WRONG, ColumnReport, OperatorFinding, Report

VERSION = "2.1.0"
SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
RULES = {  # status: rule id, level, description
    WRONG: ("known-wrong", "error", "An operator the model uses is known to give wrong results on a backend"),
    RAISES: ("raises", "warning", "An operator the model uses raised or had no kernel on a backend"),
    FALLBACK: ("cpu-fallback", "note", "An operator the model uses ran through the CPU fallback on a backend"),
}


def _fix(status: str, findings: list[tuple[ColumnReport, OperatorFinding]], works: list[str]) -> str:
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


def sarif(report: Report, site_url: str = "") -> dict:
    """The SARIF log of ``report``; ``site_url``: where the rules' help lives."""
    help_uri = Links(site_url).page(CHECK_PAGE)
    rules = [
        {"id": rule, "shortDescription": {"text": text}, "helpUri": help_uri, "defaultConfiguration": {"level": level}}
        for rule, level, text in RULES.values()
    ]
    return {
        "$schema": SCHEMA,
        "version": VERSION,
        "runs": [
            {
                "tool": {"driver": {"name": "torchclaims check", "informationUri": help_uri, "rules": rules}},
                "results": _results(report),
                "properties": {"result": report.result, "resultLine": report.result_line()},
            }
        ],
    }
