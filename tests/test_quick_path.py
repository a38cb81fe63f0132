"""The contributor's quick path (`torchclaims new`, then `torchclaims lint`) fails wherever a later CI step would.

Each case runs, on a copy of the project with a scaffolded claim, both the quick path and
the CI steps it stands for: `nox -s lint`'s ruff on the scripts, and the suite's breaking-test
inventory (tests/test_breaking_checks.py, run by pytest in a process of its own).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchclaims.authoring.formatting import ruff_command
from torchclaims.cli import main

pytestmark = pytest.mark.processes  # pytest and ruff in processes of their own

ROOT = Path(__file__).resolve().parents[1]
CLAIM, SCRIPT = "claims/my-first-claim.toml", "gallery/my_first_claim.py"
INVENTORY = "tests/test_breaking_checks.py::test_every_check_is_refuted_by_a_test_or_says_why_not"


@pytest.fixture
def project(tmp_path, capsys) -> Path:
    """A copy of what CI's lint and inventory read, with a claim just made by `torchclaims new`."""
    if ruff_command() is None:
        reason = "ruff is not installed: the quick path cannot be compared with nox -s lint"
        pytest.fail(reason + "; CI must run this test") if os.environ.get("CI") else pytest.skip(reason)
    copy = tmp_path / "project"
    ignore = shutil.ignore_patterns("__pycache__", "lighthouse", "doctrees")
    for folder in ("claims", "gallery", "tests", "src"):  # src: ruff tells first-party imports by it
        shutil.copytree(ROOT / folder, copy / folder, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", copy)  # ruff's and pytest's settings
    assert main(["new", "my-first-claim", "--root", str(copy)]) == 0
    capsys.readouterr()
    return copy


def ci_fails(project: Path) -> dict[str, bool]:
    """What the CI steps say: ruff as nox -s lint runs it on the scripts, and the inventory test."""
    ruff = ruff_command()
    steps = {
        "ruff": [[*ruff, "format", "--check", "gallery"], [*ruff, "check", "gallery"]],
        "inventory": [[sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", INVENTORY]],
    }
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    return {
        step: any(subprocess.run(c, cwd=project, env=env, capture_output=True).returncode for c in commands)
        for step, commands in steps.items()
    }


def quick_path_fails(project: Path, capsys) -> dict[str, bool]:
    """What `torchclaims lint` says of the same two things (its other findings are the template's TODOs)."""
    main(["lint", "--root", str(project)])
    out = capsys.readouterr().out.splitlines()
    return {
        "ruff": any(SCRIPT in line and "[ruff " in line for line in out),
        "inventory": any(CLAIM in line and "[no_breaking_test]" in line for line in out),
    }


def test_a_scaffolded_claim_fails_the_quick_path_where_it_fails_the_inventory(project, capsys):
    assert ci_fails(project) == {"ruff": False, "inventory": True}  # the template is formatted; no test breaks it
    assert quick_path_fails(project, capsys) == {"ruff": False, "inventory": True}


def test_a_line_too_long_fails_the_quick_path_as_it_fails_ruff(project, capsys):
    script = project / SCRIPT
    script.write_text(script.read_text() + f'\nNOTE = "{"a long line " * 12}"\n')
    assert ci_fails(project)["ruff"] is True
    assert quick_path_fails(project, capsys)["ruff"] is True


def test_a_reason_for_no_breaking_test_passes_both(project, capsys):
    record = project / CLAIM
    reason = 'no_breaking_test = { "TODO: name what this check establishes" = "it only reads a version string" }\n'
    record.write_text(record.read_text().replace("caveats = [", reason + "caveats = [", 1))
    assert ci_fails(project) == {"ruff": False, "inventory": False}
    assert quick_path_fails(project, capsys) == {"ruff": False, "inventory": False}
