"""The site's hand-written markup escapes every value: safe_html.Html, and the rule that keeps it so."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from torchclaims.sphinxext.views.safe_html import Html, attributes

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "torchclaims"
MARKUP_TYPES = {"Html", "Markup"}
HOSTILE = '<img src=x onerror="alert(1)">'


def test_a_value_is_escaped():
    out = Html('<span title="{}">{}</span>').format(HOSTILE, HOSTILE)
    assert "<img" not in out and 'onerror="' not in out
    assert out.startswith('<span title="&lt;img src=x onerror=&#34;alert(1)&#34;&gt;">')


def test_joining_and_adding_escape_what_is_not_markup():
    joined = Html("<br>").join(["<b>", Html("<i>x</i>")])
    assert joined == "&lt;b&gt;<br><i>x</i>"
    assert Html("<p>") + "<script>" == "<p>&lt;script&gt;"
    assert "<script>" + Html("<p>") == "&lt;script&gt;<p>"
    assert isinstance(Html("").join(["a"]), Html)  # stays markup, so joining it again does not escape it twice


def test_attributes_are_escaped_and_boolean_ones_bare():
    out = attributes(data_version='2.13"><script>', class_="tc-a", hidden=True, title=None, open=False)
    assert out == ' data-version="2.13&#34;&gt;&lt;script&gt;" class="tc-a" hidden'


def _markup_calls_with_computed_text(path: Path) -> list[str]:
    """Html(...) or Markup(...) called on anything but one literal string: that text would not be escaped."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKUP_TYPES):
            continue
        literal = len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        trusted = "# trusted:" in lines[node.lineno - 1]  # text from the package itself, said on the line
        if not literal and not trusted:
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def _hand_escaping(path: Path) -> list[str]:
    """html.escape, or f-strings that write tags: markup built by hand, where one escape can be forgotten."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "escape" and getattr(node.value, "id", "") == "html":
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: html.escape")
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
            if "</" in text or '="' in text:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: an f-string with markup")
    return found


def test_no_markup_is_made_from_computed_text():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _markup_calls_with_computed_text(path)]
    assert found == []


def test_no_markup_is_escaped_by_hand():
    writers = [PACKAGE / "sphinxext", PACKAGE / "check"]
    found = [hit for folder in writers for path in sorted(folder.rglob("*.py")) for hit in _hand_escaping(path)]
    assert found == []


@pytest.mark.parametrize(
    "source, rule",
    [
        ("from markupsafe import Markup\nMarkup(f'<b>{x}</b>')\n", _markup_calls_with_computed_text),
        ("Html(title)\n", _markup_calls_with_computed_text),
        ("import html\nhtml.escape(x)\n", _hand_escaping),
        ("x = f'<span>{x}</span>'\n", _hand_escaping),
        ("x = f'<a href=\"{x}\">'\n", _hand_escaping),
    ],
)
def test_each_rule_finds_what_it_forbids(tmp_path, monkeypatch, source, rule):
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)  # paths are named relative to it
    path = tmp_path / "module.py"
    path.write_text(source, encoding="utf-8")
    assert len(rule(path)) == 1
