"""HTML element nodes (sphinxext/views/elements.py) written as a page would write them, without a Sphinx build."""

from __future__ import annotations

from docutils import nodes
from docutils.core import publish_from_doctree
from docutils.utils import new_document
from docutils.writers.html5_polyglot import HTMLTranslator, Writer

from torchclaims.sphinxext.views.elements import setup_elements


class Registered:
    """What setup_elements registers, as Sphinx's add_node would take it."""

    def add_node(self, node, **visitors):
        self.node, self.visitors = node, visitors


def visitors() -> dict:
    app = Registered()
    setup_elements(app)
    return app.visitors


def written(tree: nodes.Node) -> str:
    """``tree`` written by docutils' HTML writer with the visitors setup_elements registers: the body only."""
    visit, depart = visitors()["html"]
    translator = type("Translator", (HTMLTranslator,), {"visit_html_element": visit, "depart_html_element": depart})
    writer = Writer()
    writer.translator_class = translator
    document = new_document("<test>")
    document += tree
    html = publish_from_doctree(document, writer=writer, settings_overrides={"output_encoding": "unicode"})
    return html.split("<main>\n", 1)[1].split("</main>", 1)[0].strip()
