"""Cache keys: a claim re-runs when its script, the project code it imports, or
the environment fingerprint changed, and the build says which.

The key is computed before running, from a fingerprint taken in a child
process, and stored in the record. Comparing the stored record's inputs and
environment with the current ones yields the human-readable reason.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from .records import Environment, ResultRecord, Verdict

PACKAGE_DIR = Path(__file__).resolve().parent
# The harness every script runs inside; a change to it may change any result.
HARNESS = (PACKAGE_DIR / "_child.py", PACKAGE_DIR / "runner.py")


def _module_file(name: str, search_dirs: list[Path]) -> Path | None:
    """The file of a project module (torchclaims.* or a helper beside the script)."""
    parts = name.split(".")
    if parts[0] == "torchclaims":
        base = PACKAGE_DIR.joinpath(*parts[1:])
        candidates = [base.with_suffix(".py"), base / "__init__.py"]
    else:
        candidates = [d.joinpath(*parts).with_suffix(".py") for d in search_dirs]
    return next((c for c in candidates if c.is_file()), None)


def _imported_modules(path: Path) -> set[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level and path.is_relative_to(PACKAGE_DIR):
            package = ".".join(("torchclaims",) + path.parent.relative_to(PACKAGE_DIR).parts)
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = f"{base}.{node.module}" if node.module else base
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def script_inputs(script: Path, root: Path) -> dict[str, str]:
    """sha256 of the script and of every project file it imports, transitively."""
    search_dirs = [script.parent]
    seen: dict[Path, str] = {}
    queue = [script, *HARNESS]
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen[path] = hashlib.sha256(path.read_bytes()).hexdigest()
        for name in _imported_modules(path):
            module = _module_file(name, search_dirs)
            if module is not None and module not in seen:
                queue.append(module)
    return {_label(path, root): digest for path, digest in sorted(seen.items())}


def _label(path: Path, root: Path) -> str:
    if path.is_relative_to(PACKAGE_DIR):
        return "torchclaims/" + path.relative_to(PACKAGE_DIR).as_posix()
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def cache_key(inputs: dict[str, str], environment: Environment) -> str:
    payload = json.dumps({"inputs": inputs, "environment": environment.cache_identity()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class Staleness:
    """Why a claim must run again (empty ``reasons`` means its record is current)."""

    reasons: tuple[str, ...]

    @property
    def stale(self) -> bool:
        return bool(self.reasons)

    def __str__(self) -> str:
        return "; ".join(self.reasons) or "up to date"


def staleness(previous: ResultRecord | None, inputs: dict[str, str], environment: Environment, key: str) -> Staleness:
    """Compare the earlier record with what would run now."""
    if previous is None:
        return Staleness(("no earlier result",))
    if previous.cache_key == key and previous.verdict is not Verdict.ERROR:
        return Staleness(())
    reasons = []
    if previous.verdict is Verdict.ERROR:
        reasons.append("the earlier run was an error")
    old_inputs = previous.inputs
    changed = sorted(name for name in set(inputs) | set(old_inputs) if inputs.get(name) != old_inputs.get(name))
    if changed:
        reasons.append("changed: " + ", ".join(changed))
    moved = previous.environment.differences(environment)
    if moved:
        reasons.append("environment changed: " + ", ".join(f"{k} {old} -> {new}" for k, (old, new) in moved.items()))
    if not reasons:
        reasons.append("cache key changed")
    return Staleness(tuple(reasons))
