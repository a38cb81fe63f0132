"""What the records say about one backend: the claims about it, grouped by what a reader should conclude.

A claim is *about* a backend when its scope says so (torchclaims.evidence.scope); each
claim about it falls in exactly one group, decided by its newest verdict on that
backend's own hardware, else by what ran on a stand-in (any other backend with a
record, such as the CPU reference, or the backend itself on a device that is not
its hardware: XLA on the CPU, grid.stand_in), else by whether it can be checked
at all. The accelerator pages (sphinxext/views/accelerators.py) draw this; nothing
here is typed by hand but the names of the groups. Free of Sphinx imports.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

from ...backends import all_backends
from ...claims import Claim
from ...evidence.records import Verdict
from ...history.releases import label_key
from .grid import Cell, Grid, device_words


class Group(Enum):
    """Where a claim's evidence about the backend comes from, as the tally and the cards count it (what a team
    must do about it is sphinxext/reading.py's)."""

    CONFIRMED = "Held on {here}"
    REFUTED = "Refuted on {here}"
    INCONCLUSIVE = "Ran on {here}, without a verdict either way"
    STAND_IN_REFUTED = "Refuted on {stand_in}, not yet run on {here}"
    STAND_IN_HELD = "Held on {stand_in}, not yet run on {here}"
    STAND_IN_OPEN = "Ran only on {stand_in}, without a verdict either way"
    ATTRIBUTED = "Only their claimants' word: attributed, no public method to check"
    UNCHECKED = "Not yet checked anywhere: no record on any backend"


ON_HARDWARE = (Group.CONFIRMED, Group.REFUTED, Group.INCONCLUSIVE)
ON_STAND_IN = (Group.STAND_IN_REFUTED, Group.STAND_IN_HELD, Group.STAND_IN_OPEN)
# The stand-in verdict that puts a claim in each group, the most telling first.
DECIDED_BY = {Group.STAND_IN_REFUTED: Verdict.REFUTED.value, Group.STAND_IN_HELD: Verdict.HOLDS.value}


@dataclass(frozen=True)
class Standing:
    """One claim about the backend: its group, its newest verdict there and on every stand-in."""

    claim: Claim
    group: Group
    here: Cell | None  # the newest record on the backend's own hardware
    # the newest record on a stand-in of the backend itself (XLA on the CPU), on a host with its vendor package
    # but not its device, then on each other backend in matrix order
    stand_ins: tuple[Cell, ...]


@dataclass(frozen=True)
class StandIn:
    """What one other backend showed for the claims about this one that never ran here."""

    backend: str
    devices: tuple[str, ...]
    versions: tuple[str, ...]
    verdicts: Counter  # verdict value -> claims


@dataclass
class Summary:
    backend: str
    standings: list[Standing]
    hardware_runs: list[Cell] = field(default_factory=list)  # the newest record here of each claim that ran here

    @property
    def hardware(self) -> str:
        """What 'here' is on the page: 'xla hardware', never XLA on the CPU."""
        return f"{self.backend} hardware"

    def stand_in_names(self, *groups: Group) -> list[str]:
        """Where the claims of these groups ran instead, in chip order: ['XLA on the CPU', 'cpu']."""
        cells = [cell for s in self.standings if s.group in groups for cell in s.stand_ins]
        return list(dict.fromkeys(cell.where for cell in cells))

    def group(self, group: Group) -> list[Standing]:
        return [s for s in self.standings if s.group is group]

    def count(self, *groups: Group) -> int:
        return sum(1 for s in self.standings if s.group in groups)

    @property
    def attributed_by(self) -> Counter:
        """Who makes the claims that are only their word: claimant -> claims."""
        return Counter(name for s in self.group(Group.ATTRIBUTED) for name in s.claim.claimed_by)

    def dates(self) -> tuple[str, str] | None:
        """The oldest and newest date of a record here."""
        days = sorted(cell.entry.record.date for cell in self.hardware_runs)
        return (days[0], days[-1]) if days else None

    def versions(self) -> list[str]:
        return sorted({cell.version for cell in self.hardware_runs}, key=label_key)

    def devices(self) -> list[str]:
        return sorted({device_words(cell.entry.record.environment) for cell in self.hardware_runs})

    def sources(self) -> Counter:
        """Where the records here came from: source mark -> claims."""
        return Counter(cell.entry.source.mark for cell in self.hardware_runs)

    def stand_ins(self) -> list[StandIn]:
        """Per other backend, in matrix order: what it showed for the claims that never ran here."""
        cells = [cell for s in self.standings if s.group in ON_STAND_IN for cell in s.stand_ins]
        out = []
        for backend in dict.fromkeys(cell.backend for cell in cells):
            mine = [cell for cell in cells if cell.backend == backend]
            out.append(
                StandIn(
                    backend,
                    tuple(sorted({device_words(c.entry.record.environment) for c in mine})),
                    tuple(sorted({c.version for c in mine}, key=label_key)),
                    Counter(c.kind for c in mine),
                )
            )
        return out


def _group(claim: Claim, here: Cell | None, stand_ins: list[Cell]) -> Group:
    if not claim.executable:
        return Group.ATTRIBUTED
    if here is not None:
        return {Verdict.HOLDS: Group.CONFIRMED, Verdict.REFUTED: Group.REFUTED}.get(
            here.entry.record.verdict, Group.INCONCLUSIVE
        )
    kinds = {cell.kind for cell in stand_ins}
    for group, kind in DECIDED_BY.items():
        if kind in kinds:
            return group
    return Group.STAND_IN_OPEN if kinds else Group.UNCHECKED


def with_vendor_package(grid: Grid, claim: Claim, backend: str) -> Cell | None:
    """The newest run of the claim on a host that had ``backend``'s package but not its device (torch-tpu
    without a TPU): a slice of another column (store.version_label) that a page would not show first."""
    descriptor = all_backends().get(backend)
    if descriptor is None or not descriptor.device_noun:
        return None
    mark = f"+ {descriptor.primary_package} "
    for column in grid.columns:
        for version in column.versions if column.backend != backend else ():
            cell = grid.cell(claim, column.backend, version) if mark in version else None
            if cell is not None and cell.entry is not None:
                return cell
    return None


def summarize(grid: Grid, backend: str) -> Summary:
    """Every claim about ``backend``, in id order, each in its group."""
    standings = []
    for claim in sorted(grid.claims.claims.values(), key=lambda c: c.id):
        if not claim.covers(backend):
            continue
        here = grid.newest(claim, backend, own_device=True) if claim.executable else None
        others = (
            [grid.newest(claim, backend, own_device=False), with_vendor_package(grid, claim, backend)]
            + [grid.newest(claim, column.backend) for column in grid.columns if column.backend != backend]
            if claim.executable
            else []
        )
        found: dict[tuple[str, str], Cell] = {}
        for cell in others:  # the vendor's slice may be its column's newest too: shown once
            if cell is not None:
                found.setdefault((cell.backend, cell.version), cell)
        stand_ins = list(found.values())
        standings.append(Standing(claim, _group(claim, here, stand_ins), here, tuple(stand_ins)))
    summary = Summary(backend, standings)
    summary.hardware_runs = [s.here for s in standings if s.here is not None]
    return summary
