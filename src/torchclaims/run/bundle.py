"""The offline bundle: what ``torchclaims verify`` needs, for a machine that has
its vendor's torch but no package index (HPC clusters, air-gapped accounts).

One folder: ``wheels/`` (the project's wheel and every package that
sweep/constraints.txt pins, for one Python version and platform), ``claims/``,
``gallery/``, ``examples/`` (models for ``check``), the constraints, ``run.sh``
and ``rehearsal.sh`` (doctor, every claim and a check, into one folder). The
script makes a venv that sees
the machine's own packages (its torch above all), installs from ``wheels/``
alone (``pip --no-index``) and runs ``verify``. torch, its CUDA libraries,
triton and what torch itself requires are left to the machine: torch cannot be
installed without them. So is numpy (16 MB of the 64): every accelerator image
with torch has it. No Sphinx: the site is built where the results file is
merged.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import TorchclaimsError
from ..evidence.provenance import git_output
from ..history.releases import CONSTRAINTS_FILE, canonical, read_constraints
from ..project import CLAIMS, GALLERY

MAX_BYTES = 64 * 1024 * 1024
PACKED_FROM_GIT = ("src", CLAIMS, GALLERY, "examples", "pyproject.toml", "sweep/constraints.txt")
# The Requires-Dist of torch 2.9-2.15, and of sympy and jinja2 in turn
# (tests/test_bundle.py checks it against the torch installed).
TORCH_BRINGS = frozenset(
    {"filelock", "typing-extensions", "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "fsspec", "setuptools"}
)
MACHINE_HAS = TORCH_BRINGS | {"numpy"}
# manylinux x86_64 tags, newest first: pip takes the first wheel a pin has for one of them.
LINUX_X86_64 = (
    "manylinux_2_28_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_5_x86_64",
    "manylinux1_x86_64",
)

RUN_SCRIPT = """#!/bin/sh
# Run the claims with this machine's torch and no package index:
#   ./run.sh --backend cuda [claim ids] [--label "who ran it, where"]
#   ./run.sh doctor --backend cuda        (what the sandbox does to the device here)
#   ./run.sh check examples/check/native_mlp.py:mlp --backend cuda
# PYTHON names the interpreter that has torch (default: python3).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
venv="$here/venv"
"$python" -c "import torch; print('torch', torch.__version__)"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
    # The venv sees every package folder of the interpreter that has torch (site
    # folders, .pth additions, PYTHONPATH), after its own; not its standard library.
    "$python" -c "import sys, sysconfig; std = {sysconfig.get_path(k) for k in ('stdlib', 'platstdlib')}; \\
print('\\n'.join(p for p in sys.path if p and p not in std and not p.endswith(('.zip', 'lib-dynload'))))" \\
        > "$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_path('purelib'))")/machine-packages.pth"
    # Python 3.11's venv brings an old setuptools that would hide the one torch requires.
    "$venv/bin/python" -m pip uninstall --quiet --yes setuptools
fi
"$venv/bin/python" -m pip install --quiet --no-index --find-links "$here/wheels" \\
    -c "$here/constraints.txt" "torchclaims[claims]"
cd "$here"
case "${1:-}" in
    doctor|check) exec "$venv/bin/python" -m torchclaims "$@" ;;
esac
exec "$venv/bin/python" -m torchclaims verify --records-dir "$here/records" "$@"
"""

# The hardware rehearsal: what a hardware owner runs, in one command, on a machine
# with an accelerator and no network; everything it makes lands in one folder.
REHEARSAL_SCRIPT = """#!/bin/sh
# The hardware rehearsal, in one folder (default ./rehearsal):
#   ./rehearsal.sh --backend cuda [--label "who ran it, where"] [--out DIR]
# 1. doctor.txt: the device outside the sandbox, in it, and with each of its parts left out;
# 2. the results file of every claim on the backend, sandbox on (send it back: torchclaims merge);
# 3. check/: torchclaims check of an example model on the backend against the CPU (check.json);
# log.txt: all of it, with each step's exit code.
set -u
here=$(cd "$(dirname "$0")" && pwd)
backend="" label="" out="$here/rehearsal"
while [ $# -gt 0 ]; do
    case "$1" in
        --backend) backend=$2; shift 2 ;;
        --label) label=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "rehearsal.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$backend" ] || { echo "rehearsal.sh: --backend NAME is required" >&2; exit 2; }
mkdir -p "$out/check"
label=${label:-"hardware rehearsal, $(hostname)"}
step() {
    echo "== $(date -u +%H:%M:%S) $*"
    "$@"
    echo "== exit code $?"
}
{
    step "$here/run.sh" doctor --backend "$backend" | tee "$out/doctor.txt"
    step "$here/run.sh" --backend "$backend" --output "$out" --label "$label"
    step "$here/run.sh" check "$here/examples/check/native_mlp.py:mlp" --backend "$backend" \
        --output "$out/check" --json "$out/check/check.json"
} 2>&1 | tee "$out/log.txt"
"""


@dataclass(frozen=True)
class Bundle:
    path: Path
    wheels: list[Path]
    size: int  # bytes, the whole folder


def left_to_the_machine(name: str) -> bool:
    name = canonical(name)
    return name in MACHINE_HAS or name in ("torch", "triton") or name.startswith(("nvidia-", "pytorch-triton"))


def _pip(*args: str) -> None:
    run = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)
    if run.returncode != 0:
        raise TorchclaimsError(f"pip {args[0]} failed ({run.returncode}): {(run.stderr or run.stdout).strip()[-800:]}")


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def uncommitted(root: Path) -> list[str]:
    """What differs from the last commit in what the bundle packs (none outside a git checkout)."""
    listed = git_output(root, "status", "--porcelain", "--", *PACKED_FROM_GIT)
    return [line[3:] for line in (listed or "").splitlines() if line.strip()]


def bundle(
    root: Path,
    output: Path,
    python_version: str,
    platforms: tuple[str, ...] = LINUX_X86_64,
    log=print,
    allow_uncommitted: bool = False,
) -> Bundle:
    """Pack the folder at ``output`` (which must not exist yet) for CPython ``python_version``.

    Packing uncommitted claims or scripts is refused unless ``allow_uncommitted``: a
    results file's records must name script versions in git history, so a hardware
    owner's run of them would be rejected when it comes back."""
    if output.exists():
        raise TorchclaimsError(f"{output} exists; name a new folder")
    changed = uncommitted(root)
    if changed and not allow_uncommitted:
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        raise TorchclaimsError(
            f"{root} has uncommitted changes in {', '.join(changed[:5])}{more}: commit them first, or the records "
            "of this bundle's runs name script versions that are in no commit and are rejected on merge "
            "(--allow-uncommitted packs them anyway, for a trial run)"
        )
    pins = {
        name: version
        for name, version in read_constraints(root / CONSTRAINTS_FILE).items()
        if not left_to_the_machine(name)
    }
    wheels = output / "wheels"
    wheels.mkdir(parents=True)
    log(f"building the torchclaims wheel from {root}")
    with tempfile.TemporaryDirectory(
        prefix="torchclaims-wheel-"
    ) as copy:  # setuptools builds in the tree: not in the project's
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (root / name).is_file():
                shutil.copy2(root / name, Path(copy) / name)
        shutil.copytree(root / "src", Path(copy) / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        _pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), copy)
    platform_args = [arg for tag in platforms for arg in ("--platform", tag)]
    log(f"downloading {len(pins)} pinned packages for CPython {python_version} ({', '.join(platforms)})")
    _pip(  # --no-deps: the pins are the whole set, so nothing else is resolved or fetched
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        *platform_args,
        "--dest",
        str(wheels),
        *(f"{n}=={v}" for n, v in sorted(pins.items())),
    )
    for folder in (CLAIMS, GALLERY, "examples"):
        shutil.copytree(root / folder, output / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (output / "constraints.txt").write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())), encoding="utf-8")
    for name, text in (("run.sh", RUN_SCRIPT), ("rehearsal.sh", REHEARSAL_SCRIPT)):
        script = output / name
        script.write_text(text, encoding="utf-8")
        script.chmod(0o755)
    size = folder_size(output)
    if size > MAX_BYTES:
        largest = sorted(wheels.iterdir(), key=lambda p: p.stat().st_size, reverse=True)[:3]
        names = ", ".join(f"{p.name} ({p.stat().st_size / 2**20:.1f} MB)" for p in largest)
        raise TorchclaimsError(
            f"{output} is {size / 2**20:.1f} MB, over the {MAX_BYTES // 2**20} MB limit; largest: {names}"
        )
    return Bundle(output, sorted(wheels.iterdir()), size)
