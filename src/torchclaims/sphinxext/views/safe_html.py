"""Raw HTML in which every value is escaped unless it is markup already.

The markup the site writes by hand (the claims matrix, gallery cards, the
coverage tables' containers and charts, the placeholders of parts loaded later)
is built from ``Html``, markupsafe's ``Markup`` with one more rule: written as
``Html('<span class="{}">{}</span>').format(kind, text)``, and joined with
``+`` and ``Html("").join``, each value that is not itself ``Html`` is escaped.
So text from a record, a claim or a file cannot become markup by an escape
forgotten; and escaping drops the link-marker character (links.py), so such
text cannot forge a link to a claim either. ``Html(...)`` itself takes only
literal strings (tests/test_safe_html.py): an f-string inside it would escape
nothing.
"""

from __future__ import annotations

from markupsafe import Markup

LINK_MARK = "\ue000"  # a private-use character: starts and ends a link marker (docutils eats NUL)


class Html(Markup):
    __slots__ = ()

    @classmethod
    def escape(cls, s) -> Html:
        """Escape ``s`` unless it is markup; plain text loses any link-marker character first."""
        if not hasattr(s, "__html__"):
            s = str(s).replace(LINK_MARK, "")
        return super().escape(s)


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
