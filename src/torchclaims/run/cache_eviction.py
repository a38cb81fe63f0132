"""Each claim's own compiler caches stay within their bounds: the oldest go first.

A claim's compiler caches (torchclaims.caches, torchclaims.run.compiler_caches) are kept between its
runs, and its script writes them as it likes: without a bound they would grow
with every release swept and every claim added. After a run, each claim's
caches are measured (``du``: any depth, no link followed); one past
``compiler_cache_bytes`` is removed, and while all of them together are past
``compiler_caches_total_bytes``, those of the claim whose last run is oldest
are removed, then the next. A claim's caches go whole: their entries refer to
one another (inductor's FX graph entries to their kernels, Triton's groups of
files), so a part of them is not a smaller cache, and the claim's next run
compiles again what it needs.

When a claim last ran is the build's word, not its script's: the script may
set any time on its own caches' files, so the build keeps a mark of its own
beside them (``<claim>.used``), in a folder the script cannot write.

Two builds may share one records folder (a ``verify`` beside ``nox -s docs``).
While a build runs claims it holds a shared lock on each one's caches folder
(:func:`in_use`); eviction takes an exclusive lock on a folder before removing
it, and leaves one it cannot lock, saying so: no build removes the caches a
claim of another build is running with.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from ..caches import COMPILER_DIR, Caches
from ..limits import Limits
from .bounds import in_units
from .folders import disk_use, remove_tree

USED = ".used"  # beside a claim's caches: touched by the build when the claim ran


def mark_used(records_root: Path, backend: str, claim_ids: list[str]) -> None:
    """Note that these claims ran now (their caches are the newest)."""
    for claim_id in claim_ids:
        mark = Caches(records_root).compiler(backend, claim_id).with_suffix(USED)
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()


@contextmanager
def in_use(records_root: Path, backend: str, claim_ids: list[str]) -> Iterator[None]:
    """Hold a shared lock on these claims' caches folders while they run (see the module docstring)."""
    with ExitStack() as stack:
        for claim_id in claim_ids:
            folder = Caches(records_root).compiler(backend, claim_id)
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            stack.callback(os.close, fd)  # closing releases the lock
            fcntl.flock(fd, fcntl.LOCK_SH)
        yield


def keep_within(records_root: Path, bounds: Limits) -> list[str]:
    """Remove the caches past the bounds; one line for each removal, for caches a run holds (left), or for
    caches that could not be measured."""
    top = records_root / COMPILER_DIR
    if not top.is_dir():
        return []
    measured = disk_use(top, "-B1", "-d", "2")
    if measured is None:
        return [f"compiler caches: {top} could not be measured, so none was removed"]
    sizes = {Path(path): size for size, path in measured if len(Path(path).relative_to(top).parts) == 2}
    limit = bounds.compiler_cache_bytes
    over = {c: f"{in_units(n)} (limit compiler_cache_bytes)" for c, n in sorted(sizes.items()) if n > limit}
    oldest_first = sorted(sizes.keys() - over.keys(), key=lambda c: (_last_used(c), str(c)))
    total = sum(sizes.values())
    lines = []
    for caches in [*over, *oldest_first]:
        if caches not in over and total <= bounds.compiler_caches_total_bytes:
            break
        why = over.get(caches, "the least recently run (limit compiler_caches_total_bytes)")
        kept = _remove_unless_in_use(caches)
        if kept:
            lines.append(f"compiler caches kept: {caches.relative_to(top)}: {why}, but {kept}")
            continue
        total -= sizes[caches]
        lines.append(f"compiler caches removed: {caches.relative_to(top)}: {why}")
    return lines


def _remove_unless_in_use(caches: Path) -> str:
    """Remove a claim's caches and its mark unless a run holds them (:func:`in_use`): '', else why they stay."""
    try:
        fd = os.open(caches, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        return f"they cannot be opened ({exc.strerror})"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return "a run is using them"
    try:
        remove_tree(caches)
        caches.with_suffix(USED).unlink(missing_ok=True)
    finally:
        os.close(fd)
    return ""


def _last_used(caches: Path) -> float:
    """When the build last ran the claim; caches it never marked count as the oldest."""
    try:
        return os.stat(caches.with_suffix(USED)).st_mtime
    except OSError:
        return 0.0
