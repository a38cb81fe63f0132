"""The release sweep: every executable claim on every release of sweep/releases.toml.

One environment at a time: a venv is created for a release, the release and the
project are installed into it with every other package held at
sweep/constraints.txt, ``torchclaims verify`` writes its results file into
results/, and the venv is removed before the next one, so the disk holds at most
one environment. pip keeps no cache (``PIP_NO_CACHE_DIR``) and unpacks into the
sweep's own temporary folder, which is emptied too.

Whether a release needs a run is decided before anything is installed, from the
committed results files and the current scripts: a release is current when a
results file stands for it (releases.Series.release_of), holds a record of every
executable claim, and none of its records was made by an older version of a
script that still exists (freshness.outdated_results). A second sweep with
nothing changed therefore installs nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .claims import load_claims
from .errors import InvalidFileError
from .freshness import outdated_results
from .releases import Releases, Series
from .results import figures_dir, read_results

CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # the CPU builds of torch (--torch-index cpu)
MIN_FREE_GB = 12.0  # an environment with a CUDA build of torch takes 5-8 GB while it is installed
LABEL_PREFIX = "sweep:"  # nox -s refresh leaves files with this label to the sweep
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


@dataclass
class Planned:
    release: Release
    current: Path | None  # the results file that already stands for it
    why: str  # why it runs, or which file makes it current


@dataclass
class Measured:
    release: Release
    status: str  # "current", "ran", "failed"
    detail: str = ""
    install_s: float = 0.0
    verify_s: float = 0.0
    env_bytes: int = 0
    results_file: str = ""


def member_files(results_dir: Path, release: Release) -> list[Path]:
    """Results files that stand for this release of the series, oldest name first."""
    found = []
    for path in sorted(results_dir.glob("*.json")) if results_dir.is_dir() else []:
        try:
            results = read_results(path)
        except InvalidFileError:
            continue  # the site and the tests report it
        if release.series.release_of(results.environment) == release.version:
            found.append(path)
    return found


def plan(root: Path, releases: Releases, results_dir: Path, selected: list[Release]) -> list[Planned]:
    """For each release: the results file that makes it current, or why it must run."""
    claims = [c.id for c in load_claims(root / "claims").executable() if (root / c.script).is_file()]
    outdated = outdated_results(root, results_dir)
    planned = []
    for release in selected:
        files = member_files(results_dir, release)
        if not files:
            planned.append(Planned(release, None, "no results file of this release with the held versions"))
            continue
        newest = files[-1]
        missing = sorted(set(claims) - {r.claim_id for r in read_results(newest).records})
        if newest.name in outdated:
            stale = outdated[newest.name]
            planned.append(Planned(release, None, f"{newest.name}: {len(stale)} records from older scripts ({', '.join(stale[:3])}…)"))
        elif missing:
            planned.append(Planned(release, None, f"{newest.name} has no record of {len(missing)} claim(s): {', '.join(missing[:3])}"))
        else:
            planned.append(Planned(release, newest, f"current: {newest.name}"))
    return planned


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
    timeout: float = 300.0
    workflow_run: bool = False  # inside a GitHub Actions job: each file states the run (verify --workflow-run)
    run: Run = run_command
    python: str = sys.executable
    free_bytes: Callable[[Path], int] = field(default=lambda path: shutil.disk_usage(path).free)

    def pip_env(self, release: Release) -> dict[str, str]:
        """pip reads only the sweep's own constraints (lifting a machine-wide cap on torch) and keeps no cache."""
        constraints = self.work_dir / "constraints.txt"
        constraints.write_text(self.releases.constraints_for(release.series), encoding="utf-8")
        return {"PIP_CONSTRAINT": str(constraints), "PIP_NO_CACHE_DIR": "1", "TMPDIR": str(self.work_dir / "tmp"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    def index_args(self, release: Release) -> list[str]:
        # torch_xla wheels are built against the package index's torch, so only cpu series take the CPU index
        return ["--extra-index-url", self.torch_index] if self.torch_index and release.series.backend == "cpu" else []

    def label(self, release: Release) -> str:
        s = release.series
        held = "torch " + s.pins()["torch"] + " and " if "torch" in s.pins() else ""
        return f"{LABEL_PREFIX} {s.label(release.version)} on {s.backend}, {held}other packages held at sweep/constraints.txt"

    def run_release(self, release: Release) -> Measured:
        env_dir = self.work_dir / "env"
        shutil.rmtree(env_dir, ignore_errors=True)  # a leftover of an interrupted sweep
        shutil.rmtree(self.work_dir / "tmp", ignore_errors=True)
        (self.work_dir / "tmp").mkdir(parents=True)
        free = self.free_bytes(self.work_dir)
        if free < MIN_FREE_GB * 1e9:
            return Measured(release, "failed", f"only {free / 1e9:.1f} GB free; an environment needs about {MIN_FREE_GB:g} GB")
        pip_env = self.pip_env(release)
        # Without an index of its own, each release is the package index's build, as released.
        requirements = release.series.requirements(release.version, exact=not self.index_args(release))
        pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        started = time.perf_counter()
        try:
            steps = [
                [self.python, "-m", "venv", str(env_dir)],
                pip + self.index_args(release) + requirements,
                pip + ["-e", f"{self.root}[claims]"] + requirements,  # pinned again so pip keeps the release
            ]
            for step in steps:
                if self.run(step, pip_env) != 0:
                    return Measured(release, "failed", f"{' '.join(step[:6])} failed", time.perf_counter() - started)
            installed = time.perf_counter()
            size = dir_bytes(env_dir)
            before = set(self.results_dir.glob("*.json"))
            verify = [
                str(env_dir / "bin" / "torchclaims"), "verify", "--root", str(self.root), "--backend", release.series.backend,
                "--output", str(self.results_dir), "--records-dir", str(self.work_dir / "records" / release.name),
                "--label", self.label(release), "--timeout", f"{release.series.timeout or self.timeout:g}",
            ] + (["--workflow-run"] if self.workflow_run else [])
            backend_env = {"TORCHCLAIMS_BACKEND": release.series.backend} | ({"PJRT_DEVICE": "CPU"} if release.series.backend == "xla" else {})
            status = self.run(verify, backend_env)  # 1: a claim errored; its record says why
            verified = time.perf_counter()
        finally:
            shutil.rmtree(env_dir, ignore_errors=True)
            shutil.rmtree(self.work_dir / "tmp", ignore_errors=True)
        written = sorted(set(self.results_dir.glob("*.json")) - before)
        if status not in (0, 1) or not written:
            return Measured(release, "failed", f"verify exited {status} and wrote no results file", installed - started, verified - installed, size)
        replaced = [p for p in member_files(self.results_dir, release) if p not in written]
        for path in replaced:  # the new run stands for this release from now on
            path.unlink()
            shutil.rmtree(figures_dir(path), ignore_errors=True)
        detail = f"replaced {', '.join(p.name for p in replaced)}" if replaced else ""
        return Measured(release, "ran", detail, installed - started, verified - installed, size, written[-1].name)

    def sweep(self, selected: list[Release], dry_run: bool = False, log: Callable[[str], None] = print) -> list[Measured]:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        measured = []
        for planned in plan(self.root, self.releases, self.results_dir, selected):
            log(f"{planned.release.name}: {planned.why}")
            if planned.current is not None:
                measured.append(Measured(planned.release, "current", planned.why, results_file=planned.current.name))
            elif dry_run:
                measured.append(Measured(planned.release, "would run", planned.why))
            else:
                measured.append(self.run_release(planned.release))
                log(f"{planned.release.name}: {summary_line(measured[-1])}")
        return measured


def summary_line(m: Measured) -> str:
    if m.status == "current":
        return m.detail
    figures = f"install {m.install_s / 60:.1f} min, verify {m.verify_s / 60:.1f} min, environment {m.env_bytes / 1e9:.1f} GB"
    return f"{m.status}" + (f" ({figures})" if m.install_s else "") + (f"; {m.detail}" if m.detail else "")


def report(measured: list[Measured], wall_s: float, peak_bytes: int) -> list[str]:
    """The session's closing summary, with the targets beside the measured figures."""
    lines = [f"{m.release.name:<22} {summary_line(m)}" for m in measured]
    ran = [m for m in measured if m.status == "ran"]
    lines.append(f"{len(ran)} environment(s) run, {sum(m.status == 'current' for m in measured)} current, "
                 f"{sum(m.status == 'failed' for m in measured)} failed, in {wall_s / 60:.1f} min")
    lines.append(f"peak disk of the sweep's folder: {peak_bytes / 1e9:.1f} GB (target < {TARGET_PEAK_GB} GB)")
    if ran:
        lines.append(f"{wall_s / 60:.1f} min for {len(ran)} environment(s), {wall_s / 60 / len(ran):.1f} min each "
                     f"(target for all 7 torch + 2 torch_xla releases: < {TARGET_FULL_MIN} min)")
    elif any(m.status == "would run" for m in measured):
        lines.append(f"dry run: {sum(m.status == 'would run' for m in measured)} release(s) would run; nothing was installed")
    else:
        lines.append(f"nothing to run: {wall_s:.1f} s (target < {TARGET_IDLE_S} s)")
    return lines
