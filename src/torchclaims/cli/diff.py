"""``torchclaims diff``: the claims whose verdict moved, and the coverage cells that changed,
between two results files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..evidence.admission import Admission
from ..evidence.results import ResultsFile, read_results
from ..history.changes import describe
from . import ExitCode
from .common import admission_for, project_root, report

if TYPE_CHECKING:
    from ..history.upgrades import Moved


def register(add) -> None:
    diff = add(
        "diff", "list claims whose verdict moved, and coverage-table cells that changed, between two results files"
    )
    diff.add_argument("old")
    diff.add_argument("new")
    diff.add_argument("--no-gate", action="store_true", help="exit 0 even when a claim that held no longer does")
    diff.add_argument(
        "--reproduce",
        action="store_true",
        help="exit 1 when any claim in both files has another verdict in NEW (files of one backend)",
    )
    diff.add_argument("--cells", action="store_true", help="list every changed coverage-table cell, with its detail")
    diff.set_defaults(run=run)


def _admitted(path: Path, admission: Admission) -> tuple[ResultsFile, dict]:
    results = read_results(path)
    admitted = admission.check(path, results)
    report(admitted.problems, "left out")
    return results, {r.claim_id: r for r in admitted.records}


def run(args) -> ExitCode:
    from ..history.upgrades import compare
    from ..history.version_history import Run

    admission = admission_for(project_root(args))
    (old, before), (new, after) = _admitted(Path(args.old), admission), _admitted(Path(args.new), admission)
    if args.reproduce and old.backend != new.backend:
        print(f"not compared: {args.old} is from backend {old.backend}, {args.new} from {new.backend}")
        return ExitCode.OK
    # The same comparison as the upgrade pages (torchclaims.history.upgrades), on the records the load checks admit.
    comparison = compare(
        Run(args.old, old.environment, before, old.label), Run(args.new, new.environment, after, new.label)
    )
    changes = comparison.verdicts
    print(f"old: {args.old} ({old.backend}, torch {old.environment.torch}, {old.created:%Y-%m-%d})")
    print(f"new: {args.new} ({new.backend}, torch {new.environment.torch}, {new.created:%Y-%m-%d})")
    if old.backend != new.backend:
        print(f"note: the files come from different backends ({old.backend} and {new.backend})")
    print(f"versions: {describe(old.environment, new.environment)}")
    for label, ids in (("only in old", comparison.only_old), ("only in new", comparison.only_new)):
        if ids:
            print(f"{label} (not compared): {', '.join(ids)}")
    print(f"{comparison.compared} claims compared, {len(changes)} changed verdict")
    for change in changes:
        mark = "REGRESSION " if change.regression else ""
        print(f"{mark}{change.claim_id}: {change.old.verdict.value} -> {change.new.verdict.value}")
        if change.new is not None and change.new.reason:
            print(f"    now: {change.new.reason[:200]}")
    for name, rows in comparison.moved.items():
        MOVED_PRINTERS.get(name, print_moved)(name, rows, args.cells)
    if args.reproduce and changes:
        print(f"not reproduced: {len(changes)} claim(s) gave another verdict in {args.new}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.FAILED if comparison.regressions and not args.no_gate and not args.reproduce else ExitCode.OK


def print_moved(name: str, rows: list[Moved], every: bool) -> None:
    print(f"{len(rows)} {name} moved beyond their tolerance" + (":" if rows else ""))
    for row in rows:
        note = f" ({row.note})" if row.note else ""
        print(f"  {row.claim_id}: {row.what}: {row.before} -> {row.after}{note}")


def print_coverage_changes(name: str, rows: list[Moved], every: bool, shown: int = 30) -> None:
    """Coverage cells that changed outcome, per claim, grouped by what became what."""
    by_claim: dict[str, list[Moved]] = {}
    for row in rows:
        by_claim.setdefault(row.claim_id, []).append(row)
    for claim_id, cells in sorted(by_claim.items()):
        print(f"{claim_id}: {len(cells)} table cells changed outcome")
        groups: dict[tuple[str, str], list[Moved]] = {}
        for cell in cells:
            groups.setdefault((cell.before, cell.after), []).append(cell)
        for (old, new), group in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"  {old} -> {new} ({len(group)})")
            for cell in group if every else group[:shown]:
                print(f"    {cell.what}" + (f": {cell.note}" if every and cell.note else ""))
            if not every and len(group) > shown:
                print(f"    ... and {len(group) - shown} more (--cells lists every one)")


MOVED_PRINTERS = {
    "coverage": print_coverage_changes
}  # by comparer name (upgrades.RECORD_COMPARERS); others: print_moved
