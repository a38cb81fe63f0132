"""The text of gallery scripts: markup that must not reach a page.

sphinx-gallery turns a script's docstring and its ``# %%`` comment blocks into
reStructuredText, so whatever markup they hold reaches the site: a ``raw``
directive (or a role or substitution built on it) puts the script author's
HTML and JavaScript on the page, ``include`` and ``:file:``/``:url:`` options
read other files into it, and a ``javascript:`` link runs script when clicked.
``torchclaims lint`` rejects such text; the site build shows a block holding
it as plain text (torchclaims.sphinxext.build.gallery_safety).
"""

from __future__ import annotations

import ast
import re

_FLAGS = re.IGNORECASE | re.MULTILINE
UNSAFE = (
    (
        re.compile(r"^[ \t]*\.\.[ \t]+(\|[^|\n]*\|[ \t]+)?raw[ \t]*::", _FLAGS),
        "a raw directive puts HTML or JavaScript on the page",
    ),
    (
        re.compile(r"^[ \t]*\.\.[ \t]+role[ \t]*::.*\([ \t]*raw[ \t]*\)", _FLAGS),
        "a role built on raw puts HTML on the page",
    ),
    (
        re.compile(r"^[ \t]*\.\.[ \t]+(\|[^|\n]*\|[ \t]+)?include[ \t]*::", _FLAGS),
        "include reads another file into the page",
    ),
    (re.compile(r"^[ \t]*:(file|url)[ \t]*:", _FLAGS), "a :file: or :url: option reads another file into the page"),
    (re.compile(r"\b(javascript|vbscript)[ \t]*:", _FLAGS), "a javascript: link runs script when a reader clicks it"),
    (re.compile(r"\bdata[ \t]*:[ \t]*text/html", _FLAGS), "a data:text/html link carries a page of its own"),
)
_SEPARATOR = re.compile(r"^#\s*%%|^#{20,}\s*$")


def unsafe_markup(text: str) -> list[tuple[int, str]]:
    """(line within ``text``, why) for each unsafe construct, first line 0."""
    found = []
    for pattern, why in UNSAFE:
        for match in pattern.finditer(text):
            found.append((text.count("\n", 0, match.start()), why))
    return sorted(found)


def text_blocks(source: str) -> list[tuple[int, str]]:
    """(first line, text) of the module docstring and of each comment block that
    follows a ``# %%`` separator: the parts sphinx-gallery renders as text."""
    blocks = []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = None
    if (
        tree
        and tree.body
        and isinstance(tree.body[0], ast.Expr)
        and isinstance(getattr(tree.body[0], "value", None), ast.Constant)
    ):
        if isinstance(tree.body[0].value.value, str):
            blocks.append((tree.body[0].lineno, tree.body[0].value.value))
    lines = source.splitlines()
    index = 0
    while index < len(lines):
        if _SEPARATOR.match(lines[index]):
            start = index + 1
            index = start
            while index < len(lines) and lines[index].lstrip().startswith("#"):
                index += 1
            blocks.append((start + 1, "\n".join(line.lstrip()[1:] for line in lines[start:index])))
        else:
            index += 1
    return blocks


def script_markup_problems(source: str) -> list[tuple[int, str]]:
    """(line in the script, why) for unsafe markup in any of its text blocks."""
    found = []
    for first_line, text in text_blocks(source):
        found.extend((first_line + offset, why) for offset, why in unsafe_markup(text))
    return found
