"""What moved between two runs: verdicts, and the versions behind the move."""

from __future__ import annotations

from dataclasses import dataclass

from ..evidence.builds import same_kind
from ..evidence.coverage_table import NOT_LISTED, SweepTable
from ..evidence.records import Environment, ResultRecord, Verdict
from ..evidence.store import Entry

ABSENT = "(not listed)"


@dataclass(frozen=True)
class Change:
    claim_id: str
    old: ResultRecord
    new: ResultRecord

    @property
    def regression(self) -> bool:
        """A claim that held no longer does."""
        return self.old.verdict is Verdict.HOLDS and self.new.verdict is not Verdict.HOLDS


def verdict_changes(old: dict[str, ResultRecord], new: dict[str, ResultRecord]) -> list[Change]:
    """Every claim checked in both runs whose verdict differs, in id order.

    Claims present in only one run are not changes (a run of a few claims is not
    a regression of the others); :func:`only_in` lists them.
    """
    return [
        Change(claim_id, old[claim_id], new[claim_id])
        for claim_id in sorted(set(old) & set(new))
        if old[claim_id].verdict is not new[claim_id].verdict
    ]


def predecessor(entries: list[Entry]) -> Entry:
    """What the newest of ``entries`` (one claim and backend, newest first, two at least) is compared
    with: like with like, the newest earlier record of the same kind of torch build; else the one
    before it, whose torch version (among the versions that differ) names the other build."""
    newest = entries[0].record.environment
    return next((e for e in entries[1:] if same_kind(e.record.environment, newest)), entries[1])


def only_in(first: dict[str, ResultRecord], second: dict[str, ResultRecord]) -> list[str]:
    return sorted(set(first) - set(second))


def version_differences(old: Environment, new: Environment) -> dict[str, tuple[str, str]]:
    """Software that differs between two fingerprints: name -> (old, new)."""
    return {
        key.removeprefix("packages."): values
        for key, values in old.differences(new).items()
        if key == "torch"
        or key.startswith(("packages.", "accelerator_runtime.", "python", "device_name", "torchclaims"))
    }


def describe(old: Environment, new: Environment) -> str:
    moved = version_differences(old, new)
    if not moved:
        return "no package versions differ"
    return ", ".join(f"{name} {a} -> {b}" for name, (a, b) in moved.items())


@dataclass(frozen=True)
class CellChange:
    """One coverage-table cell whose outcome moved between two runs."""

    table: str
    row: str
    column: str
    old: str  # outcome name, or ABSENT
    new: str
    detail: str  # the new run's detail (the old one's if the cell left the list)


def _outcomes(table: SweepTable) -> dict[tuple[str, str], tuple[str, str]]:
    cells = {}
    for column in table.columns:
        for index, code in enumerate(column.codes):
            if code != NOT_LISTED:
                cells[(table.rows[index], column.name)] = (column.legend[code], column.details.get(index, ""))
    return cells


def table_changes(old: ResultRecord, new: ResultRecord) -> list[CellChange]:
    """Cells of same-named tables whose outcome differs, in row then column order of the new run."""
    changes = []
    old_tables = {t.name: t for t in old.tables}
    for table in new.tables:
        if table.name not in old_tables:
            continue
        before, after = _outcomes(old_tables[table.name]), _outcomes(table)
        for key in list(after) + [k for k in before if k not in after]:
            (was, old_detail), (now, new_detail) = before.get(key, (ABSENT, "")), after.get(key, (ABSENT, ""))
            if was != now:
                changes.append(CellChange(table.name, key[0], key[1], was, now, new_detail or old_detail))
    return changes
