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
(docutils nodes, rendered and linked as the page is) or :func:`later_data`
(raw HTML in JSON, its claim links resolved with the page's, links.py). When
the page is written, every such part goes to the page's one data file,
``_static/data/page-<page>.js``, keyed as the directive named it; an HTML part
leaves a placeholder saying what loads there, which the script fills when the
folded block holding it opens or a link lands inside it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

from ..fileio import write_if_changed
from .links import raw_html, slug
from .safe_html import Html

GLOBAL = "tcPageData"  # torchclaims.js reads the same name
DATA_DIR = "_static/data"  # in the html output: a file per page with parts written beside it
# The marks around a part in the written page: the translator escapes every text, so no record can write one.
_PART = re.compile(r"<!--tc-later (html|json) ([A-Za-z0-9_-]+)-->(.*?)<!--/tc-later-->", re.S)


def data_script(name: str, payload) -> str:
    """The script that files ``payload`` under ``name``; JSON inside, ASCII only."""
    data = json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=True)
    return f"(window.{GLOBAL} = window.{GLOBAL} || {{}})[{json.dumps(name)}] = {data};\n"


def write_data_script(path: Path, name: str, payload) -> None:
    """Rewritten only when changed: the published copy is updated by what changed (torchclaims.sphinxext.site)."""
    write_if_changed(path, data_script(name, payload))


def data_name(pagename: str) -> str:
    return f"page-{slug(pagename)}"


def data_src(pagename: str) -> str:
    """Where the page ``pagename`` finds its data file."""
    return "../" * pagename.count("/") + f"{DATA_DIR}/{data_name(pagename)}.js"


class deferred(nodes.General, nodes.Element):  # noqa: N801 (docutils node naming)
    """A part of a page written beside it: ``key`` names it in the page's data file."""


def later(key: str, children: list[nodes.Node], note: str) -> deferred:
    """``children`` out of the page, into its data file; ``note`` (what loads there) stands in their place."""
    return deferred("", *children, key=key, format="html", note=note)


def later_data(key: str, payload) -> deferred:
    """``payload`` (JSON; its strings may hold raw HTML with claim links) into the page's data file,
    and nothing in the page."""
    # ensure_ascii=False keeps the link markers (private-use characters) whole for the resolver
    return deferred(
        "", raw_html(json.dumps(payload, separators=(",", ":"), ensure_ascii=False)), key=key, format="json"
    )


def _visit(self, node: deferred) -> None:
    self.body.append(f"<!--tc-later {node['format']} {node['key']}-->")


def _depart(self, node: deferred) -> None:
    self.body.append("<!--/tc-later-->")


def _placeholder(pagename: str, key: str, note: str) -> Html:
    return Html('<div class="tc-later" data-tc-later="{}" data-tc-src="{}" data-tc-key="{}"><p>{}</p></div>').format(
        data_name(pagename), data_src(pagename), key, note
    )


def write_parts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """html-page-context: the page's parts to its data file, each HTML part replaced by its placeholder."""
    path = Path(app.outdir, DATA_DIR, f"{data_name(pagename)}.js")
    body = context.get("body") or ""
    if "<!--tc-later " not in body:
        path.unlink(missing_ok=True)  # a page that no longer has parts leaves no file behind
        return
    notes = {node["key"]: node.get("note", "") for node in doctree.findall(deferred)} if doctree is not None else {}
    parts: dict = {}

    def cut(match: re.Match) -> str:
        kind, key, text = match.groups()
        parts[key] = json.loads(text) if kind == "json" else text
        return "" if kind == "json" else _placeholder(pagename, key, notes.get(key, ""))

    context["body"] = _PART.sub(cut, body)
    write_data_script(path, data_name(pagename), parts)


def _pass(self, node) -> None:
    pass


def setup_page_data(app: Sphinx) -> None:
    others = {builder: (_pass, _pass) for builder in ("text", "latex", "man", "texinfo")}  # a part is in place there
    app.add_node(deferred, html=(_visit, _depart), **others)
    app.connect("html-page-context", write_parts)
