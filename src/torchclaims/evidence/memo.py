"""What was worked out from a file's text, remembered between runs by its content.

Parsing every script and project module on each build (to find what a script
imports, to lint it) takes longer than everything else a build with nothing
to do. Those answers depend only on a file's bytes and on the code that works
them out, so they are kept in one JSON file beside the records, keyed by the
bytes' sha256 under a digest of that code: an edited file is a new key, and
new analysing code starts afresh. The file is read as untrusted input:
anything malformed or of the wrong shape is ignored and worked out again. A
run keeps only the entries it used, so the file does not grow.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import InvalidFileError
from ..fileio import read_json, write_if_changed

T = TypeVar("T")
MAX_FILE_BYTES = 8 * 1024 * 1024
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # torchclaims/: code is named by its path in the package


def code_digest(*modules: str) -> str:
    """A digest of the analysing code (module files of the package, by path inside it: "run/cache.py")."""
    h = hashlib.sha256()
    for name in modules:
        h.update((PACKAGE_DIR / name).read_bytes())
    return h.hexdigest()


class ContentMemo:
    """Remembered answers by (kind of analysis, code digest, file content)."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self._old = self._load() if path is not None else {}
        self._used: dict[str, dict] = {}

    def _load(self) -> dict:
        if not self.path.exists():
            return {}
        try:
            data = read_json(self.path, MAX_FILE_BYTES, "memo")
        except InvalidFileError:
            return {}
        return data if isinstance(data, dict) else {}

    def recall(
        self, kind: str, code: str, content: bytes, work_out: Callable[[], T], valid: Callable[[object], bool]
    ) -> T:
        """The answer for ``content``: remembered when it fits ``valid``, else worked out now.

        Answers must survive a JSON round trip unchanged (lists, not tuples)."""
        key = hashlib.sha256(content).hexdigest()
        shelf = self._old.get(kind)
        answers = shelf.get("answers") if isinstance(shelf, dict) and shelf.get("code") == code else None
        if isinstance(answers, dict) and key in answers and valid(answers[key]):
            answer = answers[key]
        else:
            answer = work_out()
        self._used.setdefault(kind, {"code": code, "answers": {}})["answers"][key] = answer
        return answer

    def save(self) -> None:
        """Keep what this run used (and the other kinds' entries it did not touch)."""
        if self.path is None:
            return
        kept = {kind: shelf for kind, shelf in self._old.items() if kind not in self._used}
        try:
            write_if_changed(self.path, json.dumps({**kept, **self._used}, sort_keys=True) + "\n")
        except OSError:
            pass  # a memo that cannot be written only costs the next run time
