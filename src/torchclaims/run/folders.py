"""Removing a claim's folders, whatever its script left in them.

A script owns its folder and may nest folders in it deeper than Python's
recursion limit or a path's length limit: ``shutil.rmtree`` then raises
RecursionError (not an OSError, so ``ignore_errors`` does not catch it), in
the claim's supervisor or in the build's own process, which it would stop.
``rm -rf`` walks any depth with directory descriptors and follows no link.
"""

from __future__ import annotations

import os
import subprocess

REMOVE_TIMEOUT_S = 600  # rm -rf of one tree


def remove_tree(path: str | os.PathLike) -> None:
    """Remove ``path`` and everything below it; what cannot be removed is left, never raised."""
    if not os.path.lexists(path):
        return
    try:
        subprocess.run(["rm", "-rf", "--", os.fspath(path)], capture_output=True, timeout=REMOVE_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        pass  # left behind, as rmtree's ignore_errors would leave it
