"""What one upgrade changed: two runs of every claim, compared claim by claim.

Used by the upgrade pages and by ``torchclaims diff``, so the two always say
the same thing. A comparison holds the packages whose versions differ, the
claims whose verdict moved, the measurements that moved beyond their
tolerance, and the rows of whatever :data:`RECORD_COMPARERS` finds (coverage
tables add their changed cells there). Free of Sphinx imports.

A measurement "moved beyond its tolerance" when:
- its value is text, a truth value or a whole number and it changed;
- it is judged as ``== v`` and it changed;
- it is judged against a bound and crossed it, or, for an upper bound on an
  error (``<= 1e-05 + …``), moved by more than the bound (any move for 0).
Other measurements (timings and magnitudes nobody judges) vary from run to run
and are not compared.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..evidence.records import Measurement, ResultRecord
from .changes import Change, only_in, table_changes, verdict_changes, version_differences
from .version_history import Run

BOUND = re.compile(r"^\s*(<=|<|>=|>)\s*([-+]?\d+(\.\d*)?([eE][-+]?\d+)?)")


@dataclass(frozen=True)
class Moved:
    """One thing about one claim that differs between the two runs."""

    claim_id: str
    what: str  # 'check :: measurement', or a coverage table's row and column
    before: str
    after: str
    note: str = ""  # the tolerance it is read with, or the new run's detail


def _text(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def moved_beyond_tolerance(old: Measurement, new: Measurement) -> bool:
    a, b = old.value, new.value
    numeric = (
        isinstance(a, (int, float))
        and isinstance(b, (int, float))
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    )
    if not numeric or new.tolerance.strip().startswith("=="):
        return a != b
    bound = BOUND.match(new.tolerance)
    if bound is None:
        return isinstance(a, int) and isinstance(b, int) and a != b
    operator, limit = bound[1], float(bound[2])
    holds = {
        "<=": lambda v: v <= limit,
        "<": lambda v: v < limit,
        ">=": lambda v: v >= limit,
        ">": lambda v: v > limit,
    }[operator]
    if holds(a) != holds(b):
        return True
    # An upper bound is a tolerance on an error: a move larger than it counts even on one side.
    # A lower bound (a speed-up of at least 10) says nothing about moves far above it.
    return operator in ("<=", "<") and (abs(b - a) > limit or (limit == 0 and a != b))


def measurement_moves(old: ResultRecord, new: ResultRecord) -> list[Moved]:
    """Measurements of same-named checks whose move exceeds their tolerance, in the new run's order."""
    before = {(c.name, m.name): m for c in old.checks for m in c.measurements}
    moves = []
    for check in new.checks:
        for m in check.measurements:
            previous = before.get((check.name, m.name))
            if previous is not None and moved_beyond_tolerance(previous, m):
                unit = f" {m.unit}" if m.unit else ""
                moves.append(
                    Moved(
                        new.claim_id,
                        f"{check.name} :: {m.name}",
                        _text(previous.value) + unit,
                        _text(m.value) + unit,
                        m.tolerance,
                    )
                )
    return moves


def coverage_moves(old: ResultRecord, new: ResultRecord) -> list[Moved]:
    """Coverage-table cells (operator × dtype, architecture × step) whose outcome changed.
    A record carries one table, so the claim beside the cell names it."""
    return [Moved(new.claim_id, f"{c.row} [{c.column}]", c.old, c.new, c.detail) for c in table_changes(old, new)]


# Finders of per-row changes inside two records of one claim, by the name a page
# gives their section.
RecordComparer = Callable[[ResultRecord, ResultRecord], list[Moved]]
RECORD_COMPARERS: dict[str, RecordComparer] = {"measurements": measurement_moves, "coverage": coverage_moves}


@dataclass(frozen=True)
class Comparison:
    old: Run
    new: Run
    verdicts: list[Change]
    moved: dict[str, list[Moved]] = field(default_factory=dict)  # comparer name -> rows
    packages: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (old, new)
    only_old: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)

    @property
    def compared(self) -> int:
        return len(set(self.old.records) & set(self.new.records))

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.verdicts if c.regression]


def compare(old: Run, new: Run) -> Comparison:
    shared = sorted(set(old.records) & set(new.records))
    moved = {
        name: [row for claim_id in shared for row in comparer(old.records[claim_id], new.records[claim_id])]
        for name, comparer in RECORD_COMPARERS.items()
    }
    return Comparison(
        old,
        new,
        verdict_changes(old.records, new.records),
        moved,
        version_differences(old.environment, new.environment),
        only_in(old.records, new.records),
        only_in(new.records, old.records),
    )
