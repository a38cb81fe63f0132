"""``torchclaims doctor``: which part of the sandbox keeps the device from working here."""

from __future__ import annotations

import os

from ..backends import BACKEND_ENV_VAR
from . import ExitCode


def register(add) -> None:
    doctor = add(
        "doctor",
        "run a device smoke outside the sandbox, inside it, and with each of its parts left out: which part "
        "keeps the device from working here",
    )
    doctor.add_argument("--backend", help=f"the backend to examine (default: ${BACKEND_ENV_VAR})")
    doctor.set_defaults(run=run)


def run(args) -> ExitCode:
    from ..run.doctor import run_doctor

    return ExitCode.OK if run_doctor(args.backend or os.environ.get(BACKEND_ENV_VAR)) else ExitCode.FAILED
