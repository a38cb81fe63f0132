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
"""

from __future__ import annotations

import os
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


def keep_within(records_root: Path, bounds: Limits) -> list[str]:
    """Remove the caches past the bounds; one line for each removal, or for caches that could not be measured."""
    top = records_root / COMPILER_DIR
    if not top.is_dir():
        return []
    measured = disk_use(top, "-B1", "-d", "2")
    if measured is None:
        return [f"compiler caches: {top} could not be measured, so none was removed"]
    sizes = {Path(path): size for size, path in measured if len(Path(path).relative_to(top).parts) == 2}
    limit = bounds.compiler_cache_bytes
    removals = {c: f"{in_units(n)} (limit compiler_cache_bytes)" for c, n in sorted(sizes.items()) if n > limit}
    total = sum(size for caches, size in sizes.items() if caches not in removals)
    for caches in sorted(sizes.keys() - removals.keys(), key=lambda c: (_last_used(c), str(c))):
        if total <= bounds.compiler_caches_total_bytes:
            break
        total -= sizes[caches]
        removals[caches] = "the least recently run (limit compiler_caches_total_bytes)"
    for caches in removals:
        remove_tree(caches)
        caches.with_suffix(USED).unlink(missing_ok=True)
    return [f"compiler caches removed: {caches.relative_to(top)}: {why}" for caches, why in removals.items()]


def _last_used(caches: Path) -> float:
    """When the build last ran the claim; caches it never marked count as the oldest."""
    try:
        return os.stat(caches.with_suffix(USED)).st_mtime
    except OSError:
        return 0.0
