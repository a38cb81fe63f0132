"""What several commands share: the project root they are given, the load
checks of results files for that project, and how problems are printed."""

from __future__ import annotations

import sys
from pathlib import Path

from ..claims import load_claims
from ..errors import Problem, UsageError
from ..evidence.admission import Admission
from ..project import Folders


def project_root(args) -> Path:
    root = Path(args.root).resolve()
    if not root.is_dir():
        raise UsageError(f"--root {args.root}: no such directory")
    return root


def admission_for(root: Path) -> Admission:
    """The load checks for this project; without a claims/ folder, the ones that need none."""
    claims = Folders(root).claims
    if not claims.is_dir():
        print(f"note: no claims/ in {root}: claim ids and script versions are not checked", file=sys.stderr)
        return Admission()
    return Admission.for_project(root, load_claims(claims).claims)


def report(problems: list[Problem], verb: str = "rejected") -> None:
    for problem in problems:
        print(f"{verb}: {problem}", file=sys.stderr)
