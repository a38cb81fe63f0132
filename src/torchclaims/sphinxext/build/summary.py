"""The build's last words: its verdict count, and where the site is.

Sphinx's closing line names its working folder (_build/sphinx) while the site
is published elsewhere (``torchclaims_publish_dir``), so the builder's epilog
says where the site is. The verdict count goes to the log and to a file in the
doctree folder, so that a quiet build (``sphinx-build -q``, as ``nox -s docs``
runs it) can still end with it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from ...evidence.records import Verdict
from ...evidence.store import THIS_BUILD
from ...fileio import write_if_changed
from .state import BuildState, get_state

logger = logging.getLogger(__name__)
VERDICTS_FILE = "torchclaims-verdicts.txt"  # in the doctree folder
NOT_RUN = "not run"


def verdict_line(state: BuildState) -> str:
    """'63 executable claims, this build on cpu: 40 holds, 5 refuted, 15 unverified, 3 error;
    11 attributed (no verdict)'."""
    shown = {
        e.record.claim_id: e.record
        for entries in state.store.entries.values()
        for e in entries
        if e.origin == THIS_BUILD
    }
    executable = [c.id for c in state.claims.executable()]
    counts = Counter(shown[c].verdict.value if c in shown else NOT_RUN for c in executable)
    backends = sorted({shown[c].environment.backend for c in executable if c in shown})
    parts = [f"{counts[name]} {name}" for name in [v.value for v in Verdict] + [NOT_RUN] if counts[name]]
    where = f"this build on {', '.join(backends)}" if backends else "this build"
    attributed = len(state.claims.claims) - len(executable)
    return (
        f"{len(executable)} executable claims, {where}: {', '.join(parts) or 'none'}; "
        f"{attributed} attributed (no verdict)"
    )


def _epilog(app: Sphinx) -> None:
    if app.config.torchclaims_publish_dir and app.builder.format == "html":
        # a %-template (outdir, project): a '%' of the folder's name is escaped
        app.builder.epilog = f"The site is in {app.config.torchclaims_publish_dir}.".replace("%", "%%")


def _finish(app: Sphinx, exception) -> None:
    if exception is not None:
        return
    line = verdict_line(get_state(app.env))
    logger.info(f"torchclaims: {line}")
    write_if_changed(Path(app.doctreedir) / VERDICTS_FILE, line + "\n")


def setup_summary(app: Sphinx) -> None:
    app.connect("builder-inited", _epilog)
    app.connect("build-finished", _finish, priority=900)  # after the site is published
