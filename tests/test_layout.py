"""The engine's map: a few top-level modules, and imports that only point down the declared order."""

from __future__ import annotations

import ast
from pathlib import Path

import torchclaims

PACKAGE = Path(torchclaims.__file__).resolve().parent
# Bottom to top, as torchclaims/__init__.py lists them: a unit may import only units before it.
ORDER = [
    "errors",
    "text_safety",
    "limits",
    "fileio",
    "config",
    "project",
    "caches",
    "backends",
    "topics",
    "claims",
    "vendor_word",
    "site_addresses",
    "evidence",
    "history",
    "run",
    "verify",
    "coverage",
    "authoring",
    "check",
    "sphinxext",
    "cli",
    "__main__",
]
MAX_TOP_LEVEL_MODULES = 15


def unit_of(path: Path, package: Path = PACKAGE) -> str:
    return path.relative_to(package).with_suffix("").parts[0]


def imported_units(path: Path, root: Path) -> set[tuple[str, int]]:
    """(unit, line) for every torchclaims unit the file imports, relative or absolute."""
    package = list(path.relative_to(root).parent.parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            target = package[: len(package) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            names = [target[0]] if target else [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torchclaims":
            parts = node.module.split(".")[1:]
            names = parts[:1] or [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1] for a in node.names if a.name.startswith("torchclaims.")]
        else:
            continue
        found |= {(name, node.lineno) for name in names if name in ORDER}
    return found


def layering_violations(package: Path = PACKAGE) -> list[str]:
    problems = []
    for path in sorted(package.rglob("*.py")):
        if path == package / "__init__.py":
            continue
        own = unit_of(path, package)
        for unit, line in sorted(imported_units(path, package)):
            if unit != own and ORDER.index(unit) > ORDER.index(own):
                problems.append(f"{path.relative_to(package)}:{line} imports {unit}, which comes after {own}")
    return problems


def test_every_unit_of_the_package_has_a_place_in_the_order():
    units = {unit_of(p) for p in PACKAGE.rglob("*.py")} - {"__init__"}
    assert units == set(ORDER)


def test_imports_only_point_down_the_order():
    assert layering_violations() == []


def test_an_import_up_the_order_is_reported(tmp_path):
    fake = tmp_path / "torchclaims"
    (fake / "evidence").mkdir(parents=True)
    (fake / "evidence" / "records.py").write_text("from ..run import runner\nfrom .. import errors\n")
    assert layering_violations(fake) == ["evidence/records.py:1 imports run, which comes after evidence"]


def test_the_top_level_keeps_few_modules():
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules


# The extension's folders: what a page author writes, what renders records, the build's plumbing.
EXTENSION_FOLDERS = ("directives", "views", "build")


def extension_problems(extension: Path = PACKAGE / "sphinxext") -> list[str]:
    """Modules of the extension outside its folders, and imports of a directive module from anywhere
    but ``setup``: a directive is an entry point, and what another part needs of it belongs in views/
    or build/."""
    problems = []
    for path in sorted(extension.rglob("*.py")):
        rel = path.relative_to(extension)
        if rel.parts[0] not in EXTENSION_FOLDERS and rel != Path("__init__.py"):
            problems.append(f"{rel.as_posix()} is in none of {', '.join(EXTENSION_FOLDERS)}")
        if rel.parts[0] == "directives" or rel == Path("__init__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level and "directives" in (node.module or "").split("."):
                problems.append(f"{rel.as_posix()}:{node.lineno} imports a directive module")
    return problems


def test_the_extension_keeps_directives_views_and_build_apart():
    assert extension_problems() == []


def test_a_module_outside_the_folders_and_a_view_importing_a_directive_are_reported(tmp_path):
    for folder in EXTENSION_FOLDERS:
        (tmp_path / folder).mkdir()
    (tmp_path / "__init__.py").write_text("from .directives.claim import setup_claim\n")
    (tmp_path / "directives" / "claim.py").write_text("from ..views.markup import badge\n")
    (tmp_path / "views" / "matrix.py").write_text("from ..directives.claim import claim_section\n")
    (tmp_path / "grid.py").write_text("")
    assert extension_problems(tmp_path) == [
        "grid.py is in none of directives, views, build",
        "views/matrix.py:1 imports a directive module",
    ]
