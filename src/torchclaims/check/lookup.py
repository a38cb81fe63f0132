"""Each operator the model used, looked up in every column's tables and defect claims.

Rows are matched to an operator in one of two ways, and every piece of
evidence says which:

* **exact**, where the table records per row the ATen operators its samples
  dispatched: a row speaks for the operator when it dispatched that very
  overload and nothing the model does not dispatch too (so that a row's
  mismatch is not blamed on an operator that merely took part);
* **by name**, for older tables, through :func:`.names.aten_names`.

The cell of the operator's dtype decides: native, CPU fallback, mismatch
(known wrong), raises or no kernel (raises); other outcomes (excluded by
OpInfo, random, not reached...) judge nothing. The worst matched cell wins. A
defect claim naming the operator makes it known wrong where the claim is
refuted, when the model's calls meet the claim's trigger (the argument kinds
the defect needs, ``Claim.trigger``; any call meets a claim that states none);
where it holds, or where no call meets its trigger, its record is cited and
changes nothing. Rows and
claims the user *accepts* (``--accept``: say, a defect that needs arguments
the model never passes) still give the status, marked accepted, and leave the
exit gate alone.
"""

from __future__ import annotations

from ..evidence.coverage_table import SweepTable
from ..evidence.records import Verdict
from .knowledge import Column, Knowledge, Measured
from .links import Links
from .names import aten_names
from .recorder import UsedOperator
from .report import (
    BY_NAME,
    CLAIM,
    EXACT,
    FALLBACK,
    NATIVE,
    NOT_COVERED,
    RAISES,
    STATUSES,
    WRONG,
    ColumnReport,
    Evidence,
    OperatorFinding,
)

# The codes that judge, of operator cells (coverage.operators) and of architecture stages (coverage.arch_check) alike
CELL_STATUS = {"N": NATIVE, "F": FALLBACK, "M": WRONG, "R": RAISES, "K": RAISES}


class RowIndex:
    """Which rows of an operator table speak for an operator."""

    def __init__(self, table: SweepTable, used: set[str]):
        self.table = table
        self.exact = bool(table.operators)
        self.rows: dict[str, list[int]] = {}
        for index, row in enumerate(table.rows):
            if self.exact:
                dispatched = set(table.operators.get(index, ()))
                keys = dispatched if dispatched <= used else set()
            else:
                keys = aten_names(row)
            for key in keys:
                self.rows.setdefault(key, []).append(index)

    def matching(self, operator: UsedOperator) -> list[int]:
        if self.exact:
            return self.rows.get(operator.name, [])
        packet = operator.packet
        return self.rows.get(packet, []) or self.rows.get(packet.rstrip("_"), [])  # add_ is tested as add


def _worst(statuses) -> str:
    return min(statuses, key=STATUSES.index)


def _cells(
    operator: UsedOperator, index: RowIndex, measured: Measured, column: Column, links: Links, accepted: set[str]
):
    """(evidence, why not covered)"""
    rows = index.matching(operator)
    if not rows:
        return (
            [],
            "no row of the operator table dispatches it without operators the model does not use"
            if index.exact
            else "no row of the operator table is named for it",
        )
    names = {c.name for c in index.table.columns}
    if operator.dtype not in names:
        return [], f"the table has no {operator.dtype or 'dtype-less'} column"
    table_column = index.table.column(operator.dtype)
    found, skipped = [], []
    for i in rows:
        code, row = table_column.codes[i], index.table.rows[i]
        outcome = table_column.legend.get(code, "not listed")
        if code not in CELL_STATUS:
            skipped.append(f"{row}: {outcome}")
            continue
        found.append(
            Evidence(
                CELL_STATUS[code],
                f"{measured.claim.id} row {row} [{operator.dtype}]: {outcome}"
                + (" (accepted)" if row in accepted else ""),
                links.row("operators", row),
                column.label,
                measured.record.date,
                EXACT if index.exact else BY_NAME,
                table_column.details.get(i, ""),
                row in accepted,
                row,
            )
        )
    return found, "; ".join(skipped)


def _defects(operator: UsedOperator, column: Column, links: Links, accepted: set[str]) -> list[Evidence]:
    found = []
    for measured in column.defects:
        if operator.packet not in measured.claim.aten_operators:
            continue
        verdict = measured.record.verdict
        if verdict not in (Verdict.REFUTED, Verdict.HOLDS):
            continue  # unverified or error: no evidence either way
        trigger = set(measured.claim.trigger)
        met = not trigger or bool(trigger & operator.kinds)
        status = WRONG if verdict is Verdict.REFUTED and met else ""
        taken = measured.claim.id in accepted
        what = f"claim {measured.claim.id} ({measured.claim.title}): {verdict.value}" + (" (accepted)" if taken else "")
        if trigger:
            needs = " or ".join(sorted(t.meaning for t in trigger))
            affected = "affected" if met else "not affected"
            what += f"; shown with {needs}; your calls: {operator.calls_in_words()}: {affected}"
        found.append(
            Evidence(
                status,
                what,
                links.evidence(measured.claim, column.backend, column.version),
                column.label,
                measured.record.date,
                CLAIM,
                measured.record.reason,
                taken,
                measured.claim.id,
            )
        )
    return found


def _architecture(model_type: str, column: Column, links: Links) -> Evidence | None:
    if not model_type or column.architectures is None:
        return None
    measured, table = column.architectures
    if model_type not in table.rows:
        return None
    i = table.rows.index(model_type)
    forward = table.column("forward")
    result = table.column("result")
    code = forward.codes[i]
    status = CELL_STATUS.get(code, NOT_COVERED)
    what = (
        f"{measured.claim.id} row {model_type}: forward {forward.legend.get(code, code)}, "
        f"{result.legend.get(result.codes[i], result.codes[i])}"
    )
    return Evidence(
        status,
        what,
        links.row("architectures", model_type),
        column.label,
        measured.record.date,
        EXACT,
        forward.details.get(i, ""),
    )


def look_up(
    used: list[UsedOperator],
    knowledge: Knowledge,
    *,
    targets: set[str] | None,
    model_type: str,
    links: Links,
    accepted: frozenset[str] = frozenset(),
) -> list[ColumnReport]:
    """One report per column; ``targets`` (backend names) narrows the exit gate, None: every backend;
    ``accepted``: row names and claim ids whose findings leave the exit gate alone."""
    names = {u.name for u in used}
    reports = []
    for column in knowledge.columns:
        index = RowIndex(column.operators[1], names) if column.operators else None
        findings = []
        for operator in used:
            evidence, why = (
                _cells(operator, index, column.operators[0], column, links, accepted)
                if index
                else ([], "no operator table for this release")
            )
            evidence += _defects(operator, column, links, accepted)
            judged = [e.status for e in evidence if e.status]
            status = _worst(judged) if judged else NOT_COVERED
            taken = bool(judged) and all(e.accepted for e in evidence if e.status == status)
            findings.append(
                OperatorFinding(
                    operator.name,
                    operator.dtype,
                    sorted(operator.phases),
                    status,
                    evidence,
                    "" if judged else why,
                    taken,
                )
            )
        reports.append(
            ColumnReport(
                column.label,
                column.backend,
                column.version,
                column.device_name,
                column.dates,
                targets is None or column.backend in targets,
                "" if index is None else EXACT if index.exact else BY_NAME,
                findings,
                _architecture(model_type, column, links),
            )
        )
    return reports
