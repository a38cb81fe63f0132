"""Each operator the model used, looked up in every column's tables and defect claims.

A row speaks for the operators it is named for (:mod:`.names`: ``conv2d``
for ``aten::convolution``, ``interpolate.bicubic`` for
``aten::upsample_bicubic2d``, an in-place operator through its out-of-place
form, a family such as scaled-dot-product attention through any of its
kernels, a cast row for casts to its dtype only), matched in one of two ways,
and every piece of evidence says which:

* **exact**, where the table records per row the ATen operators its samples
  dispatched: the row speaks for an operator it is named for *and*
  dispatched, that very overload, whatever else the model does (the other
  operators a row dispatched only took part, and its mismatch is not blamed
  on them);
* **by name**, for older tables and for rows that dispatched nothing (a
  cell excluded by OpInfo or not reached), so that the report cites the row
  and why it judges nothing.

A backward kernel (``aten::convolution_backward``) is looked up in the
backward column of its dtype (``float32 backward``), among the rows whose
gradients dispatched it and speak for it (:func:`.names.own_backward_operators`),
exactly only: a table without backward columns has no answer for it. Every
other operator of the model's backward pass is an ordinary kernel, looked up
as in the forward.

The cell of the operator's dtype decides, read sample by sample against the
model's calls (:mod:`.samples`): native, CPU fallback, mismatch (known
wrong), raises or no kernel (raises); other outcomes (excluded by OpInfo,
random, not reached...) judge nothing. The worst matched cell wins. A
defect claim naming the operator or its family makes it known wrong where
the claim is refuted, when the model's calls meet the claim's trigger (the
argument kinds the defect needs, ``Claim.trigger``; any call meets a claim
that states none); where it holds, or where no call meets its trigger, its
record is cited and changes nothing. Rows and claims the user *accepts*
(``--accept``: say, a defect that needs arguments the model never passes)
still give the status, marked accepted, and leave the exit gate alone. A
known-wrong finding from a defect claim with a workaround carries it, with who
states it or what the claim measuring it shows in that column.
"""

from __future__ import annotations

from ..claims import Claim
from ..evidence.coverage_table import SweepTable, backward_column
from ..evidence.records import Verdict
from ..site_addresses import Links
from .knowledge import Column, Knowledge, Measured
from .names import (
    CAST,
    CAST_TARGETS,
    FAMILIES,
    aten_names,
    is_backward,
    out_of_place,
    own_backward_operators,
    own_operators,
    subjects,
)
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
from .samples import read_cell

FAMILY_NAMES = set(FAMILIES.values())  # a family's row is also found by name (RowIndex)
# The codes that judge, of operator cells (coverage.operators) and of architecture stages (coverage.arch_check) alike
CELL_STATUS = {"N": NATIVE, "F": FALLBACK, "M": WRONG, "R": RAISES, "K": RAISES}
SKIPPED_DETAIL = 120  # characters of a row's detail quoted when its cell judges nothing


class RowIndex:
    """Which rows of an operator table speak for an operator (see the module docstring)."""

    def __init__(self, table: SweepTable):
        self.table = table
        self.exact = bool(table.operators)
        self.dispatched: dict[str, set[int]] = {}  # aten::name.overload -> rows named for it that dispatched it
        self.named: dict[str, set[int]] = {}  # a name (names.subjects) -> rows named for it, matched by name
        self.backward: dict[str, set[int]] = {}  # a backward kernel -> rows whose gradients dispatched it, for it
        for index, row in enumerate(table.rows):
            dispatched = table.operators.get(index, ())
            for operator in own_operators(row, dispatched):
                self.dispatched.setdefault(operator, set()).add(index)
            for operator in own_backward_operators(row, dispatched, table.backward_operators.get(index, ())):
                self.backward.setdefault(operator, set()).add(index)
            # by name: a row that recorded nothing, and a family's row whichever path its samples took (on the
            # CPU, op_db's SDPA samples run its math path: no kernel of the family is among what they dispatched)
            names = aten_names(row)
            for name in names & FAMILY_NAMES if dispatched else names:
                self.named.setdefault(name, set()).add(index)

    def matching(self, operator: UsedOperator) -> list[int]:
        if is_backward(operator.name):
            return sorted(self.backward.get(operator.name, set()))
        rows = self.dispatched.get(operator.name, set()) | self.dispatched.get(out_of_place(operator.name), set())
        for name in subjects(operator.name):
            rows = rows | self.named.get(name, set())
        return sorted(i for i in rows if _casts_alike(self.table.rows[i], operator))

    def match(self, index: int, operator: UsedOperator) -> str:
        """How row ``index`` was matched for ``operator``: EXACT when the row dispatched it (as the table records)."""
        if is_backward(operator.name):
            return EXACT  # a backward kernel is only ever matched where the row's gradients dispatched it
        exact = (self.dispatched.get(name, set()) for name in (operator.name, out_of_place(operator.name)))
        return EXACT if any(index in rows for rows in exact) else BY_NAME


def _casts_alike(row: str, operator: UsedOperator) -> bool:
    """Only a cast row speaks for a cast, and only when the model's calls cast to the row's dtype."""
    if operator.packet != CAST:
        return True
    return CAST_TARGETS.get(row) in operator.out_dtypes


def _worst(statuses) -> str:
    return min(statuses, key=STATUSES.index)


def _uncovered(operator: UsedOperator, table: SweepTable) -> str:
    """Why no row speaks for the operator."""
    if is_backward(operator.name) and not table.backward_operators:
        return "a backward kernel, and this table records no backward pass: its sweep compared forward calls only"
    if is_backward(operator.name):
        return "a backward kernel that no row's gradients dispatched as its own"
    if operator.packet == CAST:
        return f"no cast row for a cast to {', '.join(sorted(operator.out_dtypes)) or 'its dtype'}"
    return "no row of the operator table is named for it" + (" and dispatched it" if table.operators else "")


def _cells(
    operator: UsedOperator, index: RowIndex, measured: Measured, column: Column, links: Links, accepted: set[str]
):
    """(evidence, why not covered)"""
    rows = index.matching(operator)
    if not rows:
        return [], _uncovered(operator, index.table)
    backward = is_backward(operator.name)
    name = backward_column(operator.dtype) if backward else operator.dtype
    if name not in {c.name for c in index.table.columns}:
        return [], f"the table has no {name or 'dtype-less'} column"
    table_column = index.table.column(name)
    recorded = index.table.backward_operators if backward else index.table.operators
    found, skipped = [], []
    for i in rows:
        code, row = table_column.codes[i], index.table.rows[i]
        outcome = table_column.legend.get(code, "not swept in this dtype")
        detail = table_column.details.get(i, "")
        if code not in CELL_STATUS:
            skipped.append(f"row {row}: {outcome}" + (f" ({detail[:SKIPPED_DETAIL]})" if detail else ""))
            continue
        reading = read_cell(
            table_column.samples.get(i, ""),
            detail,
            index.table.sample_legend,
            operator,
            table_column.arguments.get(i, ""),
        )
        status = CELL_STATUS[code] if reading is None else reading.status
        said = f"{measured.claim.id} row {row} [{name}]: {outcome}" + (" (accepted)" if row in accepted else "")
        if reading is not None and reading.note:
            said += f" ({reading.note})"
        if not status:
            skipped.append(said)
            continue
        if status != CELL_STATUS[code]:
            said += f"; for your calls: {status}"
        how = index.match(i, operator)
        if how == BY_NAME and index.table.operators.get(i):
            said += "; matched by its family's name: the row's samples dispatched none of the family's kernels"
        elif operator.name not in recorded.get(i, (operator.name,)):
            said += f"; measured as {out_of_place(operator.name)}"
        found.append(
            Evidence(
                status,
                said,
                links.row("operators", row),
                column.label,
                measured.record.date,
                how,
                detail,
                row in accepted,
                row,
            )
        )
    return found, "; ".join(skipped)


def _workaround(claim: Claim, column: Column, links: Links) -> str:
    """The defect claim's workaround in one line, with who states it, or what the claim measuring it shows in
    this column (no record there is said, never read as working)."""
    workaround = claim.workaround
    if workaround is None:
        return ""
    if workaround.measured_by is None:
        source = workaround.source or next(s for s in claim.sources if s.url == workaround.cites)
        return f"{workaround.what} (stated by {source.publisher}, {source.url or source.date})"
    other = column.measuring.get(workaround.measured_by)
    if other is None:
        return f"{workaround.what} (claim {workaround.measured_by} measures it: no record on {column.label})"
    return (
        f"{workaround.what} (claim {other.claim.id} measures it: {other.record.verdict.value} on {column.label}, "
        f"{links.evidence(other.claim, column.backend, column.version)})"
    )


def _defects(operator: UsedOperator, column: Column, links: Links, accepted: set[str]) -> list[Evidence]:
    found = []
    for measured in column.defects:
        if not subjects(operator.name) & {name for n in measured.claim.aten_operators for name in subjects(n)}:
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
                _workaround(measured.claim, column, links) if status else "",
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
    reports = []
    for column in knowledge.columns:
        index = RowIndex(column.operators[1]) if column.operators else None
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
