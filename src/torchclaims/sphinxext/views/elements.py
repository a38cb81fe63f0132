"""HTML elements as document nodes, for views that need elements docutils has no node for.

The matrix (a form and its fields, cells with a scope and the data attributes
static/torchclaims.js reads), its range slices and the gallery's cards are
trees of ``html_element`` nodes: a tag, its HTML attributes under their own
names and in their order, and children (text or other nodes). The HTML writer
writes them as it writes any node: the tag with every attribute value escaped
(safe_html.attributes), every text escaped by the writer itself, so no value
from a record or a claim can become markup. A doctree shows their structure.
A link to a claim is an attribute value resolved once every page is read
(build/links.py). Other builders skip them, as they skipped the raw HTML these
views were: they are the HTML site's interactive views.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx

from .safe_html import Html, attributes

VOID = frozenset({"input"})  # written without content or closing tag
NOT_HTML = ("text", "latex", "man", "texinfo")


class html_element(nodes.General, nodes.Element):  # noqa: N801 (docutils node naming)
    """One HTML element: ``tag``, then its attributes (``data-version``), in the order they are written."""


def element(tag: str, *children: nodes.Node | str | int, **values: object) -> html_element:
    """``element("span", "text", class_="tc-badge", data_version=v, hidden=True)``: ``class_`` is ``class`` and
    ``data_x`` is ``data-x``; True writes the attribute bare, False or None leaves it out."""
    node = html_element("", tag=tag)
    for name, value in values.items():
        if value is not None and value is not False:  # 0 is kept
            node[name.rstrip("_").replace("_", "-")] = value  # as named: an SVG viewBox keeps its case
    node.extend(child if isinstance(child, nodes.Node) else nodes.Text(str(child)) for child in children if child != "")
    return node


def html_attributes(node: html_element) -> dict[str, object]:
    """The element's HTML attributes: every attribute but its tag and docutils' own."""
    own = {"tag", *node.basic_attributes}
    return {name: value for name, value in node.attributes.items() if name not in own}


def _visit(self, node: html_element) -> None:
    written = {name: value if value is True else str(value) for name, value in html_attributes(node).items()}
    self.body.append(Html("<{}{}>").format(node["tag"], attributes(**written)))
    if node["tag"] in VOID:
        raise nodes.SkipNode


def _depart(self, node: html_element) -> None:
    self.body.append(Html("</{}>").format(node["tag"]))


def skip(self, node: nodes.Node) -> None:
    raise nodes.SkipNode


def joined(separator: str, items: list[nodes.Node | str | list[nodes.Node | str]]) -> list[nodes.Node | str]:
    """``items`` (a child, or a list of children each) with ``separator`` between each two, as children."""
    out: list[nodes.Node | str] = []
    for i, item in enumerate(items):
        out += ([separator] if i else []) + (item if isinstance(item, list) else [item])
    return out


def setup_elements(app: Sphinx) -> None:
    app.add_node(html_element, html=(_visit, _depart), **dict.fromkeys(NOT_HTML, (skip, None)))
