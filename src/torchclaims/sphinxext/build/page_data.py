"""Data a page loads when it needs it, shipped once, as a script.

What a page would be too heavy to carry (a coverage table's cells, the
matrix's other versions, the record of every run of a claim) goes in a file of
its own under ``_static``: a script that files its payload under its name in
``window.tcPageData``. The page loads it on demand with
``tcLoadData(name, src)`` (static/torchclaims.js). A script rather than fetched
JSON because browsers refuse fetch() on a page opened from a file, and a script
loads there too. Each data set exists once: a download of the same data links
to where the data already is, never to a second copy.

A directive marks a part of its page as written beside it with :func:`later`
(docutils nodes, rendered and linked as the page is) or :func:`later_markup`
(many pieces of markup, each filed under a path: the matrix's cells of other
versions, row -> backend -> markup, written and linked as the page is too).
When the page is written, every such part goes to the page's one data file,
``_static/data/page-<page>.js``, keyed as the directive named it; an HTML part
leaves a placeholder saying what loads there, which the script fills when the
folded block holding it opens or a link lands inside it; a markup part leaves
nothing.

An HTML part may bring a ``stand_in`` (docutils nodes too): it stays in the
placeholder, so that every anchor of the part is in the page without JavaScript
(with a static link to what the part shows, say). The page warns about an
anchor a link could name (``claim-…``, links.py) that its part holds and its
stand-in does not: such a link would land at the top of the page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

from ...fileio import write_if_changed
from ...site_addresses import slug
from ..views.elements import NOT_HTML, skip
from ..views.safe_html import Html
from .state import warn

GLOBAL = "tcPageData"  # torchclaims.js reads the same name
DATA_DIR = "_static/data"  # in the html output: a file per page with parts written beside it
# The marks around a part in the written page: the translator escapes every text, so no record can write one.
_PART = re.compile(r"<!--tc-later (html|markup) ([A-Za-z0-9_-]+)-->(.*?)<!--/tc-later-->", re.S)
_DATUM = re.compile(r"<!--tc-datum (\d+)-->(.*?)<!--/tc-datum-->", re.S)
_FALLBACK = re.compile(r"<!--tc-fallback-->(.*?)<!--/tc-fallback-->", re.S)
_ID = re.compile(r'\sid="([^"]+)"')


def data_script(name: str, payload) -> str:
    """The script that files ``payload`` under ``name``; JSON inside, ASCII only."""
    data = json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=True)
    return f"(window.{GLOBAL} = window.{GLOBAL} || {{}})[{json.dumps(name)}] = {data};\n"


def write_data_script(path: Path, name: str, payload) -> None:
    """Rewritten only when changed: the published copy is updated by what changed (torchclaims.sphinxext.build.site)."""
    write_if_changed(path, data_script(name, payload))


def data_name(pagename: str) -> str:
    return f"page-{slug(pagename)}"


def data_src(pagename: str) -> str:
    """Where the page ``pagename`` finds its data file."""
    return "../" * pagename.count("/") + f"{DATA_DIR}/{data_name(pagename)}.js"


class deferred(nodes.General, nodes.Element):  # noqa: N801 (docutils node naming)
    """A part of a page written beside it: ``key`` names it in the page's data file."""


class fallback(nodes.General, nodes.Element):  # noqa: N801
    """What a part's placeholder holds besides its note: the part's anchors, for a page read without scripts."""


def later(key: str, children: list[nodes.Node], note: str, stand_in: list[nodes.Node] = ()) -> deferred:
    """``children`` out of the page, into its data file; ``note`` (what loads there) and ``stand_in``
    stand in their place."""
    return deferred("", *children, *([fallback("", *stand_in)] if stand_in else []), key=key, format="html", note=note)


class datum(nodes.General, nodes.Element):  # noqa: N801
    """One piece of a markup part: what its children are written as, filed under ``path``."""


def later_markup(key: str, pieces: dict[tuple[str, ...], list[nodes.Node]]) -> deferred:
    """Each piece's nodes, written as markup, into the page's data file under ``key`` then the piece's path
    (``{key: {row: {backend: markup}}}``); nothing in the page."""
    filed = [datum("", *children, path=list(path)) for path, children in pieces.items()]
    return deferred("", *filed, key=key, format="markup")


def _visit(self, node: deferred) -> None:
    self.body.append(f"<!--tc-later {node['format']} {node['key']}-->")


def _depart(self, node: deferred) -> None:
    self.body.append("<!--/tc-later-->")


def _visit_datum(self, node: datum) -> None:
    self.body.append(f"<!--tc-datum {node.parent.index(node)}-->")  # its place in the part: write_parts finds its path


def _depart_datum(self, node: datum) -> None:
    self.body.append("<!--/tc-datum-->")


def _visit_fallback(self, node: fallback) -> None:
    self.body.append("<!--tc-fallback-->")


def _depart_fallback(self, node: fallback) -> None:
    self.body.append("<!--/tc-fallback-->")


def _placeholder(pagename: str, key: str, note: str, stand_in: str) -> Html:
    return Html('<div class="tc-later" data-tc-later="{}" data-tc-src="{}" data-tc-key="{}"><p>{}</p>{}</div>').format(
        data_name(pagename),
        data_src(pagename),
        key,
        note,
        Html(stand_in),  # trusted: markup the translator wrote, every text in it escaped
    )


def _filed(paths: list[list[str]], pieces: list[tuple[str, str]]) -> dict:
    """The written pieces of a markup part in nested dicts, each under its datum's path."""
    out: dict = {}
    for index, markup in pieces:
        *folders, name = paths[int(index)]
        place = out
        for folder in folders:
            place = place.setdefault(folder, {})
        place[name] = markup
    return out


def _unreachable(part: str, stand_in: str) -> list[str]:
    """Anchors a link could name that are in ``part`` and not in the page beside it."""
    return sorted({a for a in _ID.findall(part) if a.startswith("claim-")} - set(_ID.findall(stand_in)))


def write_parts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """html-page-context: the page's parts to its data file, each HTML part replaced by its placeholder."""
    path = Path(app.outdir, DATA_DIR, f"{data_name(pagename)}.js")
    body = context.get("body") or ""
    if "<!--tc-later " not in body:
        path.unlink(missing_ok=True)  # a page that no longer has parts leaves no file behind
        return
    marked = list(doctree.findall(deferred)) if doctree is not None else []
    notes = {node["key"]: node.get("note", "") for node in marked}
    paths = {node["key"]: [piece["path"] for piece in node.children if isinstance(piece, datum)] for node in marked}
    parts: dict = {}

    def cut(match: re.Match) -> str:
        kind, key, text = match.groups()
        if kind == "markup":
            parts[key] = _filed(paths[key], _DATUM.findall(text))
            return ""
        stand_in = "".join(_FALLBACK.findall(text))
        parts[key] = _FALLBACK.sub("", text)
        missing = _unreachable(parts[key], stand_in)
        if missing:
            warn(
                f"page {pagename}: {len(missing)} anchor(s) of part {key} exist only once a script loads it "
                f"(a link there lands at the top of the page without JavaScript): {', '.join(missing[:5])}",
                "page-data",
            )
        return _placeholder(pagename, key, notes.get(key, ""), stand_in)

    context["body"] = _PART.sub(cut, body)
    write_data_script(path, data_name(pagename), parts)


def _pass(self, node) -> None:
    pass


def setup_page_data(app: Sphinx) -> None:
    # a part is in place in other formats
    app.add_node(deferred, html=(_visit, _depart), **dict.fromkeys(NOT_HTML, (_pass, _pass)))
    # elsewhere the part itself is in place: its stand-in would say it twice; markup pieces are the HTML site's alone
    app.add_node(fallback, html=(_visit_fallback, _depart_fallback), **dict.fromkeys(NOT_HTML, (skip, None)))
    app.add_node(datum, html=(_visit_datum, _depart_datum), **dict.fromkeys(NOT_HTML, (skip, None)))
    app.connect("html-page-context", write_parts)
