"""The offline bundle (torchclaims.run.bundle): what it packs, what it leaves to the
machine, its size limit, and a run of its script with pip's index disabled."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchclaims.errors import TorchclaimsError
from torchclaims.history.releases import canonical, read_constraints
from torchclaims.run import bundle as bundle_module
from torchclaims.run.bundle import MACHINE_HAS, TORCH_BRINGS, bundle, left_to_the_machine

ROOT = Path(__file__).resolve().parents[1]


def requirement_names(distribution: str) -> set[str]:
    """The unconditional requirements of an installed distribution (no extras)."""
    names = set()
    for requirement in importlib.metadata.requires(distribution) or []:
        if "extra ==" in requirement:
            continue
        names.add(canonical(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)[0]))
    return names


def test_what_torch_brings_is_what_the_installed_torch_requires():
    required = {n for n in requirement_names("torch") if not n.startswith(("nvidia-", "triton"))}
    required |= requirement_names("sympy") | requirement_names("jinja2")
    assert required <= TORCH_BRINGS, f"torch requires {sorted(required - TORCH_BRINGS)}, which the machine may lack"


@pytest.mark.parametrize(
    "name", ["torch", "triton", "nvidia-cublas-cu12", "pytorch-triton-rocm", "SymPy", "typing_extensions", "numpy"]
)
def test_torch_and_what_comes_with_it_are_left_to_the_machine(name):
    assert left_to_the_machine(name)


@pytest.mark.parametrize(
    "name", ["pydantic", "pydantic-core", "transformers", "accelerate", "matplotlib", "expecttest"]
)
def test_what_verify_needs_is_packed(name):
    assert not left_to_the_machine(name)
    assert canonical(name) in read_constraints(ROOT / "sweep" / "constraints.txt"), (
        f"{name} is not pinned, so it is not packed"
    )


class FakePip:
    """Stands in for pip: writes a wheel of a chosen size per requirement."""

    def __init__(self, sizes: dict[str, int] | None = None):
        self.sizes = sizes or {}
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, *args: str) -> None:
        self.calls.append(args)
        dest = Path(args[args.index("--wheel-dir" if args[0] == "wheel" else "--dest") + 1])
        names = ["torchclaims==0.1.0"] if args[0] == "wheel" else [a for a in args if "==" in a]
        for requirement in names:
            name, version = requirement.split("==")
            (dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl").write_bytes(b"0" * self.sizes.get(name, 10))


def test_the_folder_holds_wheels_claims_gallery_constraints_and_the_script(tmp_path, monkeypatch):
    pip = FakePip()
    monkeypatch.setattr(bundle_module, "_pip", pip)
    packed = bundle(ROOT, tmp_path / "out", "3.12", log=lambda m: None, allow_uncommitted=True)
    assert (packed.path / "claims" / "torchtpu-package-without-tpu.toml").is_file()
    assert (packed.path / "gallery" / "torchtpu_package_without_tpu.py").is_file()
    assert os.access(packed.path / "run.sh", os.X_OK)
    pins = read_constraints(packed.path / "constraints.txt")
    assert {"pydantic", "pydantic-core", "transformers"} <= set(pins) and not {"numpy", "sympy"} & set(pins)
    download = next(call for call in pip.calls if call[0] == "download")
    assert download[download.index("--python-version") + 1] == "3.12"
    assert "--no-deps" in download and "--only-binary=:all:" in download
    assert {a for a in download if "==" in a} == {f"{n}=={v}" for n, v in pins.items()}
    assert packed.size == sum(p.stat().st_size for p in packed.path.rglob("*") if p.is_file())


def test_a_bundle_over_the_limit_is_an_error_naming_the_largest_wheels(tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_module, "_pip", FakePip({"transformers": bundle_module.MAX_BYTES}))
    with pytest.raises(TorchclaimsError, match=r"over the 64 MB limit; largest: transformers-5\.24\.0"):
        bundle(ROOT, tmp_path / "out", "3.12", log=lambda m: None, allow_uncommitted=True)


def test_uncommitted_claims_or_scripts_are_not_packed(tmp_path, monkeypatch):
    """A results file's records must name script versions in git history: a bundle of
    uncommitted scripts would make a hardware owner's whole run rejected on merge."""
    monkeypatch.setattr(bundle_module, "_pip", FakePip())
    project = tmp_path / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(".git", ".nox", "_build", ".sweep", "node_modules"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", str(project)], check=True)
    subprocess.run([*git, "-C", str(project), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(project), "commit", "-q", "-m", "all"], check=True)
    assert bundle(project, tmp_path / "clean", "3.12", log=lambda m: None).path.is_dir()
    script = project / "gallery" / "torchtpu_package_without_tpu.py"
    script.write_text(script.read_text() + "\n# edited\n")
    with pytest.raises(TorchclaimsError, match=r"uncommitted changes in gallery/torchtpu_package_without_tpu\.py"):
        bundle(project, tmp_path / "dirty", "3.12", log=lambda m: None)
    assert not (tmp_path / "dirty").exists()
    assert bundle(project, tmp_path / "trial", "3.12", log=lambda m: None, allow_uncommitted=True).path.is_dir()


def test_an_existing_folder_is_never_overwritten(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(TorchclaimsError, match="exists"):
        bundle(ROOT, tmp_path / "out", "3.12")


# -- the folder on a machine with torch and no package index --------------------------


def machine_with_torch(tmp_path: Path) -> Path:
    """A fresh venv that has torch and what torch brings, nothing else: the
    distributions' files are linked into one folder that a .pth file adds."""
    packages = tmp_path / "machine-site"
    packages.mkdir()
    for name in {"torch", *MACHINE_HAS}:
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        tops = {Path(str(f)).parts[0] for f in distribution.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__"}:
            source = Path(distribution.locate_file(top))
            if source.exists() and not (packages / top).exists():
                (packages / top).symlink_to(source)
    venv = tmp_path / "machine"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run(
        [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "torch-only.pth").write_text(f"{packages}\n")
    return venv / "bin" / "python"


@pytest.mark.claims
def test_the_folder_runs_verify_with_the_machines_torch_and_no_index(tmp_path):
    packed = bundle(
        ROOT,
        tmp_path / "bundle",
        f"{sys.version_info.major}.{sys.version_info.minor}",
        log=lambda m: None,
        allow_uncommitted=True,  # the folder as it is, edits included
    )
    python = machine_with_torch(tmp_path)
    lacks = subprocess.run([python, "-c", "import pydantic"], capture_output=True)
    assert lacks.returncode != 0, "the stand-in machine must not have pydantic: the bundle brings it"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "TORCHCLAIMS_"))}
    env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, PYTHON=str(python))
    run = subprocess.run(
        [packed.path / "run.sh", "--backend", "cpu", "--output", str(tmp_path / "out"), "privateuse1-named-device"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    (results,) = (tmp_path / "out").glob("*.json")
    records = json.loads(results.read_text())["records"]
    assert [r["claim_id"] for r in records] == ["privateuse1-named-device"]
    assert records[0]["verdict"] != "error", records[0]["reason"]
    # The same folder answers the doctor, as the hardware rehearsal (rehearsal.sh) first asks it.
    doctor = subprocess.run(
        [packed.path / "run.sh", "doctor", "--backend", "cpu"], env=env, capture_output=True, text=True, timeout=600
    )
    assert doctor.returncode == 0, doctor.stdout[-2000:] + doctor.stderr[-3000:]
    assert "in the sandbox:" in doctor.stdout and (packed.path / "rehearsal.sh").stat().st_mode & 0o100
    assert (packed.path / "examples" / "check" / "native_mlp.py").is_file()  # the model the rehearsal checks
