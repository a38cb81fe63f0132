"""Shared ideas have one home: no module spells a project folder as a path, or a shared
default as a value, itself; they come from torchclaims.project.

What counts, precisely:
- a *folder literal* is a string constant that is one of ``project.FOLDER_NAMES`` or a path
  beneath one ('_build/check'), anywhere except where the text is a name or prose rather than a
  path: a docstring, a dictionary key, the key a ``get`` call looks up, the destination an
  ``add_argument`` call declares, the subtype a ``warn`` call gives, a ``description``, ``help``
  or ``desc`` keyword, and the parts of an f-string (messages shown to people);
- a *default literal* is a constant equal to a value of ``project.DEFAULTS`` (300, '300') that
  is bound to a setting of that table: the default of a parameter, keyword, field or variable
  whose name is the setting's ('timeout', 'DEFAULT_TIMEOUT', 'torchclaims_timeout', '--timeout'),
  an argument of a call that names the setting ('TORCHCLAIMS_TIMEOUT'), or a number in a text that
  names the setting's variable ('default: $TORCHCLAIMS_TIMEOUT or 300').
The scan covers the package (less torchclaims/project.py, their home) and conf.py.
"""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import torchclaims
from torchclaims import project

PACKAGE = Path(torchclaims.__file__).resolve().parent
ROOT = PACKAGE.parent.parent
HOME = PACKAGE / "project.py"


def setting_name(name: str) -> str:
    """'--timeout', 'DEFAULT_TIMEOUT', 'torchclaims_timeout', 'timeout_s' -> 'timeout'."""
    name = name.lstrip("-").replace("-", "_").lower()
    name = re.sub(r"^(torchclaims_|default_)", "", name)
    return re.sub(r"_(s|days)$", "", name)


SETTINGS = {setting_name(f.name) for f in fields(project.DEFAULTS)}
VALUES = {getattr(project.DEFAULTS, f.name) for f in fields(project.DEFAULTS)}
VARIABLES = {project.TIMEOUT_VAR}  # the environment variables that set them


def is_folder(text: str) -> bool:
    return any(text == name or text.startswith(name + "/") for name in project.FOLDER_NAMES)


def is_default(value) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return False
    if isinstance(value, str):
        return any(value == f"{v:g}" for v in VALUES)
    return value in VALUES


def names_setting(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and setting_name(node.value) in SETTINGS


def _exempt(tree: ast.AST) -> set[int]:
    """ids of the string constants that are names, not paths."""
    exempt = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            exempt.add(id(body[0].value))  # docstring
        if isinstance(node, ast.Dict):
            exempt |= {id(key) for key in node.keys if key is not None}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if called == "add_argument" and node.args:
                exempt.add(id(node.args[0]))
            if called == "warn" and len(node.args) > 1:
                exempt.add(id(node.args[1]))
            if called == "get" and node.args:
                exempt.add(id(node.args[0]))
            exempt |= {id(k.value) for k in node.keywords if k.arg in ("description", "help", "desc")}
        if isinstance(node, ast.JoinedStr):
            exempt |= {id(part) for part in node.values}
    return exempt


def _bound_defaults(tree: ast.AST) -> list[ast.AST]:
    """Constants given as the value of a setting (see the module's docstring)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arguments):
            params = node.posonlyargs + node.args
            pairs = list(zip(params[len(params) - len(node.defaults) :], node.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d is not None]
            found += [d for a, d in pairs if setting_name(a.arg) in SETTINGS]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found += [node.value] if setting_name(node.target.id) in SETTINGS else []
        elif isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            found += [node.value] if any(setting_name(t) in SETTINGS for t in targets) else []
        elif isinstance(node, ast.Call):
            found += [k.value for k in node.keywords if k.arg and setting_name(k.arg) in SETTINGS]
            strings = [a for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if any(names_setting(a) or a.value in VARIABLES for a in strings):
                found += node.args + [k.value for k in node.keywords]
    return found


def repeated_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt = _exempt(tree)
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in exempt:
            if is_folder(node.value):
                problems.append(f"{path.name}:{node.lineno}: the folder {node.value!r} (torchclaims.project)")
            elif any(var in node.value for var in VARIABLES) and any(
                re.search(rf"(?<![\w.]){v:g}(?![\w.])", node.value) for v in VALUES
            ):
                problems.append(f"{path.name}:{node.lineno}: a default in {node.value!r} (torchclaims.project)")
    for value in _bound_defaults(tree):
        if isinstance(value, ast.Constant) and is_default(value.value):
            problems.append(f"{path.name}:{value.lineno}: the default {value.value!r} (torchclaims.project)")
    return sorted(set(problems))


def scanned() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p != HOME] + [ROOT / "conf.py"]


def test_no_module_repeats_a_folder_or_a_default_of_the_project():
    problems = [problem for path in scanned() for problem in repeated_literals(path)]
    assert problems == []


def test_the_project_module_is_the_home_the_scan_finds_them_in():
    assert {p for p in repeated_literals(HOME) if "folder" in p}  # the folder names
    assert {p for p in repeated_literals(HOME) if "default" in p}  # the defaults table


def test_a_repeated_folder_or_default_is_found(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        "import os\n"
        "def run(root, timeout=300.0):\n"
        "    '''Writes to results/ (a docstring: a name, not a path).'''\n"
        "    out = root / 'results'\n"
        "    records = os.environ.get('RECORDS', '_build/records')\n"
        "    seconds = os.environ.get('TORCHCLAIMS_TIMEOUT', '300')\n"
        "    limit = dict(timeout=90)\n"
        "    help = 'seconds per claim (default: $TORCHCLAIMS_TIMEOUT or 300)'\n"
        "    other = {'results': 1}, clip(text, 300), start(start_timeout_s=300), environ.get('claims')\n"
        "    shown = f'gallery/{name}', Field(description='gallery/<name>.py'), warn('no', 'results')\n"
    )
    assert repeated_literals(module) == [
        "module.py:2: the default 300.0 (torchclaims.project)",
        "module.py:4: the folder 'results' (torchclaims.project)",
        "module.py:5: the folder '_build/records' (torchclaims.project)",
        "module.py:6: the default '300' (torchclaims.project)",
        "module.py:7: the default 90 (torchclaims.project)",
        "module.py:8: a default in 'seconds per claim (default: $TORCHCLAIMS_TIMEOUT or 300)' (torchclaims.project)",
    ]
