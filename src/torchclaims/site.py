"""The published folder: the built site without what only the builder needs.

Sphinx leaves its pickled doctrees, page sources and build information beside
the pages; none of that belongs on a web server. The site is built into a
working folder and copied here without them, replacing the previous copy whole,
so a page that is gone from the build is gone from the site. Free of Sphinx.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .errors import UsageError

LEFTOVERS = (".buildinfo", ".buildinfo.bak", ".doctrees", "_sources")


def publish(built: Path, destination: Path) -> None:
    built, destination = built.resolve(), destination.resolve()
    if built == destination or built in destination.parents or destination in built.parents:
        raise UsageError(f"the published folder {destination} must be outside the build folder {built}, and not hold it")
    staging = destination.with_name(destination.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(built, staging, ignore=shutil.ignore_patterns(*LEFTOVERS))
    shutil.rmtree(destination, ignore_errors=True)
    staging.rename(destination)


def leftovers(folder: Path) -> list[str]:
    """Build leftovers in a published folder (what the tests and CI refuse)."""
    return sorted(p.relative_to(folder).as_posix() for name in LEFTOVERS for p in folder.rglob(name))
