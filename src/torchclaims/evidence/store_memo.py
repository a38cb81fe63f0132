"""The judged results store, remembered between builds under a digest of what it was judged from.

Loading the store reads, validates and judges every committed results file
(megabytes of coverage tables): most of a site build with nothing to do. The
store is a function of its inputs' bytes and of the code that judges them, so
a build keeps it beside Sphinx's own pickled environment, under a digest of:
the package's code and limits, the build's own records and environment, every
file of the results and history folders (name, where it leads, bytes), the
gallery scripts as they are now, the claims, the git commit and shallow cut
the files' and scripts' histories are read from, and the registered backends.
Any change is a new digest and a full load, so every record is still judged
by the code of this build.

Two stores are never remembered: one checked against attestations (the
verifier asks a service, whose answer can change) and one in which admission
refused a date for lying in the future (the same file passes later). The file
is the build's own (a claim script cannot write outside its directory), read
with the same trust as Sphinx's environment; one that cannot be read, or is
not a store, is loaded afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Callable, Mapping
from pathlib import Path

from .. import limits
from ..backends import registered_backends
from ..claims import Claim
from ..fileio import replace_file
from ..project import Folders
from .judging import dated_in_future
from .memo import PACKAGE_DIR, code_digest
from .provenance import git_output, shallow_boundary
from .records import Environment, ResultRecord, record_key
from .store import Store


def store_digest(
    root: Path,
    claims: Mapping[str, Claim],
    build_records: Mapping[str, ResultRecord],
    build_environment: Environment | None,
    results_dir: Path | None,
    history_dir: Path | None,
) -> str:
    """A digest of everything ``load_store`` reads for the project at ``root``."""
    h = hashlib.sha256()

    def part(label: str, data: bytes) -> None:
        h.update(f"{label}\0{len(data)}\0".encode() + data)

    modules = sorted(path.relative_to(PACKAGE_DIR).as_posix() for path in PACKAGE_DIR.rglob("*.py"))
    part("code", code_digest(*modules).encode())
    part("limits", repr(limits.LIMITS).encode())
    part("backends", repr(registered_backends()).encode())
    # git tells who added and changed each results file, and which script versions its records may name
    has_results = results_dir is not None and any(results_dir.glob("*.json"))
    part("git", _git_position(root).encode() if has_results else b"")
    for claim_id in sorted(claims):
        part(f"claim {claim_id}", json.dumps(claims[claim_id].model_dump(mode="json"), sort_keys=True).encode())
    for claim_id in sorted(build_records):
        part(f"record {claim_id}", record_key(build_records[claim_id]).encode())
    environment = build_environment.model_dump(mode="json") if build_environment else None
    part("environment", json.dumps(environment, sort_keys=True).encode())
    for folder in (Folders(root).gallery, results_dir, history_dir):
        for path in sorted(folder.rglob("*")) if folder is not None and folder.is_dir() else []:
            if path.is_file():
                part(f"file {path} -> {os.path.realpath(path)}", path.read_bytes())
    return h.hexdigest()


def _git_position(root: Path) -> str:
    """The commit histories are read from, and where a shallow clone cuts them ('' outside git)."""
    head = git_output(root, "rev-parse", "HEAD", "--show-prefix")
    return "" if head is None else head + " ".join(sorted(shallow_boundary(root)))


def remembered_store(path: Path, digest: str, load: Callable[[], Store], attested: bool) -> Store:
    """The store remembered at ``path`` under ``digest``, else ``load()``'s, kept
    there unless it was ``attested`` or refused a date in the future."""
    try:
        with path.open("rb") as handle:
            kept_digest, store = pickle.load(handle)
        if kept_digest == digest and isinstance(store, Store):
            return store
    except Exception:  # noqa: BLE001 - absent, truncated, or from other code: load afresh
        pass
    store = load()
    if not attested and not dated_in_future(store.problems):
        try:
            replace_file(path, pickle.dumps((digest, store), protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            pass  # a memo that cannot be written only costs the next build time
    else:
        path.unlink(missing_ok=True)
    return store
