"""The release sweep's plan: which releases, and for each which claims must run and why.

What a release needs is decided before anything is installed, from the sweep's
own results file of that release (its label, and the build of torch the sweep
installs) and the current scripts: only the claims whose record is missing or
was made by an older script run. A release with no file of the sweep runs every
claim; a second sweep with nothing changed plans nothing. Files that others made
for the same release (another label, another build) are neither taken as
current nor replaced.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from ..claims import load_claims
from ..errors import InvalidFileError, UsageError
from ..evidence.fingerprint import COMMON_ENV_PREFIXES
from ..evidence.freshness import outdated_results
from ..evidence.records import Environment
from ..evidence.results import ResultsFile, read_results
from ..project import Folders
from .releases import Releases, Series

LABEL_PREFIX = "sweep:"  # every label the sweep writes starts so
LISTED = 12  # claim ids a plan line names before it counts the rest


@dataclass(frozen=True)
class Release:
    series: Series
    version: str

    @property
    def name(self) -> str:
        return f"{self.series.name}-{self.version}"

    @property
    def label(self) -> str:
        """The label of the sweep's results file of this release: how the sweep knows its own files."""
        s = self.series
        held = "torch " + s.pins()["torch"] + " and " if "torch" in s.pins() else ""
        return (
            f"{LABEL_PREFIX} {s.label(self.version)} on {s.backend}, {held}other packages held at sweep/constraints.txt"
        )

    def takes_cpu_index(self, cpu_index: bool) -> bool:
        # torch_xla wheels are built against the package index's torch, so only cpu series take the CPU index
        return cpu_index and self.series.backend == "cpu"

    def is_own(self, results: ResultsFile, cpu_index: bool) -> bool:
        """Whether the sweep made this file for this release: its label, this
        release, and the build of torch it installs (the CPU index's '+cpu'
        build where it names one, the package index's build otherwise). A
        contributor's file for the same release is never the sweep's."""
        cpu_build = results.environment.torch.partition("+")[2] == "cpu"
        return (
            results.label == self.label
            and self.series.release_of(results.environment) == self.version
            and cpu_build == self.takes_cpu_index(cpu_index)
        )


@dataclass
class Planned:
    release: Release
    base: Path | None  # the sweep's own file of this release, which a run merges into
    claims: tuple[str, ...] | None  # the claims to run; None: every executable claim; (): none
    why: str
    prune: tuple[str, ...] = ()  # records of claims that no longer exist, dropped from the base
    others: tuple[str, ...] = ()  # files of this release that the sweep did not make: left as they are

    @property
    def current(self) -> bool:
        return self.claims == () and not self.prune


def release_files(
    results_dir: Path, release: Release, cpu_index: bool
) -> tuple[list[tuple[Path, ResultsFile]], list[Path]]:
    """The sweep's own files of this release (oldest name first), and the other files that stand for it."""
    own, others = [], []
    for path, results in _readable(results_dir):
        if release.is_own(results, cpu_index):
            own.append((path, results))
        elif release.series.release_of(results.environment) == release.version:
            others.append(path)
    return own, others


def listed(ids, shown: int = LISTED) -> str:
    ids = list(ids)
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def foreseen_differences(env: Environment, environ=os.environ) -> list[str]:
    """What a run on this machine records differently from ``env``, known before
    anything is installed (the interpreter, the machine, the kernel release, the
    variables a fingerprint records that are set here): verify merges re-run
    records only into a file of the same configuration."""
    here = {"python": platform.python_version(), "machine": platform.machine()}
    found = [f"{name} {getattr(env, name)} here {value}" for name, value in here.items() if getattr(env, name) != value]
    kernel = f"{platform.system()} {platform.release()}"
    if env.os.split("-", 1)[0] != kernel.split("-", 1)[0]:
        found.append(f"os {env.os} here {kernel}")
    found += [
        f"{key}={env.env_vars.get(key, '(unset)')} here {value}"
        for key, value in sorted(environ.items())
        if key.startswith(COMMON_ENV_PREFIXES) and env.env_vars.get(key) != value
    ]
    return found


def unrecorded_fields(path: Path) -> list[str]:
    """Fingerprint fields this version of the project records that the file's environment lacks
    (it was made before they existed): a new run differs from it there."""
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))["environment"].keys()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    return [f"{name} not recorded in it" for name in Environment.model_fields if name not in recorded]


def plan(
    root: Path,
    releases: Releases,
    results_dir: Path,
    selected: list[Release],
    cpu_index: bool = False,
    rerun: tuple[str, ...] = (),
) -> list[Planned]:
    """For each release: which claims must run (and why), merged into which file of the sweep.

    ``rerun`` names claims to run again although their records are current: after
    a change to the project's own code they import (a harness or the runner),
    which the script digests do not see.
    """
    loaded = load_claims(Folders(root).claims)
    if loaded.problems:  # a broken record's claim would lose its records in every file the sweep writes
        raise UsageError(
            "fix the claim records first; the sweep would drop their records:\n"
            + "\n".join(str(p) for p in loaded.problems)
        )
    scripts = {c.id: c.script for c in loaded.executable() if (root / c.script).is_file()}
    unknown = sorted(set(rerun) - set(scripts))
    if unknown:
        raise UsageError(f"--rerun names no executable claim: {', '.join(unknown)}")
    outdated = outdated_results(root, results_dir)
    planned = []
    for release in selected:
        own, others = release_files(results_dir, release, cpu_index)
        foreign = tuple(p.name for p in others)
        if not own:
            planned.append(
                Planned(
                    release,
                    None,
                    None,
                    f"no results file of the sweep for this release: all {len(scripts)} claims run",
                    others=foreign,
                )
            )
            continue
        base, results = own[-1]
        held = {r.claim_id: r for r in results.records}
        changed = {c for c in outdated.get(base.name, []) if c in scripts}
        changed |= {
            c for c, r in held.items() if c in scripts and r.script.path != scripts[c]
        }  # the claim names another script now
        again = set(rerun) & set(held) - changed
        new = set(scripts) - set(held)
        prune = tuple(sorted(set(held) - set(scripts)))
        reasons = [
            f"{len(changed)} script(s) changed ({listed(sorted(changed), 4)})"
            if changed
            else "",  # the run line names them all
            f"{len(again)} asked to run again ({listed(sorted(again), 4)})" if again else "",
            f"{len(new)} new claim(s) ({listed(sorted(new), 4)})" if new else "",
            f"{len(prune)} record(s) of claims that no longer exist dropped ({listed(prune)})" if prune else "",
        ]
        why = "; ".join(r for r in reasons if r)
        changed |= again
        differ = (foreseen_differences(results.environment) + unrecorded_fields(base)) if changed or new else []
        if differ:  # the re-run records could not share the file: the new file must hold every claim
            why = (
                f"{why}: this machine records another configuration than {base.name} ({'; '.join(differ)}), "
                f"so all {len(scripts)} claims run"
            )
            planned.append(Planned(release, base, None, why, prune, foreign))
            continue
        if changed or new:
            why = (
                f"{why}: they run and merge into {base.name}, "
                f"which keeps {len(held) - len(changed) - len(prune)} record(s)"
            )
        planned.append(
            Planned(release, base, tuple(sorted(changed | new)), why or f"current: {base.name}", prune, foreign)
        )
    return planned


def sweep_made(releases: Releases, results_dir: Path) -> set[str]:
    """Names of the results files the sweep made (any series, either torch index): the files it keeps
    current; a file someone submitted stays as it was made, and its outdated records are shown stale."""
    every = [Release(s, v) for s in releases.series.values() for v in s.versions]
    return {
        path.name
        for path, results in _readable(results_dir)
        if any(r.is_own(results, cpu_index) for r in every for cpu_index in (False, True))
    }


def _readable(results_dir: Path):
    for path in sorted(results_dir.glob("*.json")) if results_dir.is_dir() else []:
        try:
            yield path, read_results(path)
        except InvalidFileError:
            continue  # the site and the tests report it


def select(releases: Releases, series: list[str], versions: list[str]) -> list[Release]:
    """The releases asked for: the default series unless named, every listed version unless named."""
    names = series or [s.name for s in releases.series.values() if s.default]
    chosen = [Release(releases.series[name], v) for name in names for v in releases.series[name].versions]
    return [r for r in chosen if not versions or r.version in versions]
