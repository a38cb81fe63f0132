"""What a build leaves for readers beside the pages, and the folder it publishes.

At the end of an HTML build: every results file the site shows, as JSON and CSV
(torchclaims.sphinxext.views.downloads); the claims as data for the search page, so a search
lands on a claim's anchor with its proposition and verdicts as the snippet, and
works where the page is opened from a file (static/torchclaims.js); then, when
``torchclaims_publish_dir`` is set, a copy of the site without doctrees,
sources or build information (torchclaims.sphinxext.build.site). Pages never carry their
sources, and a favicon ships with the extension unless the project sets its own.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from ...errors import UsageError
from ...evidence.results import ResultsFile, build_results
from ...evidence.store import THIS_BUILD
from ...fileio import made_from, write_if_changed
from ...site_addresses import claim_anchor, evidence_anchor
from ..views.downloads import write_downloads
from ..views.matrix import WORDS
from .site import publish
from .state import BuildState, get_state, warn

logger = logging.getLogger(__name__)
SEARCH_DATA = "torchclaims-claims.js"  # in _static; a script, not fetched JSON: file:// pages can load it
OUTPUTS_KEY = "torchclaims-outputs.key"  # in the doctrees folder: what the downloads and search data were made of
STATIC = Path(__file__).parents[1] / "static"  # sphinxext/static


def this_build(state: BuildState) -> ResultsFile | None:
    """This build's records as a results file (figures are on its gallery pages, not beside the file)."""
    records = [
        e.record.model_copy(update={"figures": []})
        for h in state.store.entries.values()
        for e in h
        if e.origin == THIS_BUILD
    ]
    if not records:
        return None
    environment = state.outcome.probe.environment if state.outcome else records[0].environment
    return build_results(records, environment, label="site build")


def search_data(app: Sphinx, state: BuildState) -> list[dict]:
    labels = app.env.get_domain("std").labels
    claims = []
    for claim in sorted(state.claims.claims.values(), key=lambda c: c.id):
        target = labels.get(claim_anchor(claim.id))
        if target is None:
            continue
        page = app.builder.get_target_uri(target[0])
        verdicts = []
        for cell in state.grid.runs(claim):
            symbol, word = WORDS[cell.kind]
            scope = "" if cell.target else " (outside its scope)"
            verdicts.append(
                {
                    "text": f"{symbol} {word} on {cell.backend} · {cell.version}{scope}",
                    "url": f"{page}#{evidence_anchor(claim.id, cell.backend, cell.version)}",
                }
            )
        if not claim.executable:
            verdicts.append({"text": "❝ attributed, no verdict", "url": f"{page}#{claim_anchor(claim.id)}"})
        claims.append(
            {
                "id": claim.id,
                "title": claim.title,
                "url": f"{page}#{claim_anchor(claim.id)}",
                "proposition": claim.proposition,
                "claimed_by": claim.claimed_by,
                "about": claim.about,
                "topic": claim.topic,
                "verdicts": verdicts,
                "quotes": [s.quote for s in claim.sources],
            }
        )
    return claims


def finish(app: Sphinx, exception) -> None:
    """build-finished: downloads and search data, then the published copy."""
    if exception is not None or app.builder.format != "html":
        return
    state = get_state(app.env)
    outdir = Path(app.outdir)
    key, key_file = _outputs_key(app, state), Path(app.doctreedir) / OUTPUTS_KEY
    if not made_from(key_file, key, [outdir / "_static" / SEARCH_DATA]):  # what they are made of changed
        write_downloads(outdir, state.store, this_build(state), state.results_dir)
        text = "window.TORCHCLAIMS_CLAIMS = " + json.dumps(search_data(app, state), ensure_ascii=True) + ";\n"
        write_if_changed(outdir / "_static" / SEARCH_DATA, text)
        write_if_changed(key_file, key)
    if app.config.torchclaims_publish_dir:
        destination = Path(app.confdir, app.config.torchclaims_publish_dir)
        try:
            publish(outdir, destination)
        except UsageError as exc:
            warn(str(exc), "publish")
            return
        logger.info(f"torchclaims: published the site without build leftovers in {destination}")


def _outputs_key(app: Sphinx, state: BuildState) -> str:
    """Changes when the downloads or the search data would: the records and claims
    shown, the pages claims are on, the committed results files."""
    h = hashlib.sha256(state.digest(list(state.claims.claims)).encode())
    labels = app.env.get_domain("std").labels
    h.update(json.dumps([labels.get(claim_anchor(claim_id)) for claim_id in sorted(state.claims.claims)]).encode())
    for path in sorted(state.results_dir.glob("*.json")) if state.results_dir and state.results_dir.is_dir() else []:
        stat = path.stat()
        h.update(f"{path.name} {stat.st_size} {stat.st_mtime_ns}".encode())
    return h.hexdigest()


def _search_page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if pagename == "search":
        app.add_js_file(SEARCH_DATA)


def _configure(app: Sphinx, config) -> None:
    """No page sources on the site (search snippets read the pages), and a favicon."""
    config.html_copy_source = False
    config.html_show_sourcelink = False
    if not config.html_favicon:
        config.html_favicon = str(STATIC / "favicon.svg")


def setup_publishing(app: Sphinx) -> None:
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _search_page)
    app.connect("build-finished", finish)
