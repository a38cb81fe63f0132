"""``torchclaims merge``: check results files and add them to the committed ones."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import config
from ..errors import InvalidFileError
from ..project import RESULTS
from . import ExitCode
from .common import admission_for, project_root, report


def register(add) -> None:
    merge = add("merge", "check results files and add them to results/")
    merge.add_argument("files", nargs="+")
    merge.add_argument("--into", default=RESULTS)
    merge.add_argument(
        "--verify-attestation",
        metavar="OWNER/REPO",
        help="require a GitHub artifact attestation from that repository's accelerator workflow (needs gh)",
    )
    merge.set_defaults(run=run)


def run(args) -> ExitCode:
    from ..evidence.output import merge_file

    root = project_root(args)
    target = config.directory(args.into, "--into")
    admission = admission_for(root)
    status = ExitCode.OK
    for name in args.files:
        try:
            print(merge_file(Path(name), target, admission, args.verify_attestation))
        except InvalidFileError as exc:
            report(exc.problems)
            print(f"rejected: {name} was not merged ({len(exc.problems)} problem(s) above)", file=sys.stderr)
            status = ExitCode.INVALID_INPUT
    return status
