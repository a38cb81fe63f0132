"""The project uses sphinx-gallery through its public names only: no name
starting with an underscore is imported from it, read from it or patched into
it, so an upgrade within the pinned range cannot break a private contract."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "sphinx_gallery"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def private_uses(source: str) -> list[str]:
    """Each private sphinx-gallery name ``source`` imports, reads or sets."""
    tree = ast.parse(source)
    bound, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    found += [alias.name] if any(_private(part) for part in alias.name.split(".")) else []
                    bound.add(alias.asname or PACKAGE)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE:
            for alias in node.names:
                found += (
                    [f"{node.module}.{alias.name}"]
                    if any(_private(p) for p in [*node.module.split("."), alias.name])
                    else []
                )
                bound.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and _root(node) in bound:
            found.append(ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "delattr", "hasattr")
        ):
            target, name = (node.args + [None, None])[:2]
            if (
                target is not None
                and _root(target) in bound
                and isinstance(name, ast.Constant)
                and _private(str(name.value))
            ):
                found.append(f"{ast.unparse(target)}.{name.value}")
    return found


def test_the_project_uses_no_private_sphinx_gallery_name():
    files = [
        *sorted((ROOT / "src").rglob("*.py")),
        ROOT / "conf.py",
        ROOT / "noxfile.py",
        *sorted((ROOT / "benchmarks").rglob("*.py")),
    ]
    found = {
        str(path.relative_to(ROOT)): uses for path in files if (uses := private_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_each_way_of_reaching_a_private_name_is_found():
    source = """
from sphinx_gallery import gen_rst
from sphinx_gallery.gen_rst import _get_last_repr, generate_file_rst
import sphinx_gallery.gen_rst as rst
import sphinx_gallery._private
from sphinx_gallery._private import helper

class BoundedTee(gen_rst._LoggingTee):
    pass

gen_rst._get_last_repr = len
rst._exec_once(1)
setattr(gen_rst, "_LoggingTee", BoundedTee)
generate_file_rst.__name__, gen_rst.CODE_OUTPUT, gen_rst.__version__  # public
"""
    assert sorted(private_uses(source)) == [
        "gen_rst._LoggingTee",  # the base class
        "gen_rst._LoggingTee",  # setattr
        "gen_rst._get_last_repr",
        "rst._exec_once",
        "sphinx_gallery._private",
        "sphinx_gallery._private.helper",
        "sphinx_gallery.gen_rst._get_last_repr",
    ]


def test_names_of_other_packages_are_not_counted():
    assert (
        private_uses(
            "import multiprocessing\nmultiprocessing.resource_tracker._resource_tracker\n"
            "from sphinx.util import logging\nlogging._x\n"
        )
        == []
    )
