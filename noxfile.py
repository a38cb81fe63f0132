"""Sessions: docs (the site), tests, lint, verify (no site), xla (verify on
torch_xla), tpu (TorchTPU's real package), sweep (every claim on every release
of sweep/releases.toml, re-running only what changed), benchmark (build speed).

torch is pinned explicitly because an open requirement pulls a multi-GB CUDA
build. The CPU build is taken by default: a local wheel that satisfies the pin
(pip's find-links) as it is, else the CPU builds' index when it answers, else
the package index's build, with one line saying so. Override the pin to rebuild
after an update, or name the index:

    nox -s docs -- --torch "torch==2.15.0"
    nox -s docs -- --torch-index pypi      # the package index's build (CUDA on Linux)
    nox -s docs -- --backend auto

Every install holds the packages claim scripts import at sweep/constraints.txt,
so a build and the sweep's run of the same release are the same configuration.
A session whose requirements did not change since its last install installs
nothing (a stamp in the venv), so a no-change build starts no process.

docs, tests and benchmark share one environment, .nox/project (one torch on
disk instead of one per session), which holds lint's tools too;
`source .nox/project/bin/activate` puts `torchclaims` on PATH. lint keeps a small
one without torch; verify, xla, tpu and sweep keep their own: a hardware
owner's verify needs no site or test tools, and the others pin another torch.
"""

import argparse
import hashlib
import json
import logging
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import nox

nox.needs_version = ">=2024.3.2"
nox.options.default_venv_backend = "venv"  # pip sees the local torch wheel; uv does not
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests", "docs"]


class _WithoutUvNotice(logging.Filter):
    """nox looks for uv whatever the backend and logs "uv binary not found." in every session;
    these sessions use venv and pip on purpose, so the line says nothing here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "uv binary not found."


logging.getLogger("nox").addFilter(_WithoutUvNotice())

TORCH = os.environ.get("TORCHCLAIMS_TORCH", "torch==2.13.0")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # the CPU builds of torch: about 200 MB instead of several GB
CONSTRAINTS = ("-c", "sweep/constraints.txt")
INSTALL_INPUTS = ("pyproject.toml", "sweep/constraints.txt")  # what an install reads besides its arguments
STAMP = "torchclaims-install.json"
# Sphinx reads and writes the pages in parallel once the claims have run (they run first, on
# TORCHCLAIMS_JOBS workers). It writes on one process fewer than -j, the main one resolving
# the pages meanwhile, and writing is most of its time: one more than the cores keeps them all busy.
SPHINX_JOBS = str((os.cpu_count() or 1) + 1)
# benchmarks/build_speed.py times this very command
SPHINX_BUILD = ("-q", "-j", SPHINX_JOBS, "-b", "html", "-d", "_build/doctrees", ".", "_build/sphinx")
# The code ruff formats and checks (gallery/ too: its text is hashed into results, so a refresh follows a change).
RUFF_PATHS = ("src", "tests", "benchmarks", "gallery", "noxfile.py", "conf.py")


def options(session: nox.Session, add_help: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"nox -s {session.name} --", add_help=add_help)
    parser.add_argument("--backend", default=os.environ.get("TORCHCLAIMS_BACKEND", "cpu"))
    parser.add_argument("--torch", default=TORCH, help="pip requirement for torch (default %(default)s)")
    parser.add_argument("--force", action="store_true", help="re-run every claim")
    parser.add_argument(
        "--torch-index",
        default=os.environ.get("TORCHCLAIMS_TORCH_INDEX", "auto"),
        help="where torch comes from: auto (a local wheel, "
        "else the CPU builds' index if it answers, else the package index), "
        "cpu (the CPU builds' index), pypi (the package index's build: CUDA on Linux) "
        "or an index URL (default %(default)s)",
    )
    known, rest = parser.parse_known_args(session.posargs)
    known.rest = rest
    return known


def local_wheel(session: nox.Session, requirement: str) -> bool:
    """Whether pip finds a wheel satisfying the pin without any index (its find-links, or the venv itself)."""
    check = [
        str(Path(session.bin) / "python"),
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--no-index",
        "--no-deps",
        "--quiet",
        requirement,
    ]
    return subprocess.run(check, capture_output=True).returncode == 0


def unreachable(url: str, timeout_s: float = 3.0) -> str:
    """'' when the index answers within the timeout, else why not."""
    try:
        urllib.request.urlopen(urllib.request.Request(url + "/torch/", method="HEAD"), timeout=timeout_s).close()
        return ""
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))


def torch_source(session: nox.Session, requirement: str, index: str) -> list[str]:
    """pip arguments that take torch from where --torch-index says."""
    if index == "pypi":
        return []
    if index != "auto":
        return ["--extra-index-url", CPU_INDEX if index == "cpu" else index]
    if local_wheel(session, requirement):
        session.log(f"{requirement}: a local wheel satisfies it; installed as it is")
        return ["--no-index", "--no-deps"]  # torch's own dependencies come with the project, from the index
    why = unreachable(CPU_INDEX)
    if not why:
        session.log(f"{requirement}: the CPU build from {CPU_INDEX}")
        return ["--extra-index-url", CPU_INDEX]
    session.warn(
        f"{requirement}: no local wheel, and the CPU builds' index {CPU_INDEX} does not answer ({why}): "
        "downloading the package index's build, on Linux a CUDA build of several GB "
        "(--torch-index cpu insists on the CPU index)"
    )
    return []


def pending_install(session: nox.Session, **wanted: str):
    """None when the venv holds this very install (its arguments, pyproject.toml and
    the constraints); else a function that records the install once it is made."""
    wanted["inputs"] = hashlib.sha256(b"".join(Path(name).read_bytes() for name in INSTALL_INPUTS)).hexdigest()
    path = Path(session.bin).parent / STAMP
    if path.is_file() and json.loads(path.read_text(encoding="utf-8")) == wanted:
        session.log(f"installed already, nothing changed since (removing {Path(session.bin).parent} makes it again)")
        return None
    path.unlink(missing_ok=True)  # until the new install is complete
    return lambda: path.write_text(json.dumps(wanted), encoding="utf-8")


SHARED_VENV = Path(".nox/project")
# Every extra the shared sessions need, installed by each: the same install, so the stamp holds for all
# (lint: the quick path, `torchclaims lint`, runs ruff in this environment).
SHARED_EXTRAS = "docs,claims,test,lint"


class Shared:
    """A session working in the shared environment, with what the helpers here use of a nox session."""

    def __init__(self, session: nox.Session, location: Path | None = None):
        self.session = session
        venv = (location or SHARED_VENV).resolve()
        self.bin = str(venv / "bin")
        if not (venv / "bin" / "python").is_file():
            session.log(f"making the shared environment {venv} (docs, tests and benchmark use it)")
            session.run(sys.executable, "-m", "venv", str(venv), external=True)
        self.env = {"VIRTUAL_ENV": str(venv), "PATH": os.pathsep.join([self.bin, os.environ.get("PATH", "")])}

    def install(self, *args: str) -> None:
        self.run("python", "-m", "pip", "install", *args)

    def run(self, program: str, *args: str, env: dict | None = None, **options):
        """``program`` from the shared environment's bin/ where it is there (nox resolves it on its own PATH)."""
        own = Path(self.bin) / program
        return self.session.run(
            str(own) if own.is_file() else program, *args, env={**self.env, **(env or {})}, external=True, **options
        )

    def __getattr__(self, name: str):
        return getattr(self.session, name)  # log, warn, error, posargs, name


def install(session: nox.Session, torch_requirement: str, extras: str, torch_index: str = "auto") -> None:
    """torch, then the project with ``extras``; nothing when the same install was made last time."""
    done = pending_install(session, torch=torch_requirement, extras=extras, index=torch_index)
    if done is None:
        return
    session.install(torch_requirement, *CONSTRAINTS, *torch_source(session, torch_requirement, torch_index))
    session.install("-e", f".[{extras}]", torch_requirement, *CONSTRAINTS)
    done()


@nox.session(python=False)  # the shared environment (Shared)
def docs(session: nox.Session) -> None:
    """Build the site, verifying every claim on the backend; publish it into _build/html.

    Sphinx works in _build/sphinx (pages) and _build/doctrees; the extension copies
    the pages to _build/html without doctrees, sources or build information.
    """
    session = Shared(session)
    opts = options(session)
    install(session, opts.torch, SHARED_EXTRAS, opts.torch_index)
    env = {
        "TORCHCLAIMS_BACKEND": opts.backend,
        "TORCHCLAIMS_FORCE": "1" if opts.force else "0",
        "TORCHCLAIMS_PUBLISH_DIR": "_build/html",
    }
    session.log("sphinx-build -q: warnings and the claims' progress; a first build runs every claim (minutes)")
    session.run("sphinx-build", *SPHINX_BUILD, *opts.rest, env=env)
    verdicts = Path("_build/doctrees/torchclaims-verdicts.txt")  # written by torchclaims.sphinxext.build.summary
    if verdicts.is_file():
        session.log(verdicts.read_text(encoding="utf-8").strip())
    session.log(
        "site: _build/html/index.html (open it in a browser, or serve the folder: python -m http.server -d _build/html)"
    )


# The slow lanes (markers in pyproject.toml): what `-- --fast` leaves out.
FAST_LANE = "not (claims or processes or browser)"


@nox.session(python=False)  # the shared environment (Shared)
def tests(session: nox.Session) -> None:
    """Run the test suite (includes every real claim on the CPU); CI and a pull request run it whole.

    `nox -s tests -- --fast` leaves out the slow lanes (real claims, claim processes and
    site builds, the browser), for a quick check while editing; other arguments go to pytest.
    """
    session = Shared(session)
    opts = options(session)
    install(session, opts.torch, SHARED_EXTRAS, opts.torch_index)
    lane = ["-m", FAST_LANE] if "--fast" in opts.rest else []
    session.run("pytest", *lane, *(a for a in opts.rest if a != "--fast"))


@nox.session
def lint(session: nox.Session) -> None:
    """Check claim records and scripts, as a reviewer would; then the code's format and ruff's checks.

    `ruff format` and `ruff check --fix` (on the same paths) fix most of what ruff reports;
    ruff's pin is the `lint` extra of pyproject.toml. An environment of its own without torch,
    so CI's lint job installs in seconds; the shared one holds the same ruff for the quick path.
    """
    done = pending_install(session, extras="lint")
    if done is not None:
        session.install("-e", ".[lint]")
        done()
    session.run("torchclaims", "lint")
    session.run("ruff", "format", "--check", *RUFF_PATHS)
    session.run("ruff", "check", *RUFF_PATHS)


@nox.session
def verify(session: nox.Session) -> None:
    """Verify claims without building the site; writes a results file."""
    opts = options(session)
    install(session, opts.torch, "claims", opts.torch_index)
    session.run(
        "torchclaims", "verify", "--backend", opts.backend, *opts.rest, env={"TORCHCLAIMS_BACKEND": opts.backend}
    )


@nox.session(default=False)
def sweep(session: nox.Session) -> None:
    """Every claim on every release of sweep/releases.toml, one environment at a time, into results/.

    Re-runs only the claims whose scripts changed (or that are new) and merges
    them into each release's file; `-- --dry-run` says per release what it would
    install, download and run. Never part of the default sessions or CI: each
    release downloads the package index's build of torch (several GB on Linux).
    Arguments go to `torchclaims sweep` (--series, --versions, --dry-run, --torch-index, --work-dir).
    """
    session.install("-e", ".", *CONSTRAINTS)
    session.run("torchclaims", "sweep", *session.posargs)


XLA_REQUIREMENTS = ["torch==2.9.0", "torch_xla==2.9.0"]


@nox.session(default=False)
def xla(session: nox.Session) -> None:
    """Verify claims on torch_xla 2.9.0 (XLA on the CPU); arguments go to `torchclaims verify`.

    Writes into _build/results unless --output says otherwise (the accelerators
    workflow names its own folder). The sweep's torch_xla releases, merged into
    results/, are `nox -s sweep -- --series torch_xla`.
    """
    session.install(*XLA_REQUIREMENTS, *CONSTRAINTS)
    session.install("-e", ".[claims]", *XLA_REQUIREMENTS, *CONSTRAINTS)  # pinned again so pip keeps torch 2.9.0
    # The coverage sweeps run every operator x dtype and every architecture:
    # minutes each on XLA, so the per-claim time limit is raised for them.
    session.run(
        "torchclaims",
        "verify",
        "--backend",
        "xla",
        "--records-dir",
        "_build/records-xla",
        "--timeout",
        "2400",
        *session.posargs,
        env={"PJRT_DEVICE": "CPU", "TORCHCLAIMS_BACKEND": "xla"},
        success_codes=[0, 1],  # 1: a claim errored; its record says why
    )


TPU_REQUIREMENTS = ["torch==2.13.0", "torch-tpu==0.2.0"]  # torch-tpu 0.2.0 accepts torch 2.11-2.15
# What the package itself decides on a host without a TPU (verified there on the cpu backend).
TPU_PACKAGE_CLAIMS = [
    "torchtpu-package-without-tpu",
    "backend-autoload",
    "privateuse1-named-device",
    "hf-device-strings",
    "backends-use-privateuse1",
    "torch-accelerator-agnostic",
    "torchtpu-device-string",
    "torchtpu-dist-backend",
    "memory-apis-portable",
]
TPU_PACKAGE_LABEL = (
    "vendor package, no TPU: torch-tpu {version} with libtpu {libtpu} installed on a host without a TPU, "
    "run on the cpu backend (evidence about the package, not about TPU hardware)"
)


@nox.session(default=False)
def tpu(session: nox.Session) -> None:
    """TorchTPU's real package (torch-tpu and libtpu from PyPI): the tpu descriptor's tests, then verify.

    On a TPU host every claim runs on tpu; elsewhere the claims the package decides without a
    TPU run on the cpu backend with torch_tpu loaded, into a results file labelled 'vendor
    package, no TPU'. Arguments go to torchclaims verify.
    """
    session.install(*TPU_REQUIREMENTS, *CONSTRAINTS)
    session.install("-e", ".[claims,test]", *TPU_REQUIREMENTS, *CONSTRAINTS)
    session.run(
        "pytest",
        "-q",
        "tests/test_torchtpu_package.py",
        "tests/test_vendor_standins.py",
        env={"TORCHCLAIMS_REQUIRE_VENDOR": "torch_tpu"},
    )
    probe = (
        "import torch; a = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None; "
        "print(getattr(a, 'type', None))"
    )
    if session.run("python", "-c", probe, silent=True).strip().splitlines()[-1] == "tpu":
        session.run(
            "torchclaims",
            "verify",
            "--backend",
            "tpu",
            *session.posargs,
            env={"TORCHCLAIMS_BACKEND": "tpu"},
            success_codes=[0, 1],
        )
        return
    if "--label" in session.posargs:
        session.error(
            "without a TPU the label is fixed (vendor package, no TPU); pass options such as --output, no claim ids"
        )
    versions = session.run(
        "python",
        "-c",
        "import importlib.metadata as m; print(m.version('torch-tpu'), m.version('libtpu'))",
        silent=True,
    )
    version, libtpu = versions.strip().splitlines()[-1].split()
    session.run(
        "torchclaims",
        "verify",
        "--backend",
        "cpu",
        *session.posargs,
        "--label",
        TPU_PACKAGE_LABEL.format(version=version, libtpu=libtpu),
        *TPU_PACKAGE_CLAIMS,
        env={"TORCHCLAIMS_BACKEND": "cpu"},
        success_codes=[0, 1],
    )


@nox.session(default=False, python=False)  # the shared environment (Shared)
def benchmark(session: nox.Session) -> None:
    """Time the build against plain sphinx-gallery on the same scripts (benchmarks/build_speed.py).

    Takes about 10 minutes on 2 cores; arguments after -- go to the script (--help lists them).
    """
    session = Shared(session)
    opts = options(session, add_help=False)  # --help is the script's
    install(session, opts.torch, SHARED_EXTRAS, opts.torch_index)
    session.run("python", "benchmarks/build_speed.py", *opts.rest)


@nox.session(default=False, python=False)
def clean(session: nox.Session) -> None:
    """Remove generated files (site, gallery and upgrade pages, records of this machine, the sweep's folder)."""
    session.run(
        "rm", "-rf", "_build", "docs/auto_gallery", "docs/upgrades", ".sweep", "sg_execution_times.rst", external=True
    )
