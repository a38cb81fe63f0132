"""Every version of the gallery scripts a record may have run: the file on disk
and, in a git checkout, each version committed in its history.

Two git commands read the whole history at once (one ``git log`` for the commits
that touched the scripts, one ``git cat-file --batch`` for their contents), so
checking every record of every results file costs well under a second. Without
git only the current files count; in a shallow clone the history is incomplete,
which :attr:`ScriptHistory.shallow` tells the messages.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from ..fileio import file_sha256, leaves
from ..project import GALLERY


class ScriptHistory:
    """sha256 of every known version of the scripts under ``root``, loaded lazily."""

    def __init__(self, root: Path, directories: tuple[str, ...] = (GALLERY,)):
        self.root = root
        self.directories = directories
        self._versions: dict[str, set[str]] | None = None
        self._current: dict[str, str | None] = {}  # script -> sha256 of the file as it is now
        self.shallow = False
        self.git = False

    def versions(self, script: str) -> set[str]:
        """Known sha256 digests of ``script`` (a path relative to the root): the
        versions git recorded at that very path, and the file as it is now
        (unless it is a link out of the repository)."""
        if self._versions is None:
            self._versions = self._load()
        known = set(self._versions.get(script, set()))
        if script not in self._current:  # every record of a script asks: the file is read once
            path = self.root / script
            try:
                self._current[script] = None if leaves(path, self.root) else file_sha256(path)
            except OSError:
                self._current[script] = None
        if self._current[script] is not None:
            known.add(self._current[script])
        return known

    def _load(self) -> dict[str, set[str]]:
        if shutil.which("git") is None:
            return {}
        prefix = self._git("rev-parse", "--show-prefix")
        if prefix is None:
            return {}  # not a git checkout: only the current files count
        self.git = True
        self.shallow = (self._git("rev-parse", "--is-shallow-repository") or "").strip() == "true"
        log = self._git("log", "--format=commit %H", "--name-only", "--no-renames", "--", *self.directories)
        if not log:
            return {}
        wanted: list[tuple[str, str]] = []  # (commit, path relative to root)
        commit = ""
        for line in log.splitlines():
            if line.startswith("commit "):
                commit = line.split()[1]
            elif line.strip() and line.startswith(prefix.strip()):
                wanted.append((commit, line[len(prefix.strip()) :]))
        return self._contents(wanted, prefix.strip())

    def _contents(self, wanted: list[tuple[str, str]], prefix: str) -> dict[str, set[str]]:
        request = "".join(f"{commit}:{prefix}{path}\n" for commit, path in wanted).encode()
        try:
            run = subprocess.run(
                ["git", "cat-file", "--batch"], cwd=self.root, input=request, capture_output=True, timeout=120
            )
        except (OSError, subprocess.TimeoutExpired):
            return {}
        versions: dict[str, set[str]] = {}
        output, at = run.stdout, 0
        for _, path in wanted:
            end = output.find(b"\n", at)
            if end < 0:
                break
            header = output[at:end].split()
            at = end + 1
            if len(header) != 3 or header[1] != b"blob":
                continue  # "<name> missing": the commit deleted the file
            size = int(header[2])
            versions.setdefault(path, set()).add(hashlib.sha256(output[at : at + size]).hexdigest())
            at += size + 1
        return versions

    def _git(self, *args: str) -> str | None:
        try:
            run = subprocess.run(
                ["git", *args], cwd=self.root, capture_output=True, text=True, errors="replace", timeout=120
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return run.stdout if run.returncode == 0 else None
