"""Removing a claim's folders, whatever its script left in them.

A script owns its folder and may nest folders in it deeper than Python's
recursion limit or a path's length limit: ``shutil.rmtree`` then raises
RecursionError (not an OSError, so ``ignore_errors`` does not catch it), in
the claim's supervisor or in the build's own process, which it would stop.
``rm -rf`` walks any depth with directory descriptors and follows no link.
A script may also take away its own rights on a folder (``chmod 0``), which
stops ``rm`` of a user other than root: ``chmod -R`` gives them back (it
walks the same way, and changes no link nor what one points to). Measuring
such a tree is ``du``'s, for the same reasons.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REMOVE_TIMEOUT_S = 600  # rm -rf of one tree
MEASURE_TIMEOUT_S = 120.0  # du of one tree


def remove_tree(path: str | os.PathLike) -> None:
    """Remove ``path`` and everything below it; what cannot be removed is left, never raised."""
    try:
        os.rmdir(path)  # an empty folder (a run with nothing to run): no process started
        return
    except OSError:
        pass
    for command in (["rm", "-rf"], ["chmod", "-R", "u+rwX"], ["rm", "-rf"]):
        if not os.path.lexists(path):
            return
        try:
            subprocess.run(
                [*command, "--", os.fspath(path)], capture_output=True, timeout=REMOVE_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return  # left behind, as rmtree's ignore_errors would leave it


def disk_use(folder: str | os.PathLike, *options: str) -> list[tuple[int, str]] | None:
    """What ``du -x OPTIONS FOLDER`` counts (any depth, no link followed, one file
    system), as (count, path) for each line; None when it could not measure."""
    try:
        done = subprocess.run(
            ["du", "-x", *options, "--", os.fspath(folder)], capture_output=True, timeout=MEASURE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    found = []
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        count, _, path = line.partition("\t")
        if not count.isdigit():
            return None
        found.append((int(count), path))
    return found


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A new temporary folder for claims' folders, removed with ``remove_tree`` on
    leaving (``tempfile.TemporaryDirectory`` removes with ``shutil.rmtree``, which
    a claim interrupted mid-run may have left a tree too deep for)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        remove_tree(path)
