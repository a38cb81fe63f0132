"""The claim scripts' formatting and line length, judged by ruff as ``nox -s lint`` judges them.

ruff is the project's formatter and checker (its settings are in pyproject.toml, which ruff
reads from the root). It is found as a module of this interpreter or on PATH; where it is
neither, the answer says the scripts were not checked, which is never a pass.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Problem

TIMEOUT_S = 120  # ruff takes well under a second on the gallery; a hang must not hold lint


@dataclass
class Formatting:
    """What ruff said about the files; ``unchecked`` says why it could not run (then nothing was judged)."""

    problems: list[Problem] = field(default_factory=list)
    unchecked: str = ""


def ruff_command() -> list[str] | None:
    """How to start ruff here: this interpreter's module first (the environment nox made), else PATH."""
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    found = shutil.which("ruff")
    return [found] if found else None


# What each command adds to a problem found; ruff's JSON gives the file, the row, a code and a message.
COMMANDS = {
    "format": (["format", "--check"], "run `ruff format` on it"),
    "check": (["check"], "`ruff check --fix` fixes some; split a long line by hand"),
}


def _diagnostics(ruff: list[str], what: str, root: Path, files: list[str]) -> list[dict]:
    """ruff's findings as JSON objects; ValueError when ruff failed or answered something else."""
    arguments, _ = COMMANDS[what]
    result = subprocess.run(
        [*ruff, *arguments, "--output-format", "json", "--", *files],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    if result.returncode not in (0, 1):  # 1: findings; anything else: ruff itself failed
        raise ValueError(f"ruff {what} exited {result.returncode}: {result.stderr.strip()[:500]}")
    found = json.loads(result.stdout or "[]")
    if not isinstance(found, list) or not all(isinstance(d, dict) for d in found):
        raise ValueError(f"ruff {what} answered something other than a list of findings")
    if result.returncode == 1 and not found:
        raise ValueError(f"ruff {what} reported a failure without findings: {result.stderr.strip()[:500]}")
    return found


def _problem(root: Path, what: str, finding: dict) -> Problem:
    path = Path(str(finding.get("filename", "")))
    if path.is_absolute() and path.is_relative_to(root):
        path = path.relative_to(root)
    row = (finding.get("location") or {}).get("row")
    message = f"{finding.get('code')}: {finding.get('message')} ({COMMANDS[what][1]})"
    return Problem(path, f"ruff {what}", message, row if isinstance(row, int) else None)


def check_formatting(root: Path, files: list[str]) -> Formatting:
    """ruff's format check and lint rules on ``files`` (paths relative to ``root``)."""
    ruff = ruff_command()
    if ruff is None:
        return Formatting(unchecked="ruff is not installed here (pip install ruff, or use the environment nox made)")
    if not files:
        return Formatting()
    problems = []
    for what in COMMANDS:
        try:
            problems += [_problem(root, what, finding) for finding in _diagnostics(ruff, what, root, files)]
        except (OSError, subprocess.TimeoutExpired, ValueError) as exc:  # JSONDecodeError is a ValueError
            return Formatting(unchecked=f"ruff could not judge the scripts: {exc}")
    return Formatting(problems)
