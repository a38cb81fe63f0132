"""A claim across releases: which runs form its history, and what the history says.

The results store holds runs (each committed results file, and this build). A
run stands for a release of a series (releases.Series.release_of) when the
release is the only thing that differs from the held versions; runs of one
kind of build (CPU-only, CUDA... wheels: evidence.builds) form a strand, and
nothing compares runs of two strands. For each claim, series and strand this
module gives the strip (one step per release: the verdict of the run that
stands for it, or nothing) and a sentence inferred from it,
"holds since torch 2.11.0", "refuted from torch 2.14.1", "unverified before
torch 2.10.0 (…)", never more than the runs say: a release without a run is
named as such, and a stale run is marked. Free of Sphinx imports.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime

from ..evidence.builds import build_of, builds_named
from ..evidence.provenance import Source
from ..evidence.records import Environment, ResultRecord, Verdict
from ..evidence.store import EARLIER_BUILD, THIS_BUILD, Entry, Store
from ..text_safety import quoted
from .releases import Series, version_key

REASON_CHARS = 90


@dataclass(frozen=True)
class Run:
    """Every record of one run: a committed results file, or this build."""

    origin: str  # THIS_BUILD or the results file name
    environment: Environment
    records: dict[str, ResultRecord]
    label: str = ""
    source: Source | None = None  # how far the run can be relied on (provenance); None: from its origin alone

    def entry(self, claim_id: str) -> Entry:
        """The claim's record as the store holds it: with this run's origin and source."""
        return Entry(self.records[claim_id], self.origin, self.label, self.source)

    @property
    def started(self) -> datetime:
        return min(r.started_at for r in self.records.values())

    @property
    def committed(self) -> bool:
        return self.origin != THIS_BUILD

    def describe(self) -> str:
        """'cpu-torch2.14.1-….json (cpu, torch 2.14.1, 2026-11-29, sweep: …; submitted by hand, not reproduced)'."""
        label = f", labelled {quoted(self.label)}" if self.label else ""
        name = "this build" if self.origin == THIS_BUILD else self.origin
        mark = f"; {self.source.mark}" if self.source and self.origin != THIS_BUILD else ""
        return (
            f"{name} ({self.environment.backend}, torch {self.environment.torch}, {self.started:%Y-%m-%d}{label}{mark})"
        )


def runs(store: Store) -> list[Run]:
    """Whole runs in the store; earlier builds' single superseded records are not runs."""
    grouped: dict[str, list] = {}
    for entries in store.entries.values():
        for entry in entries:
            if entry.origin != EARLIER_BUILD:
                grouped.setdefault(entry.origin, []).append(entry)
    out = []
    for origin, entries in sorted(grouped.items()):
        environment = (
            store.build_environment
            if origin == THIS_BUILD and store.build_environment
            else entries[0].record.environment
        )
        out.append(
            Run(
                origin, environment, {e.record.claim_id: e.record for e in entries}, entries[0].label, entries[0].source
            )
        )
    return out


@dataclass(frozen=True)
class Strand:
    """The runs of one series on one kind of build (evidence.builds): release -> run, oldest release first.
    A strip, a sentence and an upgrade compare runs of one strand only: two wheels of one release are
    not two releases."""

    kind: str
    runs: dict[str, Run]

    @property
    def builds(self) -> str:
        """'CUDA builds (+cu128, +cu130)'."""
        return builds_named([build_of(run.environment) for run in self.runs.values()])

    def builds_under(self, package: str) -> str:
        """The builds as a line about ``package`` names them: the build is torch's, so a series of another
        package reads 'torch_xla, with torch's CUDA build (+cu128)': torch_xla runs with that torch, and
        has no CUDA build of its own (its matrix slices name the torch of each run: store.version_label)."""
        return self.builds if package == "torch" else f"with torch's {self.builds}"


def series_runs(all_runs: list[Run], series: Series) -> list[Strand]:
    """The strands of a series, the one with most releases first: in each, per release, the run that
    stands for it, this build before committed files, the newest of equals. Upgrade pages pass
    committed runs only. A run whose torch version is no version stands for no release."""
    chosen: dict[str, dict[str, Run]] = {}
    for run in sorted(all_runs, key=lambda run: (run.committed, -run.started.timestamp())):
        version, build = series.release_of(run.environment), build_of(run.environment)
        if version is not None and build is not None:
            chosen.setdefault(build.kind, {}).setdefault(version, run)
    strands = [
        Strand(kind, dict(sorted(by_version.items(), key=lambda item: version_key(item[0]))))
        for kind, by_version in chosen.items()
    ]
    return sorted(strands, key=lambda strand: (-len(strand.runs), strand.kind))


def strand_of(strands: list[Strand], environment: Environment) -> Strand | None:
    """The strand of the same kind of build as ``environment``, if any."""
    build = build_of(environment)
    return next((strand for strand in strands if build and strand.kind == build.kind), None)


@dataclass(frozen=True)
class Step:
    """One release on a claim's strip."""

    version: str
    record: ResultRecord | None  # None: no run of this release, or the run has no record of the claim
    origin: str = ""
    stale: bool = False

    @property
    def kind(self) -> str:
        return self.record.verdict.value if self.record else "notrun"


def strip(series: Series, chosen: dict[str, Run], claim_id: str, stale=lambda record: False) -> list[Step]:
    """One step per release of the list (and per other release a run stands for), oldest first."""
    versions = sorted(set(series.versions) | set(chosen), key=version_key)
    steps = []
    for version in versions:
        run = chosen.get(version)
        record = run.records.get(claim_id) if run else None
        steps.append(Step(version, record, run.origin if run else "", bool(record) and stale(record)))
    return steps


def _span(package: str, versions: list[str]) -> str:
    if len(versions) == 1:
        return f"{package} {versions[0]}"
    return f"{package} {versions[0]} to {versions[-1]}"


def _reason(steps: list[Step], said: str = "") -> str:
    reasons = sorted({s.record.reason for s in steps if s.record and s.record.reason})
    if len(reasons) != 1 or reasons[0] == said:  # a reason the reader sees beside the sentence is not repeated in it
        return ""
    text = reasons[0]
    return f" ({text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + '…'})"


def segments(steps: list[Step]) -> list[list[Step]]:
    """Runs of consecutive releases with the same verdict, oldest first; releases without a record split nothing."""
    out: list[list[Step]] = []
    for step in (s for s in steps if s.record):
        if out and out[-1][-1].kind == step.kind:
            out[-1].append(step)
        else:
            out.append([step])
    return out


def range_sentence(series: Series, steps: list[Step], said: str = "") -> str:
    """What the strip says, newest first: 'holds since torch 2.11.0; unverified before (…)';
    ``said``: a reason shown beside it."""
    package = series.package
    groups = segments(steps)
    if not groups:
        return f"not run on any {package} release of the sweep"
    newest = groups[-1]
    verdict = newest[0].kind
    if len(groups) == 1:
        first = (
            f"{verdict} on every {package} release with a run "
            f"({_span(package, [s.version for s in newest])}){_reason(newest, said)}"
        )
    else:
        word = "since" if verdict == Verdict.HOLDS.value else "from"
        first = f"{verdict} {word} {package} {newest[0].version}{_reason(newest, said)}"
    parts = [first]
    if len(groups) == 2:
        parts.append(f"{groups[0][0].kind} before {package} {newest[0].version}{_reason(groups[0], said)}")
    else:
        parts.extend(
            f"{g[0].kind} on {_span(package, [s.version for s in g])}{_reason(g, said)}" for g in reversed(groups[:-1])
        )
    missing = [s.version for s in steps if s.record is None]
    if missing:
        parts.append(f"no run of {', '.join(missing)}")
    stale = [s.version for s in steps if s.stale]
    if stale:
        parts.append(f"the runs of {', '.join(stale)} used an older version of the script")
    return "; ".join(parts)


def consecutive(chosen: dict[str, Run]) -> list[tuple[str, str]]:
    """Neighbouring releases that both have a run, oldest pair first."""
    versions = list(chosen)
    return list(itertools.pairwise(versions))


def baseline_for(committed: dict[str, Run], version: str) -> Run | None:
    """The committed run this build is compared with: the same release, else the
    newest older one, else the oldest newer one."""
    if version in committed:
        return committed[version]
    older = [v for v in committed if version_key(v) < version_key(version)]
    if older:
        return committed[older[-1]]
    return committed[next(iter(committed))] if committed else None
