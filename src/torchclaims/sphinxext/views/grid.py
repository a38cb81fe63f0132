"""The claims × backends grid: a column per backend, the versions inside it.

Every page that shows verdicts side by side reads this model (the matrix, the
verdict lines of a claim, its evidence blocks), so they agree on the order of
backends and versions. There is a column for every backend the project knows,
whether anything ran there or not (an empty column says "not run"), plus any
backend a results file brings. Within a column each version of the backend's
primary package on each build of torch is a slice, named by store.version_label
('torch 2.13.0+cpu (CPU-only build)' and 'torch 2.13.0+cu130 (CUDA build)' are
two, since they can disagree); a page shows one
slice at a time, this build's when the build ran on that backend, else the
newest, and a reader may pick another. A sweep over versions would add a
range view over the same slices. Free of Sphinx imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from ...backends import all_backends
from ...claims import Claim, ClaimSet
from ...evidence.freshness import stale_reason
from ...evidence.records import Environment, Verdict
from ...evidence.store import Entry, Store, version_label
from ...history.releases import label_key
from ...project import DEFAULTS

NOT_RUN = "notrun"
ATTRIBUTED = "attributed"
KINDS = tuple(v.value for v in Verdict) + (NOT_RUN, ATTRIBUTED)  # the order totals are given in


# torch_xla names its PJRT device kind in device_name ('XLA CPU (AMD EPYC)', 'XLA TPU'; backends._xla_name).
_XLA_DEVICE = re.compile(r"XLA (\w+)(.*)")
XLA_ON_THE_CPU = "XLA on the CPU"


def stand_in(env: Environment) -> str:
    """What stood in for the backend's own hardware in this record ('XLA on the CPU'), or '' when nothing did.

    torch_xla on PJRT's CPU client lowers every op through XLA as it would for a TPU, but no TPU
    kernel, memory or numerics take part: its verdicts are a stand-in's, like the CPU reference's.
    Either sign is enough, the device kind torch_xla reported or PJRT_DEVICE=CPU, so a record whose
    two disagree never counts as a run on the hardware. The one place that decides this.
    """
    if env.backend != "xla":
        return ""
    match = _XLA_DEVICE.fullmatch(env.device_name)
    on_cpu = (match is not None and match[1] == "CPU") or env.env_vars.get("PJRT_DEVICE", "").upper() == "CPU"
    return XLA_ON_THE_CPU if on_cpu else ""


def device_words(env: Environment) -> str:
    """The device a record ran on, as a column header names it.

    torch_xla names its PJRT device kind ('XLA CPU (AMD EPYC)'); the header says
    'XLA on the CPU (AMD EPYC)', so an XLA verdict never reads like a TPU's.
    """
    match = _XLA_DEVICE.fullmatch(env.device_name) if env.backend == "xla" else None
    if stand_in(env):
        detail = match[2] if match and match[1] == "CPU" else f" (device reported as {env.device_name!r})"
        return stand_in(env) + detail
    if match:
        return f"XLA on {match[1]}{match[2]}"
    return env.device_name


@dataclass(frozen=True)
class Column:
    """One backend: its name for readers and the versions that ran on it."""

    backend: str
    reader_name: str  # "AWS Trainium (TorchNeuron)"
    versions: tuple[str, ...]  # the one shown first, then the others, newest first
    devices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # version -> device words
    stand_in: str = ""  # what every record of the column ran on instead of the hardware ('XLA on the CPU'), if so

    @property
    def shown(self) -> str:
        """The version a page shows unless the reader picks another ('' when nothing ran)."""
        return self.versions[0] if self.versions else ""

    def header(self, version: str | None = None) -> str:
        """'xla · XLA on the CPU (AMD EPYC) · torch_xla 2.9.0', or 'neuron · AWS Trainium (TorchNeuron) · not run'."""
        version = self.shown if version is None else version
        if not version:
            return f"{self.backend} · {self.reader_name} · not run"
        return f"{self.backend} · {' / '.join(self.devices.get(version, ()))} · {version}"


@dataclass(frozen=True)
class Cell:
    """What one claim shows for one version of one backend."""

    claim: Claim
    backend: str
    version: str
    entry: Entry | None
    stale: str = ""

    @property
    def kind(self) -> str:
        if not self.claim.executable:
            return ATTRIBUTED
        return self.entry.record.verdict.value if self.entry else NOT_RUN

    @property
    def target(self) -> bool:
        """The claim is about this backend: a verdict here speaks to it."""
        return self.claim.covers(self.backend)

    @property
    def stand_in(self) -> str:
        """What stood in for the backend's hardware in this run ('XLA on the CPU'), or ''."""
        return stand_in(self.entry.record.environment) if self.entry else ""

    @property
    def where(self) -> str:
        """Where the run was, as a chip names it: 'XLA on the CPU', else the backend."""
        return self.stand_in or self.backend


@dataclass
class Grid:
    claims: ClaimSet
    store: Store
    script_sha: dict[str, str] = field(default_factory=dict)
    max_age_days: float = DEFAULTS.max_age_days

    @cached_property
    def columns(self) -> list[Column]:
        known = all_backends()
        entries = [e for history in self.store.entries.values() for e in history]
        names = list(known) + sorted({e.backend for e in entries} - set(known))
        build = self.store.build_environment
        columns = []
        for name in names:
            mine = [e for e in entries if e.backend == name]
            versions = sorted({e.version for e in mine}, key=label_key, reverse=True)
            if build is not None and build.backend == name and version_label(build) in versions:
                versions.remove(version_label(build))
                versions.insert(0, version_label(build))
            devices = {
                v: tuple(sorted({device_words(e.record.environment) for e in mine if e.version == v})) for v in versions
            }
            reader = known[name].reader_name if name in known else name
            stand_ins = {stand_in(e.record.environment) for e in mine}
            only = stand_ins.pop() if len(stand_ins) == 1 else ""
            columns.append(Column(name, reader, tuple(versions), devices, only))
        return columns

    def column(self, backend: str) -> Column:
        return next(c for c in self.columns if c.backend == backend)

    def cell(self, claim: Claim, backend: str, version: str, own_device: bool | None = None) -> Cell:
        """The record of the claim on this backend and version a page shows, if any: the
        build's own before any results file, then attested runs, the newest within each.
        ``own_device`` keeps only runs on the backend's hardware (True) or on a stand-in for it (False)."""
        entry = next(
            (
                e
                for e in self.store.ranked(claim.id)
                if e.backend == backend
                and e.version == version
                and (own_device is None or own_device == (not stand_in(e.record.environment)))
            ),
            None,
        )
        stale = stale_reason(entry.record, self.script_sha.get(claim.id), self.max_age_days) if entry else ""
        return Cell(claim, backend, version, entry, stale)

    def cells(self, claim: Claim, backend: str) -> list[Cell]:
        """One cell per version of the column, in the column's order (one 'not run' cell when nothing ran)."""
        versions = self.column(backend).versions or ("",)
        return [self.cell(claim, backend, version) for version in versions]

    def newest(self, claim: Claim, backend: str, own_device: bool | None = None) -> Cell | None:
        """The one verdict a summary shows for a backend: the version its column shows, else the
        newest with a record (``own_device`` as in cell())."""
        versions = self.column(backend).versions
        cells = (self.cell(claim, backend, version, own_device) for version in versions)
        return next((cell for cell in cells if cell.entry), None)

    def runs(self, claim: Claim) -> list[Cell]:
        """Every backend and version with a record of the claim, in matrix order."""
        return [cell for column in self.columns for cell in self.cells(claim, column.backend) if cell.entry]

    def totals(self, backend: str, version: str) -> dict[str, int]:
        counts = dict.fromkeys(KINDS, 0)
        for claim in self.claims.claims.values():
            counts[self.cell(claim, backend, version).kind] += 1
        return counts
