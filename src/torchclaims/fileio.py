"""Reading untrusted files within bounds and within the repository, writing files atomically, digests,
naming files after data, and locking.

Every failure is an InvalidFileError naming the file, so callers report it and
carry on; nothing here lets a malformed file raise anything else.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import limits
from .errors import InvalidFileError, Problem

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # unrolled: no alternation per character
_BRACKET = re.compile(r"[\[\]{}]")


def read_bytes(path: Path, max_bytes: int, what: str = "file") -> bytes:
    """The file's bytes, refusing one larger than ``max_bytes`` before reading it."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise InvalidFileError([Problem(path, "", f"the {what} is {size:,} bytes; the limit is {max_bytes:,}")])
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InvalidFileError([Problem(path, "", f"cannot be read: {exc.strerror or exc}")]) from None
    if len(data) > max_bytes:  # grew while we looked
        raise InvalidFileError([Problem(path, "", f"the {what} is over {max_bytes:,} bytes, the limit")])
    return data


def decode_utf8(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidFileError(
            [
                Problem(
                    path,
                    "",
                    f"not UTF-8 text: byte {data[exc.start]:#04x} at offset {exc.start} cannot be decoded",
                    line,
                )
            ]
        ) from None


def json_depth(text: str, stop_above: int) -> int:
    """How deeply arrays and objects nest (strings ignored); stops counting early."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > stop_above:
                break
    return deepest


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file's bytes (OSError when it cannot be read): what records and attestations name."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_json(path: Path, max_bytes: int, what: str = "file"):
    """Parse a JSON file within the size and depth limits."""
    text = decode_utf8(path, read_bytes(path, max_bytes, what))
    max_depth = limits.LIMITS.json_depth
    if json_depth(text, max_depth) > max_depth:
        raise InvalidFileError(
            [Problem(path, "", f"arrays and objects nest deeper than {max_depth} levels, the limit")]
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidFileError([Problem(path, "", f"not valid JSON: {exc}", exc.lineno)]) from None
    except RecursionError:  # the depth check counts brackets; this is only a safety net
        raise InvalidFileError([Problem(path, "", "nested too deeply to read")]) from None


def safe_name(text: str, max_length: int = 80) -> str:
    """A file-name part made from data: letters, digits, '.', '_', '+', '-' only."""
    cleaned = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._+-]", "_", text))[:max_length].lstrip(".")
    return cleaned or "_"


def confined(directory: Path, name: str) -> Path:
    """``directory / name``, refusing anything that would land outside ``directory``."""
    base = directory.resolve()
    path = (base / name).resolve()
    if path.parent != base and base not in path.parents:
        raise InvalidFileError([Problem(Path(name), "", f"the name would place a file outside {directory}")])
    return path


def leaves(path: Path, root: Path) -> str | None:
    """Why reading ``path`` would leave ``root`` (a link pointing out of it), or None.

    claims/, gallery/ and results/ are read as the repository's own files; a
    link out of the repository would publish whatever it points to.
    """
    try:
        target, base = path.resolve(), root.resolve()
    except (OSError, RuntimeError) as exc:  # a link loop
        return f"cannot be followed: {exc}"
    if target != base and base not in target.parents:
        return f"is a link to {target}, outside the repository; it is not read"
    return None


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` (created if needed) while writing in it.

    Two runs writing one records or results directory take turns instead of
    interleaving a read-merge-write or a figures folder. The lock is taken on
    the directory itself, so no lock file is left behind.
    """
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def made_from(key_file: Path, key: str, outputs: list[Path]) -> bool:
    """Whether every one of ``outputs`` exists and was written from what ``key``
    digests (their writer stores the key in ``key_file`` after writing them)."""
    try:
        return key_file.read_text(encoding="utf-8") == key and all(path.is_file() for path in outputs)
    except OSError:
        return False


def write_if_changed(path: Path, text: str) -> bool:
    """Atomically replace ``path`` with ``text`` unless it already holds it."""
    data = text.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass  # absent or unreadable: replaced below
    replace_file(path, data)
    return True


def replace_file(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``: a reader sees the old file or the new one, never part of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes files private; readers (web servers) need access
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
