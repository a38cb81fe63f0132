"""How long each lane takes: the fast lane, the whole suite, and the docs build with every claim run.

Each lane runs here, in this environment (the one ``nox -s tests`` and
``nox -s docs`` share, ``.nox/project``), with the commands the noxfile's
sessions run (its FAST_LANE marker expression and SPHINX_BUILD arguments), as
nox would after its install step; the docs build is forced, so every claim
runs. Each lane's wall time, with pytest's or the build's last line, becomes a
row of benchmarks/measured.json (group ``lanes``), which docs/tests.md shows.
A lane that fails is recorded as failed, with its time.

Run it on an otherwise idle machine (a shared one measures the other jobs as
much as the lanes); the whole of it takes as long as the three lanes::

    .nox/project/bin/python benchmarks/lane_times.py
    .nox/project/bin/python benchmarks/lane_times.py --lanes fast --select tests/test_layout.py  # a try, not kept
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

from measured_rows import replace_group, row

ROOT = Path(__file__).resolve().parents[1]
GROUP = "lanes"
HOW = "python benchmarks/lane_times.py"
ALL = ["fast", "tests", "docs"]
WARNING = "WARNING:"  # how Sphinx starts a warning's text


@functools.cache  # loading it registers its sessions with nox: once
def noxfile():
    """The noxfile as a module: the lanes' commands come from it, never copied here."""
    spec = importlib.util.spec_from_file_location("noxfile_of_the_lanes", ROOT / "noxfile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lanes(select: list[str]) -> dict[str, tuple[str, list[str], dict[str, str]]]:
    """name -> (what the row says, command, environment), as the sessions run them."""
    nox = noxfile()
    pytest = [sys.executable, "-m", "pytest", *select]
    docs_env = {"TORCHCLAIMS_BACKEND": "cpu", "TORCHCLAIMS_FORCE": "1", "TORCHCLAIMS_PUBLISH_DIR": "_build/html"}
    return {
        "fast": ("the fast lane: nox -s tests -- --fast", [*pytest, "-m", nox.FAST_LANE], {}),
        "tests": ("the whole suite: nox -s tests", pytest, {}),
        "docs": (
            "the docs build, every claim run: nox -s docs -- --force",
            [sys.executable, "-m", "sphinx", *nox.SPHINX_BUILD],
            docs_env,
        ),
    }


def timed(command: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Wall seconds, exit status and the output's last word on itself (:func:`closing`)."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    return seconds, done.returncode, closing((done.stdout + done.stderr).strip().splitlines())


def closing(lines: list[str]) -> str:
    """pytest's summary line; for a quiet Sphinx build, which prints only its warnings, how many it gave
    (a warning's own text names this machine's paths)."""
    warnings = sum(WARNING in line for line in lines)
    if not lines or WARNING in lines[-1]:
        return f"{warnings} warning(s)" if warnings else "(no output)"
    return lines[-1].strip("= ")[:200]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lanes", nargs="+", choices=ALL, default=ALL, help="only these: a try, recorded only whole")
    parser.add_argument(
        "--select", nargs="+", default=[], help="only these tests in the test lanes: a try, so nothing is recorded"
    )
    parser.add_argument("--no-record", action="store_true", help="print only; leave benchmarks/measured.json")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    rows, failed = [], False
    for name, (what, command, env) in ((n, lane) for n, lane in lanes(args.select).items() if n in args.lanes):
        seconds, status, last = timed(command, env)
        failed |= status != 0
        figure = f"{seconds / 60:.1f} min ({'' if status == 0 else f'failed, exit {status}: '}{last})"
        print(f"{name}: {figure}", flush=True)
        rows.append(row(GROUP, f"{what}, on {cores} cores", figure, HOW))
    if not (args.no_record or args.select) and len(rows) == len(ALL):  # the three rows are measured together
        replace_group(GROUP, rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
