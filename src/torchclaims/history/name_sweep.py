"""The private-name probe in each release's environment, as part of the release sweep.

For each release of the sweep whose answer is missing, unreadable, made with
another version or older than the list of names (:mod:`.name_answers`), a venv
is made as the sweep makes one for the release's claims (the release from its
index, this project with its claims' packages, every other package held at
sweep/constraints.txt: torch.testing._internal imports expecttest and numpy,
which torch alone lacks), :mod:`.name_probe` runs there, and what it wrote is
validated here before it becomes the release's answer in results/. A release
whose claims the sweep runs is probed in their environment before it is removed
(:func:`probe_after_claims`); only a release with nothing to run gets a venv of
its own for the probe, removed afterwards as the sweep's are.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import InvalidFileError
from .name_answers import Answer, answer_path, read_probe_output, standing, version_problem, write_answer
from .release_sweep import MIN_FREE_GB, Sweep
from .sweep_plan import Release
from .sweep_report import Measured, summary_line

PROBE = "torchclaims.history.name_probe"


def probe_command(python: Path, output: Path, release: Release) -> list[str]:
    return [str(python), "-m", PROBE, str(output), release.series.package]


def probe_environment(sweep: Sweep, release: Release, env_dir: Path) -> Answer | str:
    """Run the probe in the release's environment at ``env_dir``: its validated answer, or why there is none."""
    output = sweep.work_dir / "probe.json"
    output.unlink(missing_ok=True)
    try:
        status = sweep.run(probe_command(env_dir / "bin" / "python", output, release), {})
        if status != 0:
            return f"the private-name probe exited {status}"
        try:
            answer = Answer(**read_probe_output(output).model_dump(), release=release.name)
        except InvalidFileError as exc:
            return f"the private-name probe wrote no usable answer: {exc}"
    finally:
        output.unlink(missing_ok=True)
    wrong = version_problem(answer, release)
    return f"the probe's environment was {wrong}" if wrong else answer


def keep_answer(sweep: Sweep, release: Release, answer: Answer) -> str:
    path = answer_path(sweep.results_dir, release)
    write_answer(path, answer)
    missing = f"; {len(answer.missing)} do not: {', '.join(answer.missing)}" if answer.missing else ""
    return f"{len(answer.resolves)} private name(s) resolve{missing} ({path.name})"


def probe_after_claims(sweep: Sweep, release: Release, env_dir: Path) -> str:
    """Sweep.in_environment: probe the environment the release's claims just ran in, if its answer is due."""
    if not standing(sweep.results_dir, release)[1]:
        return ""
    answer = probe_environment(sweep, release, env_dir)
    return f"private-name probe: {answer}" if isinstance(answer, str) else keep_answer(sweep, release, answer)


def probe_release(sweep: Sweep, release: Release) -> Measured:
    """Make the release's environment as for its claims (none ran in this sweep), probe it, and keep its answer."""
    env_dir, tmp = sweep.work_dir / "env", sweep.work_dir / "tmp"
    for folder in (env_dir, tmp):  # a leftover of an interrupted sweep
        shutil.rmtree(folder, ignore_errors=True)
    tmp.mkdir(parents=True)
    free = sweep.free_bytes(sweep.work_dir)
    if free < MIN_FREE_GB * 1e9:
        return Measured(release, "failed", f"only {free / 1e9:.1f} GB free for the private-name probe's environment")
    started = time.perf_counter()
    try:
        for step in sweep.install_steps(release, env_dir):
            if sweep.run(step, sweep.pip_env(release)) != 0:
                return Measured(release, "failed", f"{' '.join(step[:6])} failed", time.perf_counter() - started)
        installed = time.perf_counter() - started
        answer = probe_environment(sweep, release, env_dir)
    finally:
        for folder in (env_dir, tmp):
            shutil.rmtree(folder, ignore_errors=True)
    if isinstance(answer, str):
        return Measured(release, "failed", answer, installed)
    return Measured(release, "probed", keep_answer(sweep, release, answer), installed)


def probe_missing(
    sweep: Sweep,
    selected: list[Release],
    dry_run: bool = False,
    log: Callable[[str], None] = print,
    in_own: frozenset[str] = frozenset(),
) -> list[Measured]:
    """Probe each selected release that has no answer standing for it (a dry run says which); the releases
    named in ``in_own`` run claims in this sweep and are probed in their environment (:func:`probe_after_claims`)."""
    measured = []
    for release in selected:
        _, why = standing(sweep.results_dir, release)
        if not why:
            continue
        if release.name in in_own:
            if dry_run:
                log(f"{release.name}: {why}; the probe runs in the environment of its claims")
            continue
        log(f"{release.name}: {why}")
        if dry_run:
            log(
                f"  install: {' '.join(sweep.requirements(release))} and this project [claims] into a new venv, "
                "and run the private-name probe there"
            )
            measured.append(Measured(release, "would probe", why))
            continue
        measured.append(probe_release(sweep, release))
        log(f"{release.name}: {summary_line(measured[-1])}")
    return measured
