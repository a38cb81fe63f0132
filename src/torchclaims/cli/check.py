"""``torchclaims check``: a team's own model against the measured tables and defect claims, and run on a backend."""

from __future__ import annotations

import sys

from ..project import CHECK_OUTPUT_DIR, DEFAULTS, PUBLISH_DIR
from ..site_addresses import PROJECT_FILE, SITE_URL_SETTING, SITE_URL_VAR
from . import ExitCode


def register(add) -> None:
    check = add(
        "check",
        "look a model's ATen operators up in the measured tables and defect claims; with --backend, run its step there",
    )
    check.add_argument(
        "target", help="path/to/file.py:function or package.module:function returning (model, inputs[, loss_fn])"
    )
    check.add_argument(
        "--target-backend",
        action="append",
        default=[],
        metavar="NAME",
        help="exit 1 only for known-wrong operators on this backend (repeatable; default: every backend with tables)",
    )
    check.add_argument(
        "--accept",
        action="append",
        default=[],
        metavar="ROW_OR_CLAIM",
        help="a coverage row or defect claim id to cite without judging (a defect the model cannot hit; repeatable)",
    )
    check.add_argument(
        "--backend",
        help="also run the step on this backend against the CPU (cpu, xla, cuda... or auto); "
        "exit 1 when parity fails, 4 when the run errors, 5 when the backend is not usable here",
    )
    check.add_argument("--rtol", type=float, default=1e-4, help="parity tolerance of the backend run (default 1e-4)")
    check.add_argument("--atol", type=float, default=1e-5, help="parity tolerance of the backend run (default 1e-5)")
    check.add_argument(
        "--timeout",
        type=float,
        default=DEFAULTS.check_timeout_s,
        help=f"seconds the backend run may take (default {DEFAULTS.check_timeout_s:g})",
    )
    check.add_argument(
        "--output",
        default=CHECK_OUTPUT_DIR,
        help=f"results file or folder of the backend run (default: {CHECK_OUTPUT_DIR}/)",
    )
    check.add_argument("--json", metavar="PATH", help="write the report as JSON ('-': standard output)")
    check.add_argument("--html", metavar="PATH", help="write the report as one self-contained HTML page")
    check.add_argument(
        "--sarif",
        metavar="PATH",
        help="write the risky findings as SARIF 2.1.0 (code scanning), one per operator x backend",
    )
    check.add_argument(
        "--site-url",
        default=None,
        help=f"address of the site the evidence links point to (default: ${SITE_URL_VAR}, else "
        f"{SITE_URL_SETTING} under [tool.torchclaims] in the project's {PROJECT_FILE}, else the site built in "
        f"{PUBLISH_DIR}, else paths from the site's root)",
    )
    check.set_defaults(run=run)


def run(args) -> ExitCode:
    from ..check.command import run_check
    from ..check.model_errors import ModelError
    from ..check.report import ERROR, FAILED, PASSED, UNVERIFIED

    codes = {
        FAILED: ExitCode.FAILED,
        ERROR: ExitCode.CHECK_ERROR,
        UNVERIFIED: ExitCode.CHECK_UNVERIFIED,
        PASSED: ExitCode.OK,
    }
    try:
        return codes[run_check(args)]
    except ModelError as exc:  # the model's own error: one line naming its frame, no evidence either way
        print(f"torchclaims: {exc}", file=sys.stderr)
        return ExitCode.CHECK_ERROR
