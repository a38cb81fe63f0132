"""Which private names of a package a source file uses, found by reading its syntax tree.

A name is private when one of its dotted parts starts with an underscore (and is
no ``__dunder__``). Each use is given as the full dotted name it reaches,
whatever the file bound it to: ``import torch._dynamo as dynamo; dynamo.reset``
is ``torch._dynamo.reset``. Found are imports, attribute chains from a name an
import bound, ``getattr``/``hasattr``/``setattr``/``delattr`` with a constant
name, dotted names written as a whole string (``import_module("torch._dynamo")``),
the code of strings a script hands to a child interpreter (``python -c``), and
attributes named in ``attributes`` read from any object (``value._base``, for
which no import says whose attribute it is).
"""

from __future__ import annotations

import ast
import re

DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")
ACCESSORS = ("getattr", "hasattr", "setattr", "delattr")


def private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def has_private_part(name: str) -> bool:
    return any(private(part) for part in name.split("."))


def _chain(node: ast.expr) -> tuple[str | None, list[str]]:
    """The name an attribute chain starts from, and its attributes in order."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id if isinstance(node, ast.Name) else None), parts[::-1]


def _child_program(text: str, package: str) -> bool:
    """Whether a string is a program importing the package (what ``python -c`` runs)."""
    if "\n" not in text or not re.search(rf"\b(import|from) .*\b{re.escape(package)}\b", text):
        return False
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _bindings(tree: ast.AST, package: str) -> tuple[dict[str, str], list[tuple[str, int]]]:
    """Each local name an import binds to the package (name -> dotted name), and what the imports name."""
    under = lambda name: name == package or name.startswith(package + ".")  # noqa: E731
    bound, named = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in (a for a in node.names if under(a.name)):
                named.append((alias.name, node.lineno))
                bound[alias.asname or package] = alias.name if alias.asname else package
        elif isinstance(node, ast.ImportFrom) and not node.level and under(node.module or ""):
            for alias in node.names:
                named.append((f"{node.module}.{alias.name}", node.lineno))
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound, named


def uses(source: str, package: str, attributes: dict[str, str] | None = None) -> list[tuple[str, int]]:
    """(dotted name, line) for each use of a private name of ``package`` in ``source``.
    ``attributes`` maps private attribute names to the dotted name a use of one stands for."""
    attributes = attributes or {}
    tree = ast.parse(source)
    bound, found = _bindings(tree, package)
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:  # the whole chain, once
            root, parts = _chain(node)
            if root in bound:
                found.append((".".join([bound[root], *parts]), node.lineno))
            elif node.attr in attributes and root not in ("self", "cls"):
                found.append((attributes[node.attr], node.lineno))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ACCESSORS:
            target, name = (node.args + [None, None])[:2]
            root, parts = _chain(target) if target is not None else (None, [])
            if root in bound and isinstance(name, ast.Constant) and isinstance(name.value, str):
                found.append((".".join([bound[root], *parts, name.value]), node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if DOTTED.fullmatch(text) and text.split(".")[0] == package:
                found.append((text, node.lineno))
            elif _child_program(text, package):
                found += [(name, node.lineno + line - 1) for name, line in uses(text, package, attributes)]
    return [(name, line) for name, line in found if has_private_part(name)]
