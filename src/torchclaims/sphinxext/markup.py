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
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=f"/{docname}", refexplicit=True, refwarn=True)
    ref += nodes.inline("", text)
    return ref


def bullets(items: list[nodes.Node]) -> nodes.bullet_list:
    bullets = nodes.bullet_list()
    for item in items:
        li = nodes.list_item()
        li += item
        bullets += li
    return bullets


def table(headers: list[str], rows: list[list[nodes.Node | str]], classes: list[str]) -> nodes.table:
    table = nodes.table(classes=classes)
    group = nodes.tgroup(cols=len(headers))
    table += group
    for _ in headers:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += _row(headers)
    body = nodes.tbody()
    group += body
    for row in rows:
        body += _row(row)
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
