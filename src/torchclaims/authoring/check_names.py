"""The checks a claim script opens, read from its source, and which words name one of them.

A check is named where the script opens it, ``v.check(<name>)``: a string, or an
f-string whose replacement fields take their values only when the script runs
(a world size, the backend's compile backend, a loop's operator). The script
is read rather than its committed records because it is the one exact list: a
record holds one run's names, on one backend (five claims name their checks
after the backend's compile backend or device string), goes out of date when
the script changes, and does not exist yet for a new claim. A check written once
in a loop is one check here, whatever the loop runs over.

Words name a check when some value of its replacement fields makes a name
containing them (literal text must match, a replacement field matches any
text) and no other check of the script fits them with as many of their
characters in literal text: a field could hold any words whole, so the check
whose own text the words repeat most is the one they name. The breaking tests
name checks so (``refuted(record, words, because)``), and so do the reasons in
a record's ``no_breaking_test``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .. import limits
from ..errors import InvalidFileError, Problem
from ..fileio import decode_utf8, read_bytes

OPENER = "check"  # Verification.check: the one call that opens a check


@dataclass(frozen=True)
class CheckName:
    """A check's name as the script writes it: literal text and, for each replacement field, None."""

    parts: tuple[str | None, ...]
    line: int

    @property
    def text(self) -> str:
        """The name as a reader sees it, each replacement field as {…}."""
        return "".join("{…}" if part is None else part for part in self.parts)

    def literal_fit(self, words: str) -> int | None:
        """How many characters of ``words`` match the name's literal text, at best, where the words occur in
        the name for some value of its replacement fields; None where they occur in none."""
        tokens = [token for part in self.parts for token in ([None] if part is None else part)]
        wild = {i for i, token in enumerate(tokens) if token is None}
        best = dict.fromkeys(range(len(tokens) + 1), 0)  # the next token to match -> literal characters so far
        for char in words:
            for i in range(len(tokens)):  # a field may match no text at all (in order: fields may adjoin)
                if i in wild and i in best:
                    best[i + 1] = max(best.get(i + 1, 0), best[i])
            moved: dict[int, int] = {}
            for i, count in best.items():
                if i in wild:
                    moved[i] = max(moved.get(i, 0), count)
                elif i < len(tokens) and tokens[i] == char:
                    moved[i + 1] = max(moved.get(i + 1, 0), count + 1)
            if not moved:
                return None
            best = moved
        return max(best.values())


def checks_opened_in(path: Path) -> list[CheckName]:
    """Every ``<anything>.check(<name>)`` call of the script at ``path``, in the order written.

    Raises InvalidFileError naming the script and line where it does not parse, or where a check's
    name is neither a string nor an f-string (a name held in a variable cannot be read here).
    """
    text = decode_utf8(path, read_bytes(path, limits.LIMITS.script_bytes, "claim script"))
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise InvalidFileError([Problem(path, "", f"does not parse: {exc.msg}", exc.lineno)]) from None
    found, problems = [], []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == OPENER):
            continue
        names = _names(call.args[0]) if len(call.args) == 1 and not call.keywords else []
        if not names:
            problems.append(
                Problem(path, "", "a check's name must be written in the call, as a string or an f-string", call.lineno)
            )
        found.extend(CheckName(parts, call.lineno) for parts in names)
    if problems:
        raise InvalidFileError(problems)
    return sorted(found, key=lambda check: check.line)


def _names(node: ast.expr) -> list[tuple[str | None, ...]]:
    """The names a call's argument can take: one for a string or an f-string, each branch's for a conditional
    expression (two checks written in one call), none for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value,)]
    if isinstance(node, ast.JoinedStr):
        return [tuple(v.value if isinstance(v, ast.Constant) else None for v in node.values)]
    if isinstance(node, ast.IfExp):
        branches = [_names(node.body), _names(node.orelse)]
        return branches[0] + branches[1] if all(branches) else []
    return []


def the_one_named(checks: list[CheckName], words: str) -> CheckName | None:
    """The check ``words`` name, or None where they fit none, or several equally well."""
    fits = [(fit, check) for check in checks if (fit := check.literal_fit(words)) is not None]
    best = [check for fit, check in fits if fit == max(f for f, _ in fits)]
    return best[0] if len(best) == 1 else None
