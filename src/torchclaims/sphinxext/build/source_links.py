"""No page is made from a file outside the repository.

claims/, gallery/ and results/ refuse links out of the repository as they read
them (torchclaims.fileio.leaves); Sphinx reads the rest: every page source,
image, download and include under the folders it is told to read, and the
project's templates and static files. A link among them to a file elsewhere
(a home folder's keys, say) would be read and published, so the build stops
before reading anything, naming each such link.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import SphinxError
from sphinx.util.matching import get_matching_files

from ...fileio import leaves


class LinkOutOfRepository(SphinxError):
    category = "torchclaims: a source links out of the repository"


def links_out(root: Path, include: list[str], exclude: list[str], folders: list[str]) -> list[str]:
    """'path: why' for each file Sphinx would read under ``root`` (the pages' patterns,
    and ``folders`` given relative to it) that is a link out of ``root``."""
    found = []
    walked = [(root, include, exclude)] + [(root / f, ("**",), ()) for f in folders if not Path(f).is_absolute()]
    for base, patterns, excluded in walked:
        if leaves(base, root):
            found.append(f"{base.relative_to(root)}: {leaves(base, root)}")
            continue
        for rel in get_matching_files(base, patterns, excluded) if base.is_dir() else ():
            why = leaves(base / rel, root)
            if why:
                found.append(f"{(base / rel).relative_to(root)}: {why}")
    return found


def _check(app: Sphinx, config: Config) -> None:
    # At config-inited the static folders are the project's own (the extension adds its own later).
    folders = [*config.templates_path, *config.html_static_path, *config.html_extra_path]
    found = links_out(Path(app.srcdir), list(config.include_patterns), list(config.exclude_patterns), folders)
    if found:
        raise LinkOutOfRepository("\n".join(found))


def setup_source_links(app: Sphinx) -> None:
    app.connect("config-inited", _check)
