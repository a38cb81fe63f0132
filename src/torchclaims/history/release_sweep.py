"""The release sweep: every executable claim on every release of sweep/releases.toml.

One environment at a time: a venv is created for a release, the release and the
project are installed into it with every other package held at
sweep/constraints.txt, ``torchclaims verify`` writes its results file into
results/, and the venv is removed before the next one, so the disk holds at most
one environment. pip keeps no cache (``PIP_NO_CACHE_DIR``) and unpacks into the
sweep's own temporary folder, which is emptied too.

A script change costs what it changes. What a release needs is decided before
anything is installed, from the sweep's own results file of that release (its
label, and the build of torch the sweep installs) and the current scripts: only
the claims whose record is missing or was made by an older script run, and
``verify`` merges their records into that file (output.write_run: the other
records and their figures are kept). A release with no file of the sweep runs
every claim; a second sweep with nothing changed installs nothing. Files that
others made for the same release (another label, another build) are neither
taken as current nor replaced.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..claims import load_claims
from ..errors import InvalidFileError, UsageError
from ..evidence.fingerprint import COMMON_ENV_PREFIXES
from ..evidence.freshness import outdated_results
from ..evidence.records import Environment
from ..evidence.results import ResultsFile, figures_dir, read_results
from ..project import DEFAULTS, Folders
from .releases import Releases, Series

CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # the CPU builds of torch (--torch-index cpu)
MIN_FREE_GB = 12.0  # an environment with a CUDA build of torch takes 5-8 GB while it is installed
LABEL_PREFIX = "sweep:"  # every label the sweep writes starts so
LISTED = 12  # claim ids a plan line names before it counts the rest
# The targets the summary prints beside the measured figures (2 cores).
TARGET_FULL_MIN = 90  # every release of the torch and torch_xla series
TARGET_PEAK_GB = 15  # the sweep's folder at any time
TARGET_IDLE_S = 120  # a sweep with nothing to run


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


@dataclass
class Measured:
    release: Release
    status: str  # "current", "would run", "ran", "pruned", "failed"
    detail: str = ""
    install_s: float = 0.0
    verify_s: float = 0.0
    env_bytes: int = 0
    results_file: str = ""
    claims: int = 0  # claims run


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


def dir_bytes(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                continue
    return total


class PeakDisk:
    """Samples the size of a folder in the background; keeps the largest."""

    def __init__(self, path: Path, every_s: float = 5.0):
        self.path, self.every_s, self.peak = path, every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, dir_bytes(self.path))
            self._stop.wait(self.every_s)

    def __enter__(self) -> PeakDisk:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, dir_bytes(self.path))


Run = Callable[[list[str], dict[str, str]], int]  # command, extra environment -> exit status


def run_command(command: list[str], env: dict[str, str]) -> int:
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, env={**os.environ, **env}).returncode


@dataclass
class Sweep:
    root: Path
    releases: Releases
    work_dir: Path  # the environment, pip's temporary files and the claims' record cache
    results_dir: Path
    torch_index: str = ""  # an extra index for torch itself on cpu series (the CPU builds)
    timeout: float = DEFAULTS.timeout_s
    workflow_run: bool = False  # inside a GitHub Actions job: each file states the run (verify --workflow-run)
    run: Run = run_command
    python: str = sys.executable
    free_bytes: Callable[[Path], int] = field(default=lambda path: shutil.disk_usage(path).free)

    @property
    def cpu_index(self) -> bool:
        return bool(self.torch_index)

    def pip_env(self, release: Release) -> dict[str, str]:
        """pip reads only the sweep's own constraints (lifting a machine-wide cap on torch) and keeps no cache."""
        constraints = self.work_dir / "constraints.txt"
        constraints.write_text(self.releases.constraints_for(release.series), encoding="utf-8")
        return {
            "PIP_CONSTRAINT": str(constraints),
            "PIP_NO_CACHE_DIR": "1",
            "TMPDIR": str(self.work_dir / "tmp"),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }

    def index_args(self, release: Release) -> list[str]:
        return ["--extra-index-url", self.torch_index] if release.takes_cpu_index(self.cpu_index) else []

    def requirements(self, release: Release) -> list[str]:
        # Without an index of its own, each release is the package index's build, as released.
        return release.series.requirements(release.version, exact=not self.index_args(release))

    def verify_command(self, release: Release, claims: tuple[str, ...] | None) -> list[str]:
        return [
            str(self.work_dir / "env" / "bin" / "torchclaims"),
            "verify",
            *(claims or ()),
            "--root",
            str(self.root),
            "--backend",
            release.series.backend,
            "--output",
            str(self.results_dir),
            "--records-dir",
            str(self.work_dir / "records" / release.name),
            "--label",
            release.label,
            "--timeout",
            f"{release.series.timeout or self.timeout:g}",
        ] + (["--workflow-run"] if self.workflow_run else [])

    def install_steps(self, release: Release, env_dir: Path) -> list[list[str]]:
        """The commands that make a release's environment: a venv, the release, the project and its claims' packages."""
        pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        requirements = self.requirements(release)
        return [
            [self.python, "-m", "venv", str(env_dir)],
            pip + self.index_args(release) + requirements,
            pip + ["-e", f"{self.root}[claims]"] + requirements,  # pinned again so pip keeps the release
        ]

    def describe(self, planned: Planned) -> list[str]:
        """What a run of this release installs, downloads and runs (the dry run prints it)."""
        release = planned.release
        if planned.current:
            return []
        if planned.claims == ():
            return [f"  rewrite {planned.base.name} without {len(planned.prune)} record(s); installs nothing"]
        packages = ", ".join(re.sub(r"=+", " ", r) for r in self.requirements(release))
        source = (
            f"{packages} from {self.torch_index} (torch's CPU build, a few hundred MB)"
            if self.index_args(release)
            else f"{packages} from the package index (torch's CUDA build on Linux, several GB)"
        )
        claims = (
            f"{len(planned.claims)} claim(s): {' '.join(planned.claims)}"
            if planned.claims is not None
            else "every executable claim"
        )
        lines = [
            f"  install: {' '.join(self.requirements(release))} and this project [claims] into a new venv, "
            "other packages at sweep/constraints.txt",
            f"  download: {source} and the held packages; pip keeps no cache and the venv is removed afterwards",
            f"  run: {claims} on {release.series.backend}, {release.series.timeout or self.timeout:g} s each at most",
        ]
        if planned.others:
            lines.append(f"  left as they are (not made by the sweep): {', '.join(planned.others)}")
        return lines

    def run_release(self, planned: Planned | Release) -> Measured:
        """Install the release, run the planned claims, and leave one complete file of the sweep for it."""
        if isinstance(planned, Release):  # every claim
            planned = Planned(planned, None, None, "asked for")
        release = planned.release
        if planned.claims == ():
            return self.prune(planned)
        env_dir = self.work_dir / "env"
        shutil.rmtree(env_dir, ignore_errors=True)  # a leftover of an interrupted sweep
        shutil.rmtree(self.work_dir / "tmp", ignore_errors=True)
        (self.work_dir / "tmp").mkdir(parents=True)
        free = self.free_bytes(self.work_dir)
        if free < MIN_FREE_GB * 1e9:
            return Measured(
                release, "failed", f"only {free / 1e9:.1f} GB free; an environment needs about {MIN_FREE_GB:g} GB"
            )
        pip_env = self.pip_env(release)
        started = time.perf_counter()
        installed = verified = started
        size, status, ran, written = 0, 0, 0, None
        before = {p for p, _ in release_files(self.results_dir, release, self.cpu_index)[0]}
        present = set(self.results_dir.glob("*.json"))
        try:
            for step in self.install_steps(release, env_dir):
                if self.run(step, pip_env) != 0:
                    return Measured(release, "failed", f"{' '.join(step[:6])} failed", time.perf_counter() - started)
            installed = time.perf_counter()
            size = dir_bytes(env_dir)
            backend_env = {"TORCHCLAIMS_BACKEND": release.series.backend} | (
                {"PJRT_DEVICE": "CPU"} if release.series.backend == "xla" else {}
            )
            claims = planned.claims
            for _ in range(2):  # a second pass only when the first could not merge (below)
                status = self.run(
                    self.verify_command(release, claims), backend_env
                )  # 1: a claim errored; its record says why
                ran += len(claims) if claims is not None else len(self.executable())
                if status not in (0, 1):
                    break
                written, missing, why = self.newest_own(release, before)
                if written is None or not missing:
                    break
                # verify merges only into a file of the same environment; this one differed, so the
                # new file must hold every claim before it can stand for the release
                print(f"{release.name}: {why}; the other {len(missing)} claim(s) run too", flush=True)
                claims = tuple(missing)
            verified = time.perf_counter()
        finally:
            shutil.rmtree(env_dir, ignore_errors=True)
            shutil.rmtree(self.work_dir / "tmp", ignore_errors=True)
        timing = (installed - started, verified - installed, size)
        if status not in (0, 1) or written is None:
            strays = sorted(
                p.name for p in set(self.results_dir.glob("*.json")) - present
            )  # written, but not standing for this release
            stray = (
                f" ({', '.join(strays)} does not stand for {release.name}: another build or held version?)"
                if strays
                else ""
            )
            return Measured(
                release,
                "failed",
                f"verify exited {status} and wrote no results file of the sweep{stray}; the committed files are kept",
                *timing,
            )
        _, missing, why = self.newest_own(release, before)
        if missing:
            return Measured(
                release,
                "failed",
                f"{written.name} lacks {listed(missing)}; the older files of the sweep are kept",
                *timing,
                written.name,
            )
        replaced = [p for p, _ in release_files(self.results_dir, release, self.cpu_index)[0] if p != written]
        for path in replaced:  # the complete new file stands for this release from now on
            path.unlink()
            shutil.rmtree(figures_dir(path), ignore_errors=True)
        detail = f"replaced {', '.join(p.name for p in replaced)}" if replaced else ""
        if planned.base is not None and planned.base not in replaced and not planned.base.exists():
            detail = f"merged into the records of {planned.base.name}"
        return Measured(release, "ran", detail, *timing, written.name, ran)

    def executable(self) -> list[str]:
        return [c.id for c in load_claims(Folders(self.root).claims).executable() if (self.root / c.script).is_file()]

    def newest_own(self, release: Release, before: set[Path]) -> tuple[Path | None, list[str], str]:
        """The file verify wrote for the release (None if none), the claims it lacks, and why."""
        own = [(p, r) for p, r in release_files(self.results_dir, release, self.cpu_index)[0] if p not in before]
        if not own:
            return None, [], ""
        path, results = own[-1]
        missing = sorted(set(self.executable()) - {r.claim_id for r in results.records})
        why = (
            f"{path.name} could not take the records of the earlier file ({self._moved(before, results)})"
            if missing
            else ""
        )
        return path, missing, why

    def _moved(self, before: set[Path], results: ResultsFile) -> str:
        for path in sorted(before):
            if path.exists():
                moved = read_results(path).environment.differences(results.environment)
                return "environment differs in " + ", ".join(moved) if moved else "made another way"
        return "none left"

    def prune(self, planned: Planned) -> Measured:
        """Drop the records of claims that no longer exist from the sweep's file; nothing is installed."""
        from ..evidence.results import write_results

        results = read_results(planned.base)
        kept = [r for r in results.records if r.claim_id not in planned.prune]
        write_results(planned.base, results.model_copy(update={"records": kept}))
        for claim_id in planned.prune:
            shutil.rmtree(figures_dir(planned.base) / claim_id, ignore_errors=True)
        return Measured(
            planned.release,
            "pruned",
            f"dropped {listed(planned.prune)} from {planned.base.name}",
            results_file=planned.base.name,
        )

    def sweep(
        self,
        selected: list[Release],
        dry_run: bool = False,
        log: Callable[[str], None] = print,
        rerun: tuple[str, ...] = (),
    ) -> list[Measured]:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        measured = []
        for planned in plan(self.root, self.releases, self.results_dir, selected, self.cpu_index, rerun):
            log(f"{planned.release.name}: {planned.why}")
            if planned.current:
                measured.append(Measured(planned.release, "current", planned.why, results_file=planned.base.name))
            elif dry_run:
                for line in self.describe(planned):
                    log(line)
                count = len(planned.claims) if planned.claims is not None else len(self.executable())
                measured.append(Measured(planned.release, "would run", planned.why, claims=count))
            else:
                measured.append(self.run_release(planned))
                log(f"{planned.release.name}: {summary_line(measured[-1])}")
        return measured


def summary_line(m: Measured) -> str:
    if m.status in ("current", "pruned"):
        return m.detail
    figures = (
        f"install {m.install_s / 60:.1f} min, verify {m.verify_s / 60:.1f} min, environment {m.env_bytes / 1e9:.1f} GB"
    )
    what = f"{m.status} {m.claims} claim(s)" if m.claims else m.status
    return what + (f" ({figures})" if m.install_s else "") + (f"; {m.detail}" if m.detail else "")


def report(measured: list[Measured], wall_s: float, peak_bytes: int) -> list[str]:
    """The session's closing summary, with the targets beside the measured figures."""
    lines = [f"{m.release.name:<22} {summary_line(m)}" for m in measured]
    ran = [m for m in measured if m.status in ("ran", "probed")]  # probed: installed for the name probe alone
    lines.append(
        f"{len(ran)} environment(s) run, {sum(m.status == 'current' for m in measured)} current, "
        f"{sum(m.status == 'failed' for m in measured)} failed, in {wall_s / 60:.1f} min"
    )
    lines.append(f"peak disk of the sweep's folder: {peak_bytes / 1e9:.1f} GB (target < {TARGET_PEAK_GB} GB)")
    if ran:
        lines.append(
            f"{wall_s / 60:.1f} min for {len(ran)} environment(s), {wall_s / 60 / len(ran):.1f} min each "
            f"(target for all 7 torch + 2 torch_xla releases: < {TARGET_FULL_MIN} min)"
        )
    elif any(m.status in ("would run", "would probe") for m in measured):
        would = [m for m in measured if m.status == "would run"]
        probes = sum(m.status == "would probe" for m in measured)  # name_sweep: the private-name probe
        lines.append(
            f"dry run: {len(would)} release(s) would run {sum(m.claims for m in would)} claim run(s) in all"
            + (f", {probes} would be probed for torch's private names" if probes else "")
            + "; nothing was installed"
        )
    else:
        lines.append(f"nothing to run: {wall_s:.1f} s (target < {TARGET_IDLE_S} s)")
    return lines
