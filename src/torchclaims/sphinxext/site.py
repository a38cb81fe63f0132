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


def _pages(built: Path) -> dict[str, Path]:
    """Every file of the built site but the leftovers, by its path relative to the site."""
    found = {}
    for folder, subfolders, files in os.walk(built):
        subfolders[:] = sorted(d for d in subfolders if d not in LEFTOVERS)
        for name in files:
            if name not in LEFTOVERS:
                path = Path(folder, name)
                found[path.relative_to(built).as_posix()] = path
    return found


def _same(source: Path, copy: Path) -> bool:
    try:
        a, b = source.stat(), copy.lstat()
    except OSError:
        return False
    return copy.is_file() and not copy.is_symlink() and a.st_size == b.st_size and a.st_mtime_ns == b.st_mtime_ns


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def publish(built: Path, destination: Path) -> None:
    built, destination = built.resolve(), destination.resolve()
    if built == destination or built in destination.parents or destination in built.parents:
        raise UsageError(
            f"the published folder {destination} must be outside the build folder {built}, and not hold it"
        )
    if destination.exists() and not destination.is_dir():
        destination.unlink()
    pages = _pages(built)
    folders = {parent.as_posix() for rel in pages for parent in Path(rel).parents}
    for folder, subfolders, files in os.walk(destination, topdown=False):
        here = Path(folder)
        for name in files:
            if (here / name).relative_to(destination).as_posix() not in pages:
                (here / name).unlink()
        for name in subfolders:
            path = here / name
            if path.is_symlink() or path.relative_to(destination).as_posix() not in folders:
                _remove(path)
    for rel, source in pages.items():
        copy = destination / rel
        if _same(source, copy):
            continue
        if copy.is_dir() and not copy.is_symlink():
            shutil.rmtree(copy)
        copy.parent.mkdir(parents=True, exist_ok=True)
        staging = copy.with_name(f".{copy.name}.partial")
        shutil.copy2(source, staging)
        os.replace(staging, copy)


def leftovers(folder: Path) -> list[str]:
    """Build leftovers in a published folder (what the tests and CI refuse)."""
    return sorted(p.relative_to(folder).as_posix() for name in LEFTOVERS for p in folder.rglob(name))


def heavy_pages(folder: Path) -> list[tuple[str, int]]:
    """(page, bytes) of each page in a published folder whose HTML weighs more than the limit, heaviest first."""
    limit = limits.LIMITS.page_html_bytes
    sizes = ((p.relative_to(folder).as_posix(), p.stat().st_size) for p in folder.rglob("*.html"))
    return sorted(((path, size) for path, size in sizes if size > limit), key=lambda item: -item[1])
