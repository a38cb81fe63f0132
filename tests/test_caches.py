"""Every cache has one home, torchclaims.caches: the paths the code uses are the places the docs list."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import torchclaims
from torchclaims.caches import CACHES, DOCTREES_DIR, Caches, store_memo
from torchclaims.project import RECORDS_DIR

PACKAGE = Path(torchclaims.__file__).resolve().parent
HOME = PACKAGE / "caches.py"


def pattern(cache) -> re.Pattern:
    """A cache's listed place as a pattern: each <part> is one path component."""
    parts = (re.escape(part) for part in re.split(r"<[^>]+>", cache.where))
    return re.compile("[^/]+".join(parts))


def paths(root: Path) -> dict[str, Path]:
    caches = Caches(root / RECORDS_DIR)
    return {
        "records": caches.record("cpu", "a-claim"),
        "probe": caches.probe("cpu"),
        "memo": caches.memo(),
        "compiler caches": caches.compiler("cpu", "a-claim"),
        "store memo": store_memo(root / DOCTREES_DIR),
    }


def test_each_cache_is_where_the_list_says():
    root = Path("/project")
    found = paths(root)
    assert sorted(found) == sorted(c.name for c in CACHES)
    for cache in CACHES:
        assert pattern(cache).fullmatch(found[cache.name].relative_to(root).as_posix()), cache.name


def test_a_cache_moved_without_its_listing_is_found():
    moved = Caches(Path("/project") / RECORDS_DIR).memo().with_name("content-memo.json").relative_to("/project")
    assert not pattern(next(c for c in CACHES if c.name == "memo")).fullmatch(moved.as_posix())


NAMES = ("memo.json", "compiler-caches", "probe-", "torchclaims-store.pickle")


def spelled_elsewhere(package: Path = PACKAGE, home: Path = HOME) -> list[str]:
    """Text constants outside the caches' home that spell one of their file or folder names."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path == home:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                found += [f"{path.relative_to(package)}:{node.lineno} {n}" for n in NAMES if n in node.value]
    return found


def test_no_other_module_names_a_cache_file():
    assert spelled_elsewhere() == []


def test_a_cache_file_named_elsewhere_is_found(tmp_path):
    (tmp_path / "execution.py").write_text('"""Keeps memo.json."""\nMEMO_FILE = "memo.json"\n')
    assert spelled_elsewhere(tmp_path, tmp_path / "caches.py") == ["execution.py:2 memo.json"]
