"""Raw HTML in which every value is escaped unless it is markup already.

The markup the site writes as text (the HTML elements' tags, elements.py; the
placeholders of parts loaded later, written into the finished page; the page's
meta description) is built from ``Html``, markupsafe's
``Markup``: written as ``Html('<span class="{}">{}</span>').format(kind, text)``,
and joined with ``+`` and ``Html("").join``, each value that is not itself
``Html`` is escaped. So text from a record, a claim or a file cannot become
markup by an escape forgotten. ``Html(...)`` itself takes only literal strings
(tests/test_safe_html.py): an f-string inside it would escape nothing.
"""

from __future__ import annotations

from markupsafe import Markup


class Html(Markup):
    __slots__ = ()


def attributes(**values: str | bool | None) -> Html:
    """`` name="value"`` for each attribute (``data_x`` is ``data-x``, ``class_`` is ``class``):
    True writes it bare, False or None leaves it out."""
    out = Html("")
    for name, value in values.items():
        name = name.rstrip("_").replace("_", "-")
        if value is True:
            out += Html(" {}").format(name)
        elif value not in (False, None):
            out += Html(' {}="{}"').format(name, value)
    return out
