"""Sessions: docs (the site), tests, lint, verify (no site), xla (second backend),
refresh (regenerate the committed results files), sweep (every claim on every
release of sweep/releases.toml), benchmark (build speed).

torch is pinned explicitly because an open requirement pulls a multi-GB CUDA
build; override the pin to rebuild after an update, and name the CPU builds'
index to download the CPU build instead of the package index's default:

    nox -s docs -- --torch "torch==2.15.0"
    nox -s docs -- --torch-index cpu
    nox -s docs -- --backend auto

Every install holds the packages claim scripts import at sweep/constraints.txt,
so a build and the sweep's run of the same release are the same configuration.
"""

import argparse
import json
import os
import shutil
from pathlib import Path

import nox

nox.needs_version = ">=2024.3.2"
nox.options.default_venv_backend = "venv"  # pip sees the local torch wheel; uv does not
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests", "docs"]

TORCH = os.environ.get("TORCHCLAIMS_TORCH", "torch==2.13.0")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # the CPU builds of torch: about 200 MB instead of several GB
CONSTRAINTS = ("-c", "sweep/constraints.txt")
SWEEP_LABEL = "sweep:"  # how the release sweep labels its results files (torchclaims.release_sweep)
XLA_REQUIREMENTS = ["torch==2.9.0", "torch_xla==2.9.0"]


def options(session: nox.Session, add_help: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"nox -s {session.name} --", add_help=add_help)
    parser.add_argument("--backend", default=os.environ.get("TORCHCLAIMS_BACKEND", "cpu"))
    parser.add_argument("--torch", default=TORCH, help="pip requirement for torch (default %(default)s)")
    parser.add_argument("--force", action="store_true", help="re-run every claim")
    parser.add_argument(
        "--torch-index", default=os.environ.get("TORCHCLAIMS_TORCH_INDEX", ""),
        help="extra package index for torch; 'cpu' names the CPU builds (default: the configured index only)",
    )
    known, rest = parser.parse_known_args(session.posargs)
    known.rest = rest
    return known


def install(session: nox.Session, torch_requirement: str, extras: str, torch_index: str = "") -> None:
    index = CPU_INDEX if torch_index == "cpu" else torch_index
    session.install(torch_requirement, *CONSTRAINTS, *(["--extra-index-url", index] if index else []))
    session.install("-e", f".[{extras}]", torch_requirement, *CONSTRAINTS)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site, verifying every claim on the backend; publish it into _build/html.

    Sphinx works in _build/sphinx (pages) and _build/doctrees; the extension copies
    the pages to _build/html without doctrees, sources or build information.
    """
    opts = options(session)
    install(session, opts.torch, "docs,claims", opts.torch_index)
    env = {"TORCHCLAIMS_BACKEND": opts.backend, "TORCHCLAIMS_FORCE": "1" if opts.force else "0", "TORCHCLAIMS_PUBLISH_DIR": "_build/html"}
    session.run("sphinx-build", "-b", "html", "-d", "_build/doctrees", ".", "_build/sphinx", *opts.rest, env=env)
    session.log("site: _build/html/index.html (open it in a browser, or serve the folder: python -m http.server -d _build/html)")


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (includes every real claim on the CPU)."""
    opts = options(session)
    install(session, opts.torch, "docs,claims,test", opts.torch_index)
    session.run("pytest", *opts.rest)


@nox.session
def lint(session: nox.Session) -> None:
    """Check claim records and scripts, as a reviewer would."""
    session.install("-e", ".")
    session.run("torchclaims", "lint")


@nox.session
def verify(session: nox.Session) -> None:
    """Verify claims without building the site; writes a results file."""
    opts = options(session)
    install(session, opts.torch, "claims", opts.torch_index)
    session.run("torchclaims", "verify", "--backend", opts.backend, *opts.rest, env={"TORCHCLAIMS_BACKEND": opts.backend})


XLA_LABEL = "torch_xla on the CPU (PJRT_DEVICE=CPU)"


def verify_xla(session: nox.Session, label: str, *args: str) -> None:
    session.install(*XLA_REQUIREMENTS, *CONSTRAINTS)
    session.install("-e", ".[claims]", *XLA_REQUIREMENTS, *CONSTRAINTS)  # pinned again so pip keeps torch 2.9.0
    # The coverage sweeps run every operator x dtype and every architecture:
    # minutes each on XLA, so the per-claim time limit is raised for them.
    session.run(
        "torchclaims", "verify", "--backend", "xla", "--output", "results", "--records-dir", "_build/records-xla",
        "--label", label, "--timeout", "2400", *args,
        env={"PJRT_DEVICE": "CPU", "TORCHCLAIMS_BACKEND": "xla"},
        success_codes=[0, 1],  # 1: a claim errored; its record says why
    )


@nox.session(default=False)
def xla(session: nox.Session) -> None:
    """Verify every claim on torch_xla (XLA on the CPU) into results/."""
    verify_xla(session, XLA_LABEL, *session.posargs)


def committed_results() -> dict[str, list[Path]]:
    """'cpu-2.14.1' or 'xla' -> the committed results files this machine can make again.

    Read without the package (nox loads this file before any venv exists); a
    file that does not parse is left to the site build, which reports it. The
    release sweep's own files are left to `nox -s sweep`, which reruns only the
    releases whose file is outdated, one environment at a time.
    """
    found: dict[str, list[Path]] = {}
    for path in sorted(Path(__file__).parent.glob("results/*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            env, label = data["environment"], str(data.get("label", ""))
            backend, torch = env["backend"], env["torch"].split("+")[0]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if label.startswith(SWEEP_LABEL):
            continue
        if backend in ("cpu", "xla"):
            found.setdefault(f"cpu-{torch}" if backend == "cpu" else "xla", []).append(path)
    return found


@nox.session(default=False)
@nox.parametrize("target", sorted(committed_results()))
def refresh(session: nox.Session, target: str) -> None:
    """Regenerate the committed results files: cpu with each committed torch version, xla with torch_xla.

    Each new file replaces the committed ones of its target (and their figures),
    so no results file made by an older version of a script lands.
    """
    old = committed_results()[target]
    label = json.loads(old[-1].read_text(encoding="utf-8")).get("label", "")
    before = set(Path("results").glob("*.json"))
    if target == "xla":
        verify_xla(session, label or XLA_LABEL)
    else:
        requirement = f"torch=={target.removeprefix('cpu-')}"
        install(session, requirement, "claims")
        session.run(
            "torchclaims", "verify", "--backend", "cpu", "--output", "results", "--records-dir", f"_build/records-{target}",
            "--label", label, env={"TORCHCLAIMS_BACKEND": "cpu"}, success_codes=[0, 1],
        )
    if not set(Path("results").glob("*.json")) - before:
        session.error(f"no new results file was written for {target}; the committed ones are kept")
    for path in old:
        if path.exists():
            path.unlink()
            shutil.rmtree(path.parent / "figures" / path.stem, ignore_errors=True)
            session.log(f"replaced {path}")


@nox.session(default=False)
def sweep(session: nox.Session) -> None:
    """Every claim on every release of sweep/releases.toml, one environment at a time, into results/.

    Never part of the default sessions or CI: each release other than the local
    CPU wheel downloads a CUDA build of torch (several GB). Arguments go to
    `torchclaims sweep` (--series, --versions, --dry-run, --torch-index, --work-dir).
    """
    session.install("-e", ".", *CONSTRAINTS)
    session.run("torchclaims", "sweep", *session.posargs)


@nox.session(default=False)
def benchmark(session: nox.Session) -> None:
    """Time the build against plain sphinx-gallery on the same scripts (benchmarks/build_speed.py).

    Takes about 10 minutes on 2 cores; arguments after -- go to the script (--help lists them).
    """
    opts = options(session, add_help=False)  # --help is the script's
    install(session, opts.torch, "docs,claims", opts.torch_index)
    session.run("python", "benchmarks/build_speed.py", *opts.rest)


@nox.session(default=False, python=False)
def clean(session: nox.Session) -> None:
    """Remove generated files (site, gallery and upgrade pages, records of this machine, the sweep's folder)."""
    session.run("rm", "-rf", "_build", "docs/auto_gallery", "docs/upgrades", ".sweep", "sg_execution_times.rst", external=True)
