"""Small docutils builders the torchclaims directives share: badges, paragraphs, links, lists, tables."""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes


def badge(text: str, kind: str) -> nodes.inline:
    return nodes.inline("", text, classes=["tc-badge", f"tc-{kind}"])


def paragraph(*children) -> nodes.paragraph:
    para = nodes.paragraph()
    for child in children:
        para += nodes.Text(child) if isinstance(child, str) else child
    return para


def link(text: str, url: str | None) -> nodes.Node:
    """A link, or plain text where there is no address (an unconfirmed source)."""
    return nodes.reference("", text, refuri=url) if url else nodes.Text(text)


def doc_link(text: str, docname: str) -> addnodes.pending_xref:
    ref = addnodes.pending_xref(
        "", refdomain="std", reftype="doc", reftarget=f"/{docname}", refexplicit=True, refwarn=True
    )
    ref += nodes.inline("", text)
    return ref


def bullets(items: list[nodes.Node]) -> nodes.bullet_list:
    bullets = nodes.bullet_list()
    for item in items:
        li = nodes.list_item()
        li += item
        bullets += li
    return bullets


def table(
    headers: list[str],
    rows: list[list[nodes.Node | str]],
    classes: list[str],
    caption: str = "",
    row_ids: list[list[str]] | None = None,
) -> nodes.table:
    table = nodes.table(classes=classes)
    if caption:
        table += nodes.title("", caption)
    group = nodes.tgroup(cols=len(headers))
    table += group
    for _ in headers:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += _row(headers)
    body = nodes.tbody()
    group += body
    for i, row in enumerate(rows):
        body += _row(row)
        body[-1]["ids"] = row_ids[i] if row_ids else []
    return table


def _row(cells: list[nodes.Node | str]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += cell if isinstance(cell, nodes.Body) else paragraph(cell)
        row += entry
    return row


def join_nodes(items: list[nodes.Node]) -> list[nodes.Node | str]:
    out: list[nodes.Node | str] = []
    for i, item in enumerate(items):
        out.extend([", "] if i else [])
        out.append(item)
    return out


class details(nodes.General, nodes.Element):  # noqa: N801 (docutils node naming)
    """A folded block: ``<details>`` in HTML, its content as is elsewhere."""


class summary(nodes.General, nodes.TextElement):  # noqa: N801
    """The line a folded block shows while closed."""


def folded(
    summary_children: list,
    body: list[nodes.Node],
    ids: list[str] | None = None,
    classes: list[str] | None = None,
    open_: bool = False,
) -> details:
    block = details(ids=ids or [], classes=classes or [], open=open_)
    line = summary()
    line.extend(nodes.Text(c) if isinstance(c, str) else c for c in summary_children)
    block += line
    block.extend(body)
    return block


class value(nodes.Inline, nodes.TextElement):  # noqa: N801
    """A value from a record, set as code: ``<code>`` and its text, not docutils'
    ``<span class="pre">`` around every word, which made a third of a topic page."""


LONG = 120  # characters shown of a value before it folds


def value_text(text: str, limit: int = LONG) -> nodes.Node:
    """A value from a record, never cut silently: a long one ends with an ellipsis and unfolds whole."""
    if len(text) <= limit:
        return value("", text)
    whole = nodes.literal_block(
        text, text, classes=["tc-whole"], language="none"
    )  # a value, not Python: no highlighting markup
    return folded(
        [value("", text[:limit].rstrip() + "…"), nodes.inline("", " show all", classes=["tc-more"])],
        [whole],
        classes=["tc-long"],
    )


def _visit_details(self, node: details) -> None:
    attributes = {"open": "open"} if node.get("open") else {}
    self.body.append(self.starttag(node, "details", "", **attributes))


def _visit_summary(self, node: summary) -> None:
    self.body.append(self.starttag(node, "summary", ""))


def _visit_value(self, node: value) -> None:
    self.body.append(
        self.starttag(node, "code", "", CLASS="literal notranslate") + self.encode(node.astext()) + "</code>"
    )
    raise nodes.SkipNode


def _pass(self, node) -> None:
    pass


def setup_markup(app) -> None:
    others = {builder: (_pass, _pass) for builder in ("text", "latex", "man", "texinfo")}
    app.add_node(details, html=(_visit_details, lambda self, node: self.body.append("</details>\n")), **others)
    app.add_node(summary, html=(_visit_summary, lambda self, node: self.body.append("</summary>\n")), **others)
    app.add_node(value, html=(_visit_value, None), **others)
