"""The sphinx-gallery contract against each release in the range pyproject.toml pins.

The build parses the rST sphinx-gallery generates for a script (its line
markers, output and image directives, timing line and footer:
torchclaims.run.gallery_page) and reads the class it gives output blocks
(torchclaims.sphinxext.gallery_output). For each release of sphinx-gallery
the package index has within the pinned range, this installs the release
alone into a temporary venv that sees this environment's other packages, and
runs the tests of that contract there with the release's sphinx-gallery. Each
outcome becomes a row of benchmarks/measured.json (group ``sphinx-gallery``),
which docs/tests.md shows: passed, failed (with pytest's last line), or could
not check (and why) — never counted as passing.

Usage (in the project's environment, e.g. ``.nox/project/bin/python``)::

    python benchmarks/sphinx_gallery_releases.py              # every release in the range, rows written
    python benchmarks/sphinx_gallery_releases.py --versions 0.22.0 --no-record
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from pathlib import Path

from measured_rows import replace_group, row
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "sphinx-gallery"
CONTRACT_TESTS = ["tests/test_gallery_output.py", "tests/test_dependency_interfaces.py"]
GROUP = "sphinx-gallery"
HOW = "python benchmarks/sphinx_gallery_releases.py"


def pinned() -> Requirement:
    """The project's requirement on sphinx-gallery, as pyproject.toml states it (the docs extra)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for text in [*project["dependencies"], *(t for extra in project["optional-dependencies"].values() for t in extra)]:
        requirement = Requirement(text)
        if requirement.name == PACKAGE:
            return requirement
    raise SystemExit(f"pyproject.toml: no {PACKAGE} among the project's requirements")


def releases_in(requirement: Requirement) -> list[str]:
    """The releases the package index has within the requirement's range, oldest first."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", PACKAGE], capture_output=True, text=True, timeout=300
    )
    found = re.search(r"^Available versions: (.+)$", done.stdout, re.M)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"pip index versions {PACKAGE} gave no list of releases:\n{done.stderr[-2000:]}")
    versions = [v.strip() for v in found.group(1).split(",")]
    return sorted((v for v in versions if requirement.specifier.contains(v)), key=Version)


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=1800, cwd=ROOT, **kwargs)


def check(version: str, folder: Path) -> tuple[str, str]:
    """(outcome, detail) of the contract tests with this release of sphinx-gallery."""
    venv = folder / "venv"
    made = run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    if made.returncode != 0:
        return "could not check", f"venv: {made.stderr.strip()[-300:]}"
    python = venv / "bin" / "python"
    own = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    # Every other package from this environment, after the venv's own (the release) on the path.
    Path(own, "project-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet"]
    installed = run([*pip, f"{PACKAGE}=={version}"])
    if installed.returncode != 0:
        return "could not check", f"install: {installed.stderr.strip()[-300:]}"
    seen = run([str(python), "-c", "import sphinx_gallery; print(sphinx_gallery.__version__)"]).stdout.strip()
    if seen != version:
        return "could not check", f"the venv imports sphinx-gallery {seen or '(none)'}, not {version}"
    tests = run([str(python), "-m", "pytest", *CONTRACT_TESTS, "-q", "-p", "no:cacheprovider"])
    last = (tests.stdout.strip().splitlines() or ["(no output)"])[-1]
    return ("passed" if tests.returncode == 0 else "failed"), last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", nargs="+", help="only these releases (default: every one in the range)")
    parser.add_argument("--no-record", action="store_true", help="print only; leave benchmarks/measured.json")
    args = parser.parse_args(argv)
    requirement = pinned()
    versions = args.versions or releases_in(requirement)
    outside = [v for v in versions if not requirement.specifier.contains(v)]
    if outside:
        parser.error(f"outside the pinned range {requirement.specifier}: {', '.join(outside)}")
    rows, failed = [], False
    for version in versions:
        with tempfile.TemporaryDirectory(prefix="sphinx-gallery-") as folder:
            outcome, detail = check(version, Path(folder))
        print(f"{PACKAGE} {version}: {outcome}: {detail}", flush=True)
        failed |= outcome != "passed"
        what = f"{PACKAGE} {version}, pinned {requirement.specifier}: {', '.join(CONTRACT_TESTS)}"
        rows.append(row(GROUP, what, f"{outcome}: {detail}", HOW))
    if not args.no_record:
        replace_group(GROUP, rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
