"""Markup that Sphinx and the theme write invalid, corrected where it is made.

- One element per id. Furo wraps every table in a ``div.table-wrapper`` (and
  every math block in a ``div.math-wrapper``) by copying all the table's
  attributes onto the wrapper, ids included (its
  ``WrapTableAndMathInAContainerTransform``, ``update_all_atts``): every table
  with a caption then had its id twice. The id stays with the innermost
  element, the one its caption's permalink names.
- A level for every heading role. Sphinx writes a toctree's caption (the
  sidebar's section names) as ``<p role="heading">`` without the
  ``aria-level`` that ARIA requires of that role (axe: aria-required-attr).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.writers.html5 import HTML5Translator

CAPTION_LEVEL = "2"  # below the page's title (level 1); the sidebar's captions head its sections


class OneElementPerId(SphinxPostTransform):
    """An element that wraps another keeps none of the ids the wrapped one has."""

    default_priority = 900  # after every wrapper a theme's post-transform adds (furo's: 500)
    formats = ("html",)

    def run(self, **kwargs) -> None:
        holders: dict[str, list[nodes.Element]] = {}
        for node in self.document.findall(nodes.Element):  # document order: a wrapper before what it wraps
            for id_ in node["ids"]:
                holders.setdefault(id_, []).append(node)
        for id_, elements in holders.items():
            for i, outer in enumerate(elements[:-1]):
                if any(_inside(inner, outer) for inner in elements[i + 1 :]):
                    outer["ids"].remove(id_)


def _inside(node: nodes.Node, ancestor: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None and parent is not ancestor:
        parent = parent.parent
    return parent is ancestor


class HeadingLevelTranslator(HTML5Translator):
    """Sphinx's HTML writer, with the level ARIA requires beside each ``role="heading"`` it writes."""

    def starttag(self, node, tagname, suffix="\n", empty=False, **attributes):
        if any(k.lower() == "role" and v == "heading" for k, v in attributes.items()):
            attributes.setdefault("aria-level", CAPTION_LEVEL)
        return super().starttag(node, tagname, suffix, empty, **attributes)


def setup_valid_markup(app: Sphinx) -> None:
    app.add_post_transform(OneElementPerId)
    for builder in ("html", "dirhtml"):
        app.set_translator(builder, HeadingLevelTranslator)
