"""The published folder: the built site without what only the builder needs.

Sphinx leaves its pickled doctrees, page sources and build information beside
the pages; none of that belongs on a web server. The site is built into a
working folder and its pages are brought into this one without them: a file
that is new or changed replaces its copy (each file atomically), a file the
build no longer has is removed, so a page that is gone from the build is gone
from the site, and anything else left there is removed too. Unchanged files
(the same size and modification time: copies keep the time) are left as they
are, so a rebuild that changed little publishes in milliseconds. A page's HTML
has a weight limit (limits.py; the tests check the published site against it).
Free of Sphinx.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .. import limits
from ..errors import UsageError

LEFTOVERS = (".buildinfo", ".buildinfo.bak", ".doctrees", "_sources")


def _tree(root: Path, skip: tuple[str, ...] = ()) -> tuple[dict[str, os.DirEntry], set[str]]:
    """The files (and links) and the folders under ``root`` by their paths relative
    to it, links not followed, leaving out names in ``skip``: one directory read
    per folder, for a site of hundreds of files every build publishes."""
    files: dict[str, os.DirEntry] = {}
    folders: set[str] = set()
    pending = [""]
    while pending:
        rel = pending.pop()
        with os.scandir(root / rel) as entries:
            for entry in entries:
                if entry.name in skip:
                    continue
                path = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    folders.add(path)
                    pending.append(path)
                else:
                    files[path] = entry
    return files, folders


def _same(source: os.DirEntry, copy: os.DirEntry | None) -> bool:
    if copy is None or not copy.is_file(follow_symlinks=False):
        return False
    a, b = source.stat(), copy.stat(follow_symlinks=False)
    return a.st_size == b.st_size and a.st_mtime_ns == b.st_mtime_ns


def publish(built: Path, destination: Path) -> None:
    built, destination = built.resolve(), destination.resolve()
    if built == destination or built in destination.parents or destination in built.parents:
        raise UsageError(
            f"the published folder {destination} must be outside the build folder {built}, and not hold it"
        )
    if destination.exists() and not destination.is_dir():
        destination.unlink()
    pages, folders = _tree(built, LEFTOVERS)
    copies, copy_folders = _tree(destination) if destination.is_dir() else ({}, set())
    for rel in sorted(set(copies) - set(pages)):  # files and links the build does not have
        (destination / rel).unlink()
    for rel in sorted(copy_folders - folders):  # parents first: a removed folder takes its own along
        if (destination / rel).is_dir():
            shutil.rmtree(destination / rel)
    for rel, source in pages.items():  # a folder where the build has a file is gone by now
        copy = destination / rel
        if _same(source, copies.get(rel)):
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        staging = copy.with_name(f".{copy.name}.partial")
        shutil.copy2(source.path, staging)
        os.replace(staging, copy)


def leftovers(folder: Path) -> list[str]:
    """Build leftovers in a published folder (what the tests and CI refuse)."""
    return sorted(p.relative_to(folder).as_posix() for name in LEFTOVERS for p in folder.rglob(name))


def heavy_pages(folder: Path) -> list[tuple[str, int]]:
    """(page, bytes) of each page in a published folder whose HTML weighs more than the limit, heaviest first."""
    limit = limits.LIMITS.page_html_bytes
    sizes = ((p.relative_to(folder).as_posix(), p.stat().st_size) for p in folder.rglob("*.html"))
    return sorted(((path, size) for path, size in sizes if size > limit), key=lambda item: -item[1])
