"""Sessions: docs (the site), tests, lint, verify (no site), xla (second backend).

torch is pinned explicitly because an open requirement pulls a multi-GB CUDA
build; override the pin to rebuild after an update:

    nox -s docs -- --torch "torch==2.14.1"
    nox -s docs -- --backend auto
"""

import argparse
import os

import nox

nox.needs_version = ">=2024.3.2"
nox.options.default_venv_backend = "venv"  # pip sees the local torch wheel; uv does not
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests", "docs"]

TORCH = os.environ.get("TORCHCLAIMS_TORCH", "torch==2.13.0")
XLA_REQUIREMENTS = ["torch==2.9.0", "torch_xla==2.9.0"]


def options(session: nox.Session) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"nox -s {session.name} --")
    parser.add_argument("--backend", default=os.environ.get("TORCHCLAIMS_BACKEND", "cpu"))
    parser.add_argument("--torch", default=TORCH, help="pip requirement for torch (default %(default)s)")
    parser.add_argument("--force", action="store_true", help="re-run every claim")
    known, rest = parser.parse_known_args(session.posargs)
    known.rest = rest
    return known


def install(session: nox.Session, torch_requirement: str, extras: str) -> None:
    session.install(torch_requirement)
    session.install("-e", f".[{extras}]", torch_requirement)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site into _build/html, verifying every claim on the backend."""
    opts = options(session)
    install(session, opts.torch, "docs,claims")
    env = {"TORCHCLAIMS_BACKEND": opts.backend, "TORCHCLAIMS_FORCE": "1" if opts.force else "0"}
    session.run("sphinx-build", "-b", "html", ".", "_build/html", *opts.rest, env=env)
    session.log("site: _build/html/index.html")


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (includes every real claim on the CPU)."""
    opts = options(session)
    install(session, opts.torch, "docs,claims,test")
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
    install(session, opts.torch, "claims")
    session.run("torchclaims", "verify", "--backend", opts.backend, *opts.rest, env={"TORCHCLAIMS_BACKEND": opts.backend})


@nox.session(default=False)
def xla(session: nox.Session) -> None:
    """Verify every claim on torch_xla (XLA on the CPU) into results/."""
    session.install(*XLA_REQUIREMENTS)
    session.install("-e", ".[claims]", *XLA_REQUIREMENTS)  # pinned again so pip keeps torch 2.9.0
    session.run(
        "torchclaims", "verify", "--backend", "xla", "--output", "results", "--records-dir", "_build/records-xla",
        "--label", "torch_xla on the CPU (PJRT_DEVICE=CPU)", *session.posargs,
        env={"PJRT_DEVICE": "CPU", "TORCHCLAIMS_BACKEND": "xla"},
    )


@nox.session(default=False, python=False)
def clean(session: nox.Session) -> None:
    """Remove generated files (site, gallery pages, records of this machine)."""
    session.run("rm", "-rf", "_build", "docs/auto_gallery", "sg_execution_times.rst", external=True)
