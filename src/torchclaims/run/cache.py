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

from ..evidence.memo import PACKAGE_DIR, ContentMemo, code_digest
from ..evidence.records import Environment, ResultRecord, Verdict

# The harness every script runs inside; a change to it may change any result.
HARNESS = tuple(
    PACKAGE_DIR / name
    for name in (
        "run/_child.py",
        "run/runner.py",
        "run/preload/__init__.py",
        "run/preload/compiler.py",
        "run/preload/huggingface.py",
    )
)
_SCAN_CODE = code_digest("run/cache.py")


class InputScanner:
    """What scripts import from the project, for the scripts of one run: each
    file is read and parsed once (its imports recalled from ``memo`` when an
    earlier run parsed the same text), the project files each file imports are
    looked up once (and each module name once), and the harness's own closure
    once per script folder."""

    def __init__(self, root: Path, memo: ContentMemo | None = None):
        self.root = root
        self.memo = memo or ContentMemo()
        self._files: dict[Path, tuple[str, frozenset[str]]] = {}
        self._deps: dict[tuple[Path, Path], list[Path]] = {}  # (file, script folder) -> project files it imports
        self._modules: dict[tuple[str, Path], Path | None] = {}  # (module, script folder) -> its project file
        self._harness: dict[Path, tuple[dict[Path, str], frozenset[str]]] = {}  # script folder -> HARNESS closure
        self._labels: dict[Path, str] = {}
        self.uses: dict[Path, frozenset[str]] = {}  # script -> every module it or its project files import
        self.own_uses: dict[Path, frozenset[str]] = {}  # the same, less what only the harness imports

    def inputs(self, script: Path) -> dict[str, str]:
        """sha256 of the script and of every project file it imports, transitively."""
        folder = script.parent
        if folder not in self._harness:
            self._harness[folder] = self._closure(HARNESS, folder, {})
        harness, harness_uses = self._harness[folder]
        found, used = self._closure((script,), folder, harness)
        self.uses[script], self.own_uses[script] = used | harness_uses, used
        return {self._label(path): digest for path, digest in sorted({**harness, **found}.items())}

    def uses_of(self, script: Path, harness: bool = True) -> frozenset[str]:
        """Every module the script or its project files import; with ``harness=False``, less what
        only the harness imports (the fork server's preloads import transformers for every script)."""
        if script not in self.uses:
            self.inputs(script)
        return self.uses[script] if harness else self.own_uses[script]

    def _closure(self, start, search_dir: Path, known: dict[Path, str]) -> tuple[dict[Path, str], frozenset[str]]:
        """Digests of ``start`` and of the project files they import, transitively,
        leaving out ``known`` files (whose imports are accounted for already)."""
        seen: dict[Path, str] = {}
        used: set[str] = set()
        queue = list(start)
        while queue:
            path = queue.pop()
            if path in seen or path in known:
                continue
            seen[path], imported = self._scan(path)
            used |= imported
            queue.extend(self._project_files(path, search_dir))
        return seen, frozenset(used)

    def _scan(self, path: Path) -> tuple[str, frozenset[str]]:
        if path not in self._files:
            data = path.read_bytes()
            names = self.memo.recall(
                "imports",
                _SCAN_CODE,
                f"{path}\0".encode() + data,
                lambda: sorted(_imported_modules(path, data)),
                _names,
            )
            self._files[path] = (hashlib.sha256(data).hexdigest(), frozenset(names))
        return self._files[path]

    def _project_files(self, path: Path, search_dir: Path) -> list[Path]:
        """The project files ``path`` imports: torchclaims modules and helpers beside the script."""
        if (path, search_dir) not in self._deps:
            found = (self._module_file(name, search_dir) for name in sorted(self._scan(path)[1]))
            self._deps[path, search_dir] = [module for module in found if module is not None]
        return self._deps[path, search_dir]

    def _module_file(self, name: str, search_dir: Path) -> Path | None:
        if (name, search_dir) not in self._modules:  # scripts import the same modules: each looked up once
            self._modules[name, search_dir] = _module_file(name, search_dir)
        return self._modules[name, search_dir]

    def _label(self, path: Path) -> str:
        if path not in self._labels:
            self._labels[path] = _label(path, self.root)
        return self._labels[path]


def _module_file(name: str, search_dir: Path) -> Path | None:
    """The file of a project module (torchclaims.* or a helper beside the script)."""
    parts = name.split(".")
    if parts[0] == "torchclaims":
        base = PACKAGE_DIR.joinpath(*parts[1:])
        candidates = [base.with_suffix(".py"), base / "__init__.py"]
    else:
        candidates = [search_dir.joinpath(*parts).with_suffix(".py")]
    return next((c for c in candidates if c.is_file()), None)


def _names(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


def _imported_modules(path: Path, data: bytes) -> set[str]:
    """Module names a file imports; ``torch.compile`` counts as one (it imports
    the compiler on its first call), so the runner sees who compiles."""
    try:
        tree = ast.parse(data.decode("utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
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
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "compile"
            and isinstance(node.value, ast.Name)
            and node.value.id == "torch"
        ):
            names.add("torch.compile")
    return names


def script_inputs(script: Path, root: Path) -> dict[str, str]:
    """sha256 of the script and of every project file it imports, transitively."""
    return InputScanner(root).inputs(script)


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
