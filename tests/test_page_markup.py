"""The markup of every page of a small site built with the site's theme (furo), read as written:
unique ids, a meta description from the page's own text, a level for every heading role, and
every link into the evidence landing on an anchor the page holds without JavaScript.

The project is test_directive_doctrees.py's (every directive on a page, fixture records,
execution off), built once in this process with furo and a captioned toctree, as the
site's sidebar has. What a page loads later (page_data.py) is read from its data file.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from test_directive_doctrees import sphinx_build, write_project
from torchclaims.sphinxext.build import page_data
from torchclaims.sphinxext.build.descriptions import DESCRIPTION_CHARS, first_paragraph, shortened
from torchclaims.sphinxext.build.valid_markup import OneElementPerId

INTRO = "A knowledge base of claims about PyTorch on other accelerators, each checked by a script."


class Markup(HTMLParser):
    """What a page's markup says about its ids, links, description and heading roles."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.links: list[str] = []
        self.descriptions: list[str] = []
        self.unlevelled: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "meta" and a.get("name") == "description":
            self.descriptions.append(a.get("content") or "")
        if a.get("role") == "heading" and not a.get("aria-level"):
            self.unlevelled.append(f"<{tag} {attrs}>")

    def duplicate_ids(self) -> list[str]:
        return sorted({i for i in self.ids if self.ids.count(i) > 1})


def parts(page: Path, out: Path) -> dict:
    """The parts a page loads later, as its data file holds them (page_data.data_script)."""
    name = page_data.data_name(page.relative_to(out).with_suffix("").as_posix())
    data = out / page_data.DATA_DIR / f"{name}.js"
    if not data.is_file():
        return {}
    return json.loads(data.read_text().split("] = ", 1)[1].rstrip().rstrip(";"))


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for item in value for s in strings(item)] if isinstance(value, list) else []


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("markup")
    write_project(root)
    (root / "conf.py").write_text((root / "conf.py").read_text() + 'html_theme = "furo"\n')
    index = (root / "index.md").read_text()
    (root / "index.md").write_text(
        index.replace("# Directives\n\n", f"# Directives\n\n{INTRO}\n\n").replace(
            "```{toctree}\n", "```{toctree}\n:caption: Directives\n"
        )
    )
    app, log = sphinx_build(root)
    out = Path(app.outdir)
    pages = {p.relative_to(out).as_posix(): p for p in sorted(out.rglob("*.html"))}
    markup = {name: Markup(p.read_text()) for name, p in pages.items()}
    yield SimpleNamespace(out=out, pages=pages, log=log, markup=markup)
    app.cleanup()


def test_the_checks_below_see_what_they_look_for():
    page = Markup(
        '<div id="a"><table id="a"></table></div><p class="caption" role="heading">x</p>'
        '<meta name="description" content="d"><a href="b.html#c">c</a>'
    )
    assert page.duplicate_ids() == ["a"] and page.unlevelled and page.descriptions == ["d"]
    assert page.links == ["b.html#c"]


def test_no_page_holds_an_id_twice_nor_does_what_it_loads_later(site):
    assert len(site.pages) >= 15
    twice = {name: m.duplicate_ids() for name, m in site.markup.items() if m.duplicate_ids()}
    assert twice == {}
    for name, page in site.pages.items():
        for key, part in parts(page, site.out).items():
            for text in strings(part):
                assert Markup(text).duplicate_ids() == [], f"{name}, part {key}"


def test_a_table_s_wrapper_leaves_its_id_to_the_table_and_unrelated_ids_are_left_alone():
    document = new_document("<test>", get_default_settings(Parser))
    table = nodes.table(ids=["id1"])
    wrapper = nodes.container(ids=["id1", "wrapper-own"], classes=["table-wrapper"])  # as furo copies them
    wrapper += table
    document += wrapper
    document += nodes.paragraph(ids=["twice"])
    document += nodes.paragraph(ids=["twice"])  # not nested: a defect of its own, not this transform's to hide
    OneElementPerId(document).run()
    assert wrapper["ids"] == ["wrapper-own"] and table["ids"] == ["id1"]
    assert [p["ids"] for p in document.findall(nodes.paragraph)] == [["twice"], ["twice"]]


def test_every_heading_role_has_its_level(site):
    caption = re.search(r'<p [^>]*class="caption"[^>]*>', site.pages["index.html"].read_text())[0]  # the sidebar's
    assert 'role="heading"' in caption and 'aria-level="2"' in caption
    unlevelled = {name: m.unlevelled for name, m in site.markup.items() if m.unlevelled}
    assert unlevelled == {}


def test_every_page_has_a_description_from_its_own_text(site):
    missing = [name for name, m in site.markup.items() if len(m.descriptions) != 1 or not m.descriptions[0].strip()]
    assert missing == []
    described = {name: m.descriptions[0] for name, m in site.markup.items()}
    assert described["index.html"] == INTRO
    assert described["search.html"] == INTRO  # a page with no text of its own: the site's
    # a claim's script page: the claim's proposition (kb.RECORD), not the script's text
    proposition = "The proposition of claim kb-holds, which is checked by its script."
    assert described["docs/auto_gallery/kb_holds.html"] == proposition
    accelerator = described["docs/accelerators/xla.html"]
    assert accelerator.startswith("torch_xla: lazy tensors")  # the first thing the page says
    assert described["docs/measured.html"] == "measured"  # a table and no prose: the page's title
    assert all(len(text) <= DESCRIPTION_CHARS for text in described.values())


def test_a_description_is_the_first_paragraph_of_prose_cut_at_a_word():
    document = new_document("<test>", get_default_settings(Parser))
    cell = nodes.table()
    cell += nodes.paragraph("", "a cell")
    document += cell
    document += nodes.paragraph("", "", nodes.raw("", "<b>markup</b>", format="html"), nodes.Text("  The  words.\n"))
    assert first_paragraph(document) == "The words."
    assert first_paragraph(new_document("<empty>", get_default_settings(Parser))) == ""
    assert shortened("one two three", 9) == "one two…"
    assert shortened("one two", 9) == "one two"


def test_every_link_into_the_evidence_lands_on_an_anchor_the_page_holds_without_javascript(site):
    hrefs = []  # (page, link, the ids beside the link: a part's own links may name what the part holds)
    for name, page in site.pages.items():
        hrefs += [(name, href, set()) for href in site.markup[name].links]
        for part in parts(page, site.out).values():
            for text in strings(part):
                markup = Markup(text)
                hrefs += [(name, href, set(markup.ids)) for href in markup.links]
    broken, evidence = [], 0
    for name, href, beside in hrefs:
        target, _, fragment = href.partition("#")
        if not fragment or re.match(r"[a-z]+:", target):
            continue
        resolved = (Path(name).parent / target).as_posix() if target else name
        resolved = re.sub(r"[^/]+/\.\./", "", resolved)
        if resolved not in site.markup:
            continue
        evidence += fragment.startswith("claim-") and fragment.count("--") >= 1
        if fragment not in site.markup[resolved].ids and not (resolved == name and fragment in beside):
            broken.append(f"{name} -> {href}")
    assert evidence >= 5 and broken == []


def test_anchors_only_a_loaded_part_holds_are_named_when_the_page_is_written(tmp_path, monkeypatch):
    warned = []
    monkeypatch.setattr(page_data, "warn", lambda message, subtype: warned.append(message))
    app = SimpleNamespace(outdir=str(tmp_path))
    part = '<table id="id3"><tr id="claim-a--cpu--torch-2-9-0"></tr><tr id="claim-a--xla"></tr></table>'
    stand_in = '<!--tc-fallback--><span id="claim-a--xla"></span><!--/tc-fallback-->'
    context = {"body": f"<p>before</p><!--tc-later html claim-a--runs-->{part}{stand_in}<!--/tc-later-->"}
    page_data.write_parts(app, "docs/topic", "page.html", context, None)
    assert len(warned) == 1 and "claim-a--cpu--torch-2-9-0" in warned[0] and "claim-a--xla" not in warned[0]
    assert "id3" not in warned[0]  # a table's own id: no link names it
    assert '<span id="claim-a--xla"></span></div>' in context["body"]  # the stand-in stays in the page
    assert "tc-fallback" not in (tmp_path / page_data.DATA_DIR / "page-docs-topic.js").read_text()


def test_the_build_warns_about_no_anchor_left_to_javascript(site):
    assert "page-data" not in site.log and "exist only once a script loads" not in site.log, site.log
