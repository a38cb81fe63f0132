"""Build state: verify the claims before sphinx-gallery runs, keep what pages read.

Runs on ``builder-inited`` at priority 400, before sphinx-gallery's own handler
(500). Claims run in child processes (torchclaims.run.runner); sphinx-gallery is
configured to execute nothing itself, so it only assembles the pages the
children wrote, and a crashing script can never take the build down.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from ... import limits
from ...authoring.lint import cross_check
from ...caches import Caches, store_memo
from ...claims import Claim, ClaimSet, load_claims
from ...errors import InvalidFileError
from ...evidence.admission import Admission
from ...evidence.freshness import stale_reason
from ...evidence.judging import read_own_record
from ...evidence.memo import ContentMemo
from ...evidence.records import now
from ...evidence.store import Store, load_store
from ...evidence.store_memo import remembered_store, store_digest
from ...fileio import decode_utf8, leaves, read_bytes
from ...project import Folders
from ...run._child import GalleryTarget
from ...run.execution import Outcome, Settings, history_dir, verify
from ...run.progress import console
from ...text_safety import for_terminal
from ..views.grid import Grid
from .settings import BuildSettings, build_settings

if TYPE_CHECKING:
    from ..views.versions import VersionsState

logger = logging.getLogger(__name__)
WARNING_TYPE = "torchclaims"


def warn(message: str, subtype: str, location=None) -> None:
    """A build warning; what data put in it never drives the terminal (text_safety)."""
    logger.warning(for_terminal(message), type=WARNING_TYPE, subtype=subtype, location=location)


@dataclass
class BuildState:
    """What every directive of this build reads; set once per build."""

    claims: ClaimSet
    store: Store
    gallery_dir: str  # docname prefix of the generated example pages
    max_age_days: float
    outcome: Outcome | None = None
    script_sha: dict[str, str] = field(default_factory=dict)
    results_dir: Path | None = None  # the committed results files (and their figures)
    results_uri: str = ""  # the same folder as an image path for Sphinx ("/results")
    built_at: datetime = field(default_factory=now)
    versions: VersionsState | None = None  # the release list and its runs (torchclaims.sphinxext.views.versions)
    # What directives and transforms need of the application, taken from it at builder-inited:
    root: Path = field(kw_only=True)  # the project (conf.py's folder)
    outdir: Path = field(kw_only=True)  # where the builder writes (a directive copies a file there)
    relative_uri: Callable[[str, str], str] = field(kw_only=True)  # the builder's: docname -> docname, as a link
    _stale_reasons: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _claim_parts: dict[str, bytes] = field(default_factory=dict, repr=False)

    def digest(self, claim_ids: list[str]) -> str:
        """Changes when anything a page shows about these claims changes: the
        records, the claim records, and which records are stale and why (an age
        limit passes with the days, not with a build)."""
        h = hashlib.sha256(self.store.digest(claim_ids).encode())
        for claim_id in sorted(claim_ids):
            h.update(self._claim_part(claim_id))
        return h.hexdigest()

    def _claim_part(self, claim_id: str) -> bytes:
        """What a claim adds to every digest that holds it: worked out once per build
        (each page asks, many of them for every claim)."""
        if claim_id not in self._claim_parts:
            claim = self.claims.claims.get(claim_id)
            self._claim_parts[claim_id] = (
                json.dumps(claim.model_dump(mode="json") if claim else None, sort_keys=True).encode()
                + json.dumps(self._stale(claim_id)).encode()
            )
        return self._claim_parts[claim_id]

    def _stale(self, claim_id: str) -> list[str]:
        if claim_id not in self._stale_reasons:
            sha, entries = self.script_sha.get(claim_id), self.store.history(claim_id)
            self._stale_reasons[claim_id] = [stale_reason(e.record, sha, self.max_age_days) for e in entries]
        return self._stale_reasons[claim_id]

    @cached_property
    def grid(self) -> Grid:
        """Backends, versions and cells, in the order every page shows them."""
        return Grid(self.claims, self.store, self.script_sha, self.max_age_days)

    def example_docname(self, claim: Claim) -> str:
        return f"{self.gallery_dir}/{Path(claim.script).stem}"


# Each environment's state, beside it rather than in it: the state is made anew
# by every build, and the environment is pickled after the build and after each
# chunk of a parallel read (the store would ride along). Directives and
# transforms reach it through their environment; forked readers and writers see
# it as their parent left it; it goes with its environment.
_STATES: WeakKeyDictionary[BuildEnvironment, BuildState] = WeakKeyDictionary()


def get_state(env: BuildEnvironment) -> BuildState:
    return _STATES[env]


def _gallery_target(app: Sphinx, root: Path, gallery_dir: str):
    conf = dict(app.config.sphinx_gallery_conf)
    Path(app.srcdir, gallery_dir).mkdir(parents=True, exist_ok=True)

    def target(claim: Claim) -> GalleryTarget:
        return GalleryTarget(
            fname=Path(claim.script).name,
            src_dir=str(root / Path(claim.script).parent),
            target_dir=str(Path(app.srcdir) / gallery_dir),
            gallery_conf=conf,
        )

    return target


def remove_orphan_pages(gallery_output: Path, src_dir: Path, keep: set[str] | None = None) -> list[str]:
    """Delete generated example pages whose script is gone, or (with ``keep``)
    not among the scripts that get a page (sphinx-gallery keeps them)."""
    removed = []
    for page in sorted(gallery_output.glob("*.rst")):
        script = src_dir / f"{page.stem}.py"
        wanted = script.is_file() and not page.name.startswith("_") and (keep is None or page.stem in keep)
        if page.name == "index.rst" or wanted:
            continue
        for generated in gallery_output.glob(f"{page.stem}.*"):
            generated.unlink()
        for image in gallery_output.glob(f"images/**/sphx_glr_{page.stem}_*"):
            image.unlink()
        removed.append(page.stem)
    return removed


def _page_missing(app: Sphinx, gallery_dir: str):
    from sphinx_gallery.utils import get_md5sum

    def reasons(claim: Claim) -> list[str]:
        target = Path(app.srcdir, gallery_dir, Path(claim.script).name)
        checksum = Path(f"{target}.md5")
        if not checksum.exists() or not target.exists() or checksum.read_text() != get_md5sum(target, mode="t"):
            return ["its gallery page has no output yet"]
        return []

    return reasons


def _existing_records(settings: Settings) -> dict:
    """With execution off, show the records the last build left (never invent any)."""
    records = {}
    for path in sorted((settings.records_root() / settings.backend).glob("*.json")):
        try:
            record = read_own_record(path)
        except InvalidFileError as exc:
            warn(f"unreadable record ignored: {exc}", "record", location=str(path))
            continue
        records[record.claim_id] = record
    return records


def readable_scripts(root: Path, claims: ClaimSet) -> dict[str, str]:
    """claim id -> sha256 of each executable claim's script that can be shown:
    present, within the size limit and UTF-8 (sphinx-gallery stops the whole
    build on one that is not). The others are reported and get no page."""
    found = {}
    for claim in claims.executable():
        path = root / claim.script
        if not path.is_file():
            continue  # cross_check reports it
        outside = leaves(path, root)
        if outside:
            warn(f"{claim.script} {outside}; it gets no page", "claim", location=str(path))
            continue
        try:
            data = read_bytes(path, limits.LIMITS.script_bytes, "script")
            decode_utf8(path, data)
        except InvalidFileError as exc:
            for problem in exc.problems:
                warn(f"{claim.script}: {problem.message}; it gets no page", "claim", location=str(path))
            continue
        found[claim.id] = hashlib.sha256(data).hexdigest()
    return found


def _only_pages_for(app: Sphinx, scripts: list[str]) -> None:
    """Let sphinx-gallery build pages for these scripts only (helpers, scripts no
    claim names and scripts that cannot be read are ignored)."""
    conf = app.config.sphinx_gallery_conf
    allowed = "|".join(re.escape(Path(script).name) for script in scripts) or "(?!)"
    conf["ignore_pattern"] = f"(?:{conf['ignore_pattern']})|^(?!(?:{allowed})$)"


def _load_claims(root: Path, settings: BuildSettings) -> ClaimSet:
    """The claims, with every problem of a record or a script warned about (the memo spares re-parsing)."""
    claims = load_claims(root / settings.claims_dir)
    memo = ContentMemo(Caches(Settings(root=root).records_root()).memo())
    for problem in claims.problems + cross_check(root, claims, memo):
        warn(str(problem), "claim", location=str(problem.path))
    memo.save()
    return claims


def _limit_gallery_to_shown_scripts(app: Sphinx, root: Path, settings: BuildSettings, shown: list[str]) -> None:
    """sphinx-gallery makes pages for these scripts only, and the pages of others go."""
    _only_pages_for(app, shown)
    keep = {Path(script).stem for script in shown}
    for stem in remove_orphan_pages(Path(app.srcdir, settings.gallery_output), Folders(root).gallery, keep):
        logger.info(f"torchclaims: removed the generated page of {stem}, whose script is gone or cannot be shown")


def _run_stale_claims(app: Sphinx, root: Path, settings: BuildSettings, claims: ClaimSet) -> Outcome:
    """Run every claim whose record is out of date, each in its own process; errors are warned about."""
    outcome = verify(
        [c for c in claims.executable() if (root / c.script).is_file()],
        Settings(
            root=root,
            backend=settings.backend,
            timeout=settings.timeout,
            parallel=settings.parallel,
            force=settings.force,
            results_dir=_results_dir(root, settings),
        ),
        gallery_target=_gallery_target(app, root, settings.gallery_output),
        extra_reasons=_page_missing(app, settings.gallery_output),
        log=lambda message: logger.info(for_terminal(message)),
        warn=lambda message: warn(message, "record"),
        progress=console(),  # sphinx-build -q drops the info log, not the console
    )
    for claim_id, record in sorted(outcome.records.items()):
        if record.verdict.value == "error":
            warn(f"claim {claim_id} could not be verified: {record.reason}", "error")
    return outcome


def _results_dir(root: Path, settings: BuildSettings) -> Path | None:
    return root / settings.results_dir if settings.results_dir else None


def _load_results_store(
    app: Sphinx, root: Path, settings: BuildSettings, claims: ClaimSet, outcome: Outcome | None, build_records: dict
) -> Store:
    """This build's records and the committed results files, judged (remembered when nothing they
    are judged from changed); every rejected file is warned about."""
    results_dir, history = _results_dir(root, settings), history_dir(Settings(root=root))
    environment = outcome.probe.environment if outcome else None
    store = remembered_store(
        store_memo(Path(app.doctreedir)),
        store_digest(root, claims.claims, build_records, environment, results_dir, history),
        lambda: load_store(
            build_records,
            environment,
            results_dir,
            history,
            Admission.for_project(root, claims.claims),
            settings.verifier,
        ),
        attested=settings.verifier is not None,
    )
    for problem in store.problems:
        warn(f"results file rejected: {problem}", "results", location=str(problem.path))
    return store


def prepare(app: Sphinx) -> None:
    """builder-inited: load claims, verify the stale ones, load the results store."""
    root, settings = Path(app.confdir), build_settings(app)
    claims = _load_claims(root, settings)
    script_sha = readable_scripts(root, claims)
    _limit_gallery_to_shown_scripts(app, root, settings, [c.script for c in claims.executable() if c.id in script_sha])
    if settings.execute:
        outcome = _run_stale_claims(app, root, settings, claims)
        build_records = outcome.records
    else:
        outcome, build_records = None, _existing_records(Settings(root=root, backend=settings.backend))
    results_dir = _results_dir(root, settings)
    _STATES[app.env] = BuildState(
        claims,
        _load_results_store(app, root, settings, claims, outcome, build_records),
        settings.gallery_output,
        settings.max_age_days,
        outcome,
        script_sha,
        results_dir,
        "/" + results_dir.relative_to(Path(app.srcdir)).as_posix() if results_dir else "",
        root=root,
        outdir=Path(app.outdir),
        relative_uri=app.builder.get_relative_uri,
    )


def setup_state(app: Sphinx) -> None:
    app.connect("builder-inited", prepare, priority=400)
