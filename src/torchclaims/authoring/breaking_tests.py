"""The breaking-test inventory: every check of every executable claim is refuted by a test, or says why not.

A check is covered by a test function in ``tests/test_breaking_checks.py`` that
runs the claim's script (``run_gallery("<script stem>", ...)``, or a helper of the
file that passes its first argument on to ``run_gallery`` or runs a script of its own) and asserts that
check refuted for its stated reason, ``refuted(record, "<words naming the check>",
"<words of its failure>")``: the reason must be given, or a check refuted for
another one would count. A check no stand-in here can break carries its own reason
in the record, ``[no_breaking_test]`` with the words naming it as the key. The
words follow :mod:`.check_names`, and must name one check of the script only.
Checks with neither are listed in the test file's ``LEFT`` (claim id, check as
:attr:`CheckName.text` writes it), a list that may only shrink. The test suite and
``torchclaims lint`` both ask this module, so the quick path and CI judge by the
same rule.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from .. import limits
from ..claims import Claim, ClaimSet
from ..errors import InvalidFileError, Problem
from ..fileio import decode_utf8, read_bytes
from ..project import IN_GALLERY
from .check_names import CheckName, checks_opened_in, the_one_named

BREAKING_TESTS = "tests/test_breaking_checks.py"  # relative to the project's root
RUNNER = "run_gallery"  # the helper a breaking test runs a script through (tests/breaking.py)
ASSERTION = "refuted"  # refuted(record, words, because) in tests/breaking.py
ALLOWED = "LEFT"  # the test file's set of (claim id, check text) with neither a test nor a reason


@dataclass(frozen=True)
class Refutation:
    """A test function's assertion that a check of ``script`` is refuted, ``because`` in its detail."""

    script: str
    words: str
    because: str


@dataclass(frozen=True)
class BreakingTests:
    refutations: frozenset[Refutation]
    left: frozenset[tuple[str, str]]


def read_breaking_tests(path: Path) -> BreakingTests:
    """Every refutation the test file asserts and its LEFT, read from the syntax tree (words given as a
    string, or as a name bound to one in the module or the function)."""
    text = decode_utf8(path, read_bytes(path, limits.LIMITS.script_bytes, "breaking tests"))
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise InvalidFileError([Problem(path, "", f"does not parse: {exc.msg}", exc.lineno)]) from None
    module_strings = _strings_bound(tree.body)
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    strings = {f.name: {**module_strings, **_strings_bound(ast.walk(f))} for f in functions}
    calls = {
        f.name: [node for node in ast.walk(f) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
        for f in functions
    }
    runs = _scripts_run(functions, calls, strings)
    refutations = set()
    for function in functions:
        for call in (c for c in calls[function.name] if c.func.id == ASSERTION):
            given = [*call.args[1:3], *(k.value for k in call.keywords if k.arg == "because")]
            words, because = (_string(arg, strings[function.name]) for arg in (given + [None, None])[:2])
            if words and because:
                refutations.update(Refutation(script, words, because) for script in runs[function.name])
    return BreakingTests(frozenset(refutations), frozenset(_left(tree, path)))


def _scripts_run(functions: list[ast.FunctionDef], calls: dict, strings: dict) -> dict[str, set[str]]:
    """The scripts each module-level function runs: the string it gives run_gallery, or a helper that passes its own
    first argument on to run_gallery (a runner), or the scripts of a helper it calls that runs its own."""
    runners, runs = {RUNNER}, {f.name: set() for f in functions}
    changed = True
    while changed:  # helpers call helpers: until nothing more is found
        changed = False
        for function in functions:
            first = function.args.args[0].arg if function.args.args else None
            for call in calls[function.name]:
                found = set(runs.get(call.func.id, ()))
                if call.func.id in runners and call.args:
                    script = call.args[0]
                    if isinstance(script, ast.Name) and script.id == first and function.name not in runners:
                        runners.add(function.name)
                        changed = True
                    found |= {_string(script, strings[function.name])} - {None}
                if not found <= runs[function.name]:
                    runs[function.name] |= found
                    changed = True
    return runs


def _strings_bound(nodes) -> dict[str, str]:
    return {
        node.targets[0].id: node.value.value
        for node in nodes
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _string(node: ast.expr | None, strings: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return strings.get(node.id) if isinstance(node, ast.Name) else None


def _left(tree: ast.Module, path: Path) -> set[tuple[str, str]]:
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and ALLOWED in {getattr(t, "id", "") for t in _targets(node)}:
            try:
                left = ast.literal_eval(node.value)
            except ValueError:
                left = None
            if not (isinstance(left, set) and all(_is_pair_of_strings(item) for item in left)):
                problem = f"{ALLOWED} must be a set of (claim id, check) pairs of strings written out"
                raise InvalidFileError([Problem(path, ALLOWED, problem, node.lineno)])
            return left
    return set()


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target] if node.value is not None else []


def _is_pair_of_strings(item) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and all(isinstance(s, str) for s in item)


@dataclass
class ClaimChecks:
    """One claim's checks, and which of them a test refutes or its record excuses."""

    claim: Claim
    checks: list[CheckName]
    covered: set[CheckName] = field(default_factory=set)
    explained: set[CheckName] = field(default_factory=set)

    @property
    def bare(self) -> list[CheckName]:
        """Checks with neither a breaking test nor a reason."""
        return [c for c in self.checks if c not in self.covered and c not in self.explained]


def claim_checks(claim: Claim, checks: list[CheckName], refutations: frozenset[Refutation]) -> ClaimChecks:
    stem = claim.script.removeprefix(IN_GALLERY).removesuffix(".py")
    found = ClaimChecks(claim, checks)
    found.covered = {the_one_named(checks, r.words) for r in refutations if r.script == stem} - {None}
    found.explained = {the_one_named(checks, words) for words in claim.no_breaking_test} - {None}
    return found


@dataclass
class Inventory:
    claims: list[ClaimChecks]
    left: frozenset[tuple[str, str]]
    problems: list[Problem]

    def count(self, what: str) -> int:
        """How many checks there are (``checks``), or how many are ``covered``, ``explained`` or ``bare``."""
        return sum(len(getattr(c, what)) for c in self.claims)


def take_inventory(root: Path, claims: ClaimSet) -> Inventory:
    """The checks of every executable claim, what covers each, and one problem per thing the inventory test
    would reject: a check with neither test nor reason that LEFT does not list, a LEFT entry no longer needed,
    a reason whose words name no check or several or a check a test refutes, a script or test file that cannot
    be read."""
    path = root / BREAKING_TESTS
    if not path.is_file():
        return Inventory([], frozenset(), [Problem(Path(BREAKING_TESTS), "", "missing: the inventory cannot be taken")])
    try:
        tests = read_breaking_tests(path)
    except InvalidFileError as exc:
        return Inventory([], frozenset(), exc.problems)
    inventory = Inventory([], tests.left, [])
    for claim in claims.executable():
        record = claims.paths[claim.id]
        if not (root / claim.script).is_file():
            inventory.problems.append(Problem(record, "no_breaking_test", f"no {claim.script}: no checks to list"))
            continue
        try:
            checks = checks_opened_in(root / claim.script)
        except InvalidFileError as exc:
            inventory.problems += exc.problems
            continue
        if not checks:
            inventory.problems.append(Problem(record, "script", f"{claim.script} opens no check: nothing can fail"))
        found = claim_checks(claim, checks, tests.refutations)
        inventory.claims.append(found)
        inventory.problems += [
            Problem(record, f"no_breaking_test.{words}", "these words name no check of the script, or several")
            for words in claim.no_breaking_test
            if the_one_named(checks, words) is None
        ] + [
            Problem(record, f"no_breaking_test.{words}", "a test refutes this check: its reason must go")
            for words in claim.no_breaking_test
            if the_one_named(checks, words) in found.covered
        ]
        inventory.problems += [
            Problem(
                record,
                "no_breaking_test",
                f"check {check.text!r} ({claim.script}:{check.line}): no test in {BREAKING_TESTS} runs the script "
                "and asserts it refuted for its stated reason (refuted(record, words, because)); add one, or give "
                "its reason under [no_breaking_test] keyed by words naming it",
            )
            for check in found.bare
            if (claim.id, check.text) not in tests.left
        ]
    still_bare = {(c.claim.id, check.text) for c in inventory.claims for check in c.bare}
    inventory.problems += [
        Problem(path, ALLOWED, f"{claim_id}: {text!r} is covered, explained or gone: take it off {ALLOWED}")
        for claim_id, text in sorted(tests.left - still_bare)
    ]
    return inventory


def inventory_problems(root: Path, claims: ClaimSet) -> list[Problem]:
    return take_inventory(root, claims).problems
