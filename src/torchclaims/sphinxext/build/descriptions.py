"""Every page's meta description, taken from what the page says (search engines quote it).

- a claim's script page: the claim's proposition, what the page checks;
- every other page (a topic, an accelerator, the home page...): its first
  paragraph, as the page reads after its directives ran, or its title where it
  has no paragraph of prose (a page that is one table);
- a page with no text of its own (the search page): the home page's.

No page types one: a description written beside a page would drift from it.
Cut at a word to DESCRIPTION_CHARS, with an ellipsis where cut.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx

from ..views.safe_html import Html
from .state import get_state

DESCRIPTION_CHARS = 160  # about what a search result shows of one


def first_paragraph(doctree: nodes.document) -> str:
    """The text of the first paragraph of prose (not a table's cell), whitespace collapsed."""
    for paragraph in doctree.findall(nodes.paragraph):
        if any(isinstance(a, nodes.table) for a in _ancestors(paragraph)):
            continue
        # the words only: raw HTML inside a paragraph is markup, not text
        text = " ".join(
            t.astext() for t in paragraph.findall(nodes.Text) if not isinstance(t.parent, nodes.raw)
        ).split()
        if text:
            return " ".join(text)
    return ""


def _ancestors(node: nodes.Node):
    while node.parent is not None:
        node = node.parent
        yield node


def shortened(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def description(app: Sphinx, pagename: str, doctree: nodes.document | None) -> str:
    state = get_state(app.env)
    claim = next((c for c in state.claims.executable() if state.example_docname(c) == pagename), None)
    if claim is not None:
        return shortened(" ".join(claim.proposition.split()))
    if doctree is None:  # a page the theme makes (search): the site's own description
        doctree = app.env.get_doctree(app.config.root_doc)
    title = next(doctree.findall(nodes.title), None)
    return shortened(first_paragraph(doctree) or (title.astext() if title else ""))


def add_description(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """html-page-context: the page's description among its meta tags."""
    text = description(app, pagename, doctree)
    if text:
        tags = Html(context.get("metatags") or "")  # trusted: the tags Sphinx wrote
        context["metatags"] = tags + Html('\n<meta name="description" content="{}">').format(text)


def setup_descriptions(app: Sphinx) -> None:
    app.connect("html-page-context", add_description)
