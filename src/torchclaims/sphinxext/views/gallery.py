"""The gallery serves the claims: cards with verdicts, pages that lead back.

sphinx-gallery writes the gallery's index (a card per script, with a placeholder
picture when the script drew nothing) and a page per script (opening with a
"Go to the end to download…" note, which then starts every search snippet).
When those pages are read, this module

- replaces each card with one that shows the script's title (the claim's own,
  see lint), the claim's verdicts in matrix order (saying when a backend is
  outside the claim's scope), and the script's first figure or no picture;
- on a script's page, drops the download note (the download buttons stay at
  the end) and adds, under the title, links to the claim's evidence and to its
  row in the matrix;
- keeps the script pages out of the site's navigation: the index's hidden
  toctree goes and each script page is an orphan. The cards and each claim's
  evidence lead to them; listed in the sidebar, they were most of every
  page's bytes and most of the time the theme spends building the sidebar
  of each page, which walks the whole navigation tree.

It runs before Sphinx collects images and the table of contents, so a dropped
placeholder is never copied and the removed toctree never counted.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx

from ...claims import Claim
from ..build.links import claim_ref, matrix_ref
from ..build.state import BuildState, get_state
from ..build.tracking import ALL_CLAIMS, note_shown
from .elements import element, html_element
from .markup import paragraph
from .matrix import WORDS


def _verdicts(state: BuildState, claim: Claim) -> html_element:
    runs = state.grid.runs(claim)
    if not runs:
        return element("span", "∅ not run", class_="tc-badge tc-notrun")
    items = [
        element(
            "li",
            element("span", "{} {}".format(*WORDS[cell.kind]), class_=f"tc-badge tc-{cell.kind}"),
            f" {cell.backend} · {cell.version}",
            *([] if cell.target else [" ", element("span", "outside its scope", class_="tc-scope")]),
        )
        for cell in runs
    ]
    return element("ul", *items, class_="tc-card-verdicts")


def _has_figure(app: Sphinx, state: BuildState, stem: str) -> bool:
    return any(Path(app.srcdir, state.gallery_dir, "images").glob(f"sphx_glr_{stem}_[0-9][0-9][0-9].png"))


def _cards(app: Sphinx, state: BuildState, doctree: nodes.document) -> None:
    by_stem = {Path(c.script).stem: c for c in state.claims.executable()}
    for opening in list(doctree.findall(nodes.raw)):
        if "sphx-glr-thumbcontainer" not in opening.astext() or opening.parent is None:
            continue
        parent = opening.parent
        index = parent.index(opening)
        body, closing = parent[index + 1 : index + 3] if len(parent) > index + 2 else (None, None)
        refs = list(body.findall(addnodes.pending_xref)) if isinstance(body, addnodes.only) else []
        stem = refs[0]["reftarget"].rsplit("/", 1)[-1] if refs else ""
        claim = by_stem.get(stem)
        if claim is None or not isinstance(closing, nodes.raw):
            continue
        images = [image.deepcopy() for image in body.findall(nodes.image)] if _has_figure(app, state, stem) else []
        title = element("a", claim.title, class_="tc-card-title", href=f"{stem}.html")
        for node in (opening, body, closing):
            parent.remove(node)
        parent.insert(index, element("div", *images, title, _verdicts(state, claim), class_="tc-card"))


def _backlinks(state: BuildState, claim: Claim, doctree: nodes.document) -> None:
    for note in list(doctree.findall(nodes.note)):
        if "sphx-glr-download-link-note" in note["classes"]:
            note.parent.remove(note)
    section = next(doctree.findall(nodes.section), None)
    if section is None:
        return
    line = paragraph(
        "This script verifies the claim ",
        claim_ref(claim.id, nodes.inline("", "“" + claim.title + "”")),
        " (its sources and evidence on every backend) · ",
        matrix_ref(claim.id, nodes.inline("", "its row in the matrix")),
    )
    line["classes"].append("tc-backlink")
    line["support_smartquotes"] = False
    section.insert(1, line)


def read_gallery_page(app: Sphinx, doctree: nodes.document) -> None:
    state = get_state(app.env)
    docname = app.env.docname
    if not docname.startswith(state.gallery_dir + "/"):
        return
    if docname == f"{state.gallery_dir}/index":
        ids = list(state.claims.claims)
        note_shown(app.env, ids, state.digest(ids), key=ALL_CLAIMS)
        _cards(app, state, doctree)
        for toctree in list(doctree.findall(addnodes.toctree)):
            toctree.parent.remove(toctree)
        return
    app.env.metadata[docname]["orphan"] = True  # in no toctree, on purpose (above)
    claim = next((c for c in state.claims.executable() if state.example_docname(c) == docname), None)
    if claim is not None:
        _backlinks(state, claim, doctree)


def setup_gallery(app: Sphinx) -> None:
    app.connect("doctree-read", read_gallery_page, priority=400)  # before the image and toctree collectors (500)
