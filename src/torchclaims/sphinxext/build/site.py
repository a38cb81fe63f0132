"""The published folder: the built site without what only the builder needs.

Sphinx leaves its pickled doctrees, page sources and build information beside
the pages; none of that belongs on a web server. The site is built into a
working folder and its pages are brought into this one without them: a file
that is new or changed replaces its copy (each file atomically), and a file an
earlier publish wrote that the build no longer has is removed, so a page that
is gone from the build is gone from the site. Publishing never removes or
replaces a file it did not write: what it wrote is listed in the folder's
manifest (``MANIFEST``), a non-empty folder without one is refused, and so is a
build that would replace a file the manifest does not list. Unchanged files
(the same size and modification time: copies keep the time) are left as they
are, so a rebuild that changed little publishes in milliseconds. A page's HTML
has a weight limit (limits.py; the tests check the published site against it).
Free of Sphinx.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

from ... import limits
from ...errors import InvalidFileError, UsageError
from ...fileio import read_json

LEFTOVERS = (".buildinfo", ".buildinfo.bak", ".doctrees", "_sources")
MANIFEST = ".torchclaims-published.json"  # in the published folder: every file the last publish wrote there
MANIFEST_FORMAT = "torchclaims-published"


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
        raise UsageError(f"the published folder {destination} is a file; it is not replaced")
    written = _published_before(destination)
    pages, _ = _tree(built, LEFTOVERS)
    copies, copy_folders = _tree(destination, (MANIFEST,)) if destination.is_dir() else ({}, set())
    gone = sorted(set(copies) & written - set(pages))  # what an earlier publish wrote and the build no longer has
    in_the_way = _not_ours(pages, copies, copy_folders, written, set(gone))
    if in_the_way:
        raise UsageError(
            f"publishing into {destination} would replace {len(in_the_way)} file(s) it did not write: "
            f"{', '.join(in_the_way[:5])}; move them, or publish into another folder"
        )
    for rel in gone:
        (destination / rel).unlink()
    for folder in sorted({p for rel in gone for p in _parents(rel)}, key=lambda f: -f.count("/")):  # deepest first
        with contextlib.suppress(OSError):  # only a folder left empty goes, never what else it holds
            (destination / folder).rmdir()
    destination.mkdir(parents=True, exist_ok=True)
    for rel, source in pages.items():
        copy = destination / rel
        if _same(source, copies.get(rel)):
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        staging = copy.with_name(f".{copy.name}.partial")
        shutil.copy2(source.path, staging)
        os.replace(staging, copy)
    _write_manifest(destination, sorted(pages))


def _parents(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:n]) for n in range(1, len(parts))]


def _not_ours(pages: dict, copies: dict, copy_folders: set[str], written: set[str], gone: set[str]) -> list[str]:
    """What is in the way of the build's files and was not written by a publish: a
    file the build would replace, a folder where it has a file (unless only files
    about to go are in it), a file where it needs a folder."""
    found = []
    for rel in sorted(pages):
        if rel in copies and rel not in written:
            found.append(rel)
        elif rel in copy_folders:
            inside = {c for c in copies if c.startswith(f"{rel}/")}
            if not inside or not inside <= gone:  # it goes only when emptied of files a publish wrote
                found.append(f"{rel}/")
        found.extend(p for p in _parents(rel) if p in copies and p not in gone)
    return list(dict.fromkeys(found))


def _published_before(destination: Path) -> set[str]:
    """The files an earlier publish wrote into ``destination`` (none when it is new or empty);
    a folder with other contents and no manifest is refused."""
    manifest = destination / MANIFEST
    if not destination.is_dir() or not (manifest.exists() or manifest.is_symlink()):
        if destination.is_dir() and any(destination.iterdir()):
            raise UsageError(
                f"the published folder {destination} is not empty and no publish made it (it has no {MANIFEST}); "
                "publishing would replace what is there: choose an empty or new folder"
            )
        return set()
    if manifest.is_symlink():
        raise UsageError(f"{manifest}: is a link; the list of published files is not read through it")
    try:
        data = read_json(manifest, limits.LIMITS.publish_manifest_bytes, "list of published files")
    except InvalidFileError as exc:
        raise UsageError(str(exc)) from None
    files = data.get("files") if isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT else None
    if not isinstance(files, list) or not all(isinstance(f, str) and _plain_relative(f) for f in files):
        raise UsageError(f"{manifest}: files: expected a list of relative paths within the folder; nothing is removed")
    return set(files)


def _plain_relative(rel: str) -> bool:
    parts = rel.split("/")
    return all(part not in ("", ".", "..") for part in parts)


def _write_manifest(destination: Path, files: list[str]) -> None:
    staging = destination / f".{MANIFEST}.partial"
    staging.write_text(json.dumps({"format": MANIFEST_FORMAT, "files": files}, indent=0) + "\n", encoding="utf-8")
    os.replace(staging, destination / MANIFEST)


def leftovers(folder: Path) -> list[str]:
    """Build leftovers in a published folder (what the tests and CI refuse)."""
    return sorted(p.relative_to(folder).as_posix() for name in LEFTOVERS for p in folder.rglob(name))


def heavy_pages(folder: Path) -> list[tuple[str, int]]:
    """(page, bytes) of each page in a published folder whose HTML weighs more than the limit, heaviest first."""
    limit = limits.LIMITS.page_html_bytes
    sizes = ((p.relative_to(folder).as_posix(), p.stat().st_size) for p in folder.rglob("*.html"))
    return sorted(((path, size) for path, size in sizes if size > limit), key=lambda item: -item[1])
