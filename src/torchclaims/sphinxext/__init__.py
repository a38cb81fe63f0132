"""Sphinx extension: verified claims on MyST pages.

Three folders: ``directives/`` (what a page author writes), ``views/`` (what
renders records: the matrix, accelerator pages, cards, evidence, tables) and
``build/`` (the build's plumbing: settings, state, tracking, the gallery's
process, publishing). ``setup`` reads as a table of contents; each concern
registers itself from its own module.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sphinx.application import Sphinx

from .. import __version__


def setup(app: Sphinx) -> dict:
    from .build.coverage_index import setup_coverage_index
    from .build.descriptions import setup_descriptions
    from .build.gallery_output import setup_gallery_output
    from .build.gallery_process import setup_gallery_process
    from .build.gallery_safety import setup_gallery_safety
    from .build.heap import setup_heap
    from .build.links import setup_links
    from .build.page_data import setup_page_data
    from .build.publishing import setup_publishing
    from .build.settings import setup_settings
    from .build.source_links import setup_source_links
    from .build.state import setup_state
    from .build.summary import setup_summary
    from .build.tracking import setup_tracking
    from .build.valid_markup import setup_valid_markup
    from .build.warning_text import setup_warning_text
    from .directives.backends_table import setup_backends_table
    from .directives.changes_page import setup_changes
    from .directives.check_report import setup_check_report
    from .directives.claim import setup_claim
    from .directives.coverage_tables import setup_coverage_tables
    from .directives.figures import setup_figures
    from .directives.measure import setup_measure
    from .directives.upgrade_pages import setup_upgrade_pages
    from .views.accelerators import setup_accelerators
    from .views.elements import setup_elements
    from .views.gallery import setup_gallery
    from .views.markup import setup_markup
    from .views.matrix import setup_matrix
    from .views.versions import setup_versions

    setup_warning_text(app)  # Sphinx's and docutils' warnings quote pages: never a control character raw
    setup_source_links(app)  # no page source, image or static file is a link out of the repository
    setup_settings(app)  # the torchclaims_* config values, checked once they are read
    setup_state(app)  # verify claims before sphinx-gallery runs
    setup_tracking(app)  # re-read pages whose evidence changed
    setup_markup(app)  # folded blocks (<details>)
    setup_valid_markup(app)  # one element per id, a level for each heading role: where Sphinx and the theme miss
    setup_descriptions(app)  # each page's meta description, from its own text
    setup_elements(app)  # HTML elements as document nodes: the matrix and the gallery's cards
    setup_links(app)  # links to claims, evidence anchors and matrix rows, resolved after reading
    setup_page_data(app)  # data a page loads on demand, written beside it
    setup_claim(app)  # claim, topic-claims, claim-verdict (evidence blocks: evidence.py)
    setup_matrix(app)  # claims-matrix: the home page
    setup_accelerators(app)  # accelerator: a page per backend; accelerator-choice: links to them with their tallies
    setup_measure(app)  # claim-measure: figures in prose, read from records
    setup_changes(app)  # claims-changes
    setup_backends_table(app)  # backend-descriptors
    setup_figures(app)  # build-speed, measured, limits-table, caches-table, argument-kinds, claim-triggers
    setup_coverage_tables(app)  # coverage-table: sweep tables per backend, searchable, with downloads
    setup_coverage_index(app)  # their rows' names in the site search
    setup_check_report(app)  # check-report: a torchclaims check report of an example, made at build time
    setup_gallery(app)  # gallery cards with verdicts, script pages that lead back to their claim
    setup_gallery_process(app)  # this process runs no script: sphinx-gallery's matplotlib import is skipped
    setup_publishing(app)  # downloads, search data, favicon, the published folder
    setup_gallery_output(app)  # a script's output on its page, bounded
    setup_gallery_safety(app)  # script text and links never run in a reader's browser
    setup_versions(app)  # the release list; version strips on claim sections, range slices in the matrix
    setup_upgrade_pages(app)  # upgrade-index, build-against-history
    setup_summary(app)  # the verdict count at the end; where the site is
    setup_heap(app)  # what lives as long as the build is left out of garbage collection
    app.connect("builder-inited", _add_static)
    return {
        "version": __version__,
        "parallel_read_safe": True,
        "parallel_write_safe": True,
        "env_version": _code_version(),
    }


def _code_version(folder: Path = Path(__file__).parent) -> int:
    """Changes whenever the extension's code does, in any of its folders, so Sphinx re-reads every
    page (claims are not re-run for that: only their pages are rebuilt)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return int(digest.hexdigest()[:12], 16)


def _add_static(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))  # favicon.svg rides along (publishing.py)
    app.add_css_file("torchclaims.css")
    app.add_js_file("torchclaims.js")  # torchclaims-sweep.js only where a coverage table is (coverage_tables.py)
