"""A script's output on its gallery page is bounded (torchclaims.sphinxext.gallery_output), and a
staged page too large to parse is not read (torchclaims.run.gallery_page)."""

from __future__ import annotations

from docutils import nodes
from docutils.core import publish_doctree

from torchclaims.run.gallery_page import _read
from torchclaims.sphinxext.gallery_output import OUTPUT_CLASS, bound_output, cut_mark


def page(*children: nodes.Node) -> nodes.document:
    document = publish_doctree("")
    document.extend(children)
    return document


def output(text: str) -> nodes.literal_block:
    return nodes.literal_block(text, text, classes=[OUTPUT_CLASS], language="none")


def blocks(document: nodes.document) -> list[str]:
    return [block.astext() for block in document.findall(nodes.literal_block)]


def test_output_within_the_limit_is_kept_whole():
    document = page(output("a" * 6), output("b" * 4))
    assert not bound_output(document, 10)
    assert blocks(document) == ["a" * 6, "b" * 4]


def test_output_past_the_limit_is_cut_in_page_order_and_marked():
    code = nodes.literal_block("x" * 50, "x" * 50, language="python")  # the script's code is not its output
    document = page(output("a" * 6), code, output("é" * 4), output("c"), output(""))
    assert bound_output(document, 9)
    mark = cut_mark(9)
    # 6 bytes, then one two-byte character of the next block fits (half a character never does).
    assert blocks(document) == ["a" * 6, "x" * 50, f"é\n{mark}", mark, ""]
    cut = list(document.findall(nodes.literal_block))[2]
    assert cut["classes"] == [OUTPUT_CLASS] and cut["language"] == "none" and cut.rawsource == cut.astext()


def test_a_staged_page_past_its_limit_is_not_read(tmp_path):
    staged = tmp_path / "kb_flood.rst"
    staged.write_bytes(b"x" * 99 + "é".encode())
    assert _read(staged, 101) == "x" * 99 + "é"
    assert _read(staged, 100) is None
    assert _read(tmp_path / "missing.rst", 100) == ""


def test_a_page_staged_past_its_limit_shows_no_output_and_says_why(tmp_path):
    """A script's process writes its staged page (and the script can patch what
    writes it): one too large to parse is not read, and the page says why its
    output is missing."""
    from kb import build, page_text, write_claim, write_site
    from torchclaims import limits

    write_site(tmp_path)
    filler = f"""
import sphinx_gallery.gen_rst as gen_rst
_save = gen_rst.save_rst_example
gen_rst.save_rst_example = lambda example_rst, *args, **kwargs: _save(
    "x" * {limits.LIMITS.staged_page_bytes + 1}, *args, **kwargs
)
print("printed")
with v.check("runs") as check:
    check.expect(True, "")
v.finish()
"""
    write_claim(tmp_path, "kb-filler", filler)
    result = build(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    text = page_text(tmp_path / "_build" / "html" / "docs" / "auto_gallery" / "kb_filler.html")
    assert f"passes {limits.LIMITS.staged_page_bytes:,} bytes (its output), so its output is not shown" in text
    assert "xxxx" not in text and (tmp_path / "docs" / "auto_gallery" / "kb_filler.rst").stat().st_size < 100_000
