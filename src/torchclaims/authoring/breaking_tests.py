"""The breaking-test inventory: every executable claim is run against a broken stand-in, or says why not.

A breaking test calls ``run_gallery("<script stem>", ...)`` in
``tests/test_breaking_checks.py``; a claim without one gives its reason in the
record's ``no_breaking_test``. The test suite and ``torchclaims lint`` both ask
this module, so the quick path and CI judge by the same rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .. import limits
from ..claims import Claim, ClaimSet
from ..errors import InvalidFileError, Problem
from ..fileio import decode_utf8, read_bytes
from ..project import IN_GALLERY

BREAKING_TESTS = "tests/test_breaking_checks.py"  # relative to the project's root
RUNNER = "run_gallery"  # the helper a breaking test runs a script through (tests/breaking.py)


def scripts_broken_in(path: Path) -> set[str]:
    """The gallery scripts (stems) the file runs against a broken stand-in: the first argument of each
    run_gallery call, read from the syntax tree, so the way a call is laid out does not matter."""
    text = decode_utf8(path, read_bytes(path, limits.LIMITS.script_bytes, "breaking tests"))
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise InvalidFileError([Problem(path, "", f"does not parse: {exc.msg}", exc.lineno)]) from None
    return {
        call.args[0].value
        for call in ast.walk(tree)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == RUNNER
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    }


def broken(claims: list[Claim], scripts: set[str]) -> set[str]:
    """Ids of the claims whose script is among ``scripts``."""
    return {c.id for c in claims if c.script.removeprefix(IN_GALLERY).removesuffix(".py") in scripts}


def explained(claims: list[Claim]) -> set[str]:
    """Ids of the claims whose record says why they have no breaking test."""
    return {c.id for c in claims if c.no_breaking_test}


def unexplained(claims: list[Claim], scripts: set[str]) -> set[str]:
    """Ids of the executable claims with neither a breaking test nor a reason."""
    executable = [c for c in claims if c.executable]
    return {c.id for c in executable} - broken(executable, scripts) - explained(executable)


def inventory_problems(root: Path, claims: ClaimSet) -> list[Problem]:
    """One problem per executable claim the inventory test would reject, or one for an unreadable test file."""
    path = root / BREAKING_TESTS
    if not path.is_file():
        return [Problem(Path(BREAKING_TESTS), "", "missing: the breaking-test inventory cannot be checked")]
    try:
        scripts = scripts_broken_in(path)
    except InvalidFileError as exc:
        return exc.problems
    return [
        Problem(
            claims.paths[claim_id],
            "no_breaking_test",
            f"no test in {BREAKING_TESTS} runs this claim's script against a broken stand-in: add one "
            "(a run_gallery call whose stand-in makes the claim false), or say in no_breaking_test why none can",
        )
        for claim_id in sorted(unexplained(list(claims.claims.values()), scripts))
    ]
