"""``torchclaims lint``: what CI's lint and inventory would report about the claims, before review."""

from __future__ import annotations

import sys

from . import ExitCode
from .common import project_root


def register(add) -> None:
    lint = add("lint", "check claim records and scripts, the breaking-test inventory and ruff, as CI does")
    lint.set_defaults(run=run)


def run(args) -> ExitCode:
    from ..authoring.ci_review import review

    found = review(project_root(args))
    for problem in found.problems:
        print(problem)
    if found.unchecked:  # could not check is never a pass
        print(f"lint: the scripts' formatting and line length were not checked: {found.unchecked}", file=sys.stderr)
    if found.problems:
        print(f"{len(found.problems)} problem(s) found", file=sys.stderr)
    if found.problems or found.unchecked:
        return ExitCode.FAILED
    print("lint: no problems found (records, scripts, breaking tests, ruff)")
    return ExitCode.OK
