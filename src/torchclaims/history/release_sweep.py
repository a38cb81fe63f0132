"""The release sweep's run: every planned release in an environment of its own (the plan: sweep_plan.py).

One environment at a time: a venv is created for a release, the release and the
project are installed into it with every other package held at
sweep/constraints.txt, ``torchclaims verify`` writes its results file into
results/, and the venv is removed before the next one, so the disk holds at most
one environment. pip keeps no cache (``PIP_NO_CACHE_DIR``) and unpacks into the
sweep's own temporary folder, which is emptied too.

A script change costs what it changes: only the claims the plan names run, and
``verify`` merges their records into the sweep's file of that release
(output.write_run: the other records and their figures are kept). What each run
measured is reported by sweep_report.py.
"""

from __future__ import annotations

import os
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
from ..evidence.results import ResultsFile, figures_dir, read_results
from ..project import DEFAULTS, Folders
from .releases import Releases
from .sweep_plan import Planned, Release, listed, plan, release_files
from .sweep_report import Measured, summary_line

CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # the CPU builds of torch (--torch-index cpu)
MIN_FREE_GB = 12.0  # an environment with a CUDA build of torch takes 5-8 GB while it is installed


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
    # Run in a release's environment after its claims, before the environment is removed (the private-name
    # probe, history.name_sweep); returns a line for the release's summary, "" for nothing to say.
    in_environment: Callable[[Sweep, Release, Path], str] | None = None

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
        size, status, ran, written, also = 0, 0, 0, None, ""
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
            also = self.in_environment(self, release, env_dir) if self.in_environment else ""
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
        detail = "; ".join(part for part in (detail, also) if part)
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
