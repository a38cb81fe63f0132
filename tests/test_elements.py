"""HTML elements as document nodes (sphinxext/elements.py): written by the HTML writer, escaped, skipped elsewhere."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from docutils import nodes

from rendered import visitors, written
from torchclaims.sphinxext.views.elements import NOT_HTML, element, html_attributes, joined

HOSTILE = '<img src=x onerror="alert(1)">'


class Tags(HTMLParser):
    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, list]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def test_attributes_are_written_in_order_escaped_and_boolean_ones_bare():
    tree = element(
        "a", "x", class_="tc-run", href=HOSTILE, data_version="2.13", data_n=0, hidden=True, title=None, open=False
    )
    assert written(tree) == (
        '<a class="tc-run" href="&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" data-version="2.13" data-n="0" hidden>'
        "x</a>"
    )


def test_text_is_escaped_by_the_writer_and_cannot_become_markup():
    out = written(element("p", HOSTILE, element("span", HOSTILE, class_="tc-badge"), 3))
    assert [tag for tag, _ in Tags(out).tags] == ["p", "span"]  # no <img> from the text
    assert out.endswith("</span>3</p>")


def test_a_void_element_has_no_closing_tag():
    assert written(element("label", "Text ", element("input", type="search", name="q"))) == (
        '<label>Text <input type="search" name="q"></label>'
    )


def test_the_doctree_keeps_the_attributes_apart_from_docutils_own():
    node = element("td", "cpu", data_backend="cpu", class_="tc-target")
    node["ids"].append("x")
    assert html_attributes(node) == {"data-backend": "cpu", "class": "tc-target"}


def test_other_builders_skip_the_elements_rather_than_crash():
    registered = visitors()
    assert set(registered) == {"html", *NOT_HTML}
    for builder in NOT_HTML:
        visit, _ = registered[builder]
        with pytest.raises(nodes.SkipNode):
            visit(None, element("p", "x"))


@pytest.mark.parametrize(
    "items, expected",
    [([], []), (["a"], ["a"]), (["a", "b"], ["a", ", ", "b"]), ([["a", "1"], "b"], ["a", "1", ", ", "b"])],
)
def test_joined_puts_the_separator_between_items_only(items, expected):
    assert joined(", ", items) == expected
