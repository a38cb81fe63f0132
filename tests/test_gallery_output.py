"""A script's output on its gallery page is bounded (torchclaims.sphinxext.build.gallery_output), a
staged page too large to parse is not read, and the staged thumbnail is taken only as a PNG file
(torchclaims.run.gallery_page)."""

from __future__ import annotations

import os
import runpy
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import sphinx_gallery.gen_rst
from docutils import nodes
from docutils.core import publish_doctree
from sphinx_gallery.gen_gallery import fill_gallery_conf_defaults

from torchclaims.run.gallery_page import WITHHELD, _read, write_page
from torchclaims.sphinxext.build.gallery_output import OUTPUT_CLASS, bound_output, cut_mark

ROOT = Path(__file__).resolve().parents[1]


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


def _page_folders(tmp_path: Path) -> tuple[dict, Path, Path, Path]:
    """The site's sphinx-gallery configuration for a source folder with one script
    (gallery/kb_thumb.py), its gallery folder, an empty staged folder and a scratch folder."""
    config = SimpleNamespace(
        sphinx_gallery_conf=runpy.run_path(str(ROOT / "conf.py"))["sphinx_gallery_conf"],
        html_static_path=[],
        templates_path=[],
    )
    fill_gallery_conf_defaults(None, config)
    conf = dict(config.sphinx_gallery_conf, src_dir=str(tmp_path))
    (tmp_path / "gallery").mkdir()
    (tmp_path / "gallery" / "kb_thumb.py").write_text('"""\nThumb\n=====\n"""\nprint(1)\n')
    staged = tmp_path / "staged"
    (staged / "images" / "thumb").mkdir(parents=True)
    return conf, tmp_path / "docs" / "auto_gallery", staged, tmp_path / "scratch"


THUMB = Path("images", "thumb", "sphx_glr_kb_thumb_thumb.png")
SCRIPT_THUMB = b"\x89PNG\r\n\x1a\n the script's own thumbnail"


def _write_page(conf: dict, target: Path, staged: Path, scratch: Path) -> None:
    write_page("kb_thumb.py", str(Path(conf["src_dir"]) / "gallery"), target, conf, staged, scratch)


def test_the_scripts_thumbnail_is_kept_and_no_other_is_made(tmp_path, monkeypatch):
    """sphinx-gallery keeps a thumbnail it finds where it would write one; scaling its
    default image again for every page cost the build's main process ~20 ms a page."""
    conf, target, staged, scratch = _page_folders(tmp_path)
    (staged / THUMB).write_bytes(SCRIPT_THUMB)
    scaled = []
    monkeypatch.setattr(sphinx_gallery.gen_rst, "scale_image", lambda *args, **kwargs: scaled.append(args))
    _write_page(conf, target, staged, scratch)
    assert (target / THUMB).read_bytes() == SCRIPT_THUMB
    assert scaled == []


def _written_in_time(conf: dict, target: Path, staged: Path, scratch: Path, fifos: list[Path]) -> bool:
    writer = threading.Thread(target=_write_page, args=(conf, target, staged, scratch), daemon=True)
    writer.start()
    writer.join(60)
    stuck = writer.is_alive()
    for fifo in fifos if stuck else []:  # a writer's end for the FIFO it waits on, so the test process can end
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # nothing reads this one
    return not stuck


@pytest.mark.parametrize("staged_as", ["missing", "not a PNG", "a link to a PNG"])
def test_without_a_staged_png_file_the_page_gets_sphinx_gallerys_default_thumbnail(tmp_path, staged_as):
    conf, target, staged, scratch = _page_folders(tmp_path)
    if staged_as == "not a PNG":
        (staged / THUMB).write_bytes(b"GIF89a")
    elif staged_as == "a link to a PNG":
        (tmp_path / "elsewhere.png").write_bytes(SCRIPT_THUMB)
        os.symlink(tmp_path / "elsewhere.png", staged / THUMB)
    _write_page(conf, target, staged, scratch)
    made = (target / THUMB).read_bytes()
    assert made.startswith(b"\x89PNG\r\n\x1a\n") and made != SCRIPT_THUMB and not (target / THUMB).is_symlink()


def test_staged_fifos_are_never_opened(tmp_path):
    """Once the script has ended nothing writes to a FIFO it left, so opening one
    would keep the build's main process waiting forever."""
    conf, target, staged, scratch = _page_folders(tmp_path)
    fifos = [staged / name for name in ("kb_thumb.rst", "kb_thumb.cost.json", "images/sphx_glr_kb_thumb_001.png")]
    fifos.append(staged / THUMB)
    for fifo in fifos:
        os.mkfifo(fifo)
    assert _written_in_time(conf, target, staged, scratch, fifos), "writing the page waited on a staged FIFO"
    assert (target / THUMB).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "Thumb" in (target / "kb_thumb.rst").read_text()


CONTRACT_SCRIPT = '''"""
Contract
========

What sphinx-gallery writes for a script that prints and draws.
"""

print("first block printed")

# %%
# A second block, with a figure and the repr of its last value.

import matplotlib

matplotlib.use("agg")
import matplotlib.pyplot as plt

plt.plot([1, 2, 3])
print("second block printed")
"last value"
'''


def _contract_page(tmp_path: Path, reworded: tuple[str, str] = ("", "")) -> str:
    """The page the build writes for CONTRACT_SCRIPT after sphinx-gallery ran it as a script's
    process does (torchclaims.run._child); ``reworded`` replaces text of the staged page first."""
    from sphinx_gallery.gen_rst import generate_file_rst

    conf, target, _, scratch = _page_folders(tmp_path)
    (tmp_path / "gallery" / "kb_thumb.py").write_text(CONTRACT_SCRIPT)
    # The script's process writes beneath a folder of its own, in the layout of the source folder.
    run_dir = tmp_path / "run"
    staged = run_dir / target.relative_to(tmp_path)
    staged.mkdir(parents=True)
    run_conf = dict(conf, src_dir=str(run_dir), filename_pattern=".*", plot_gallery=True)
    run_conf.update(run_stale_examples=True, abort_on_example_error=False, capture_repr=("__repr__",))
    generate_file_rst("kb_thumb.py", str(staged), str(tmp_path / "gallery"), run_conf)
    if reworded[0]:
        (staged / "kb_thumb.rst").write_text((staged / "kb_thumb.rst").read_text().replace(*reworded))
    _write_page(conf, target, staged, scratch)
    return (target / "kb_thumb.rst").read_text()


def test_the_page_sphinx_gallery_writes_for_a_run_is_parsed_into_the_built_page(tmp_path):
    """The contract with sphinx-gallery's generated rST (its line markers, output and image
    directives, timing line and footer), on the release installed: the page the build writes
    shows each block's output after that block, its figure, and its running time.
    benchmarks/sphinx_gallery_releases.py runs this file against each release in the pinned range."""
    page = _contract_page(tmp_path)
    assert WITHHELD not in page and "GENERATED FROM PYTHON SOURCE LINES" in page
    first, second = page.index("    first block printed\n"), page.index("    second block printed\n")
    assert page.index('print("first block printed")') < first < page.index("plt.plot([1, 2, 3])") < second
    assert page.count(".. rst-class:: sphx-glr-script-out") == 2  # one a block: what it printed, then the repr
    assert "'last value'" in page and "sphx_glr_kb_thumb_001.png" in page
    assert (tmp_path / "docs" / "auto_gallery" / "images" / "sphx_glr_kb_thumb_001.png").read_bytes()[:4] == b"\x89PNG"
    assert "**Total running time of the script:** (0 minutes" in page
    assert page.index("Total running time") < page.index(".. _sphx_glr_download_")


@pytest.mark.parametrize(
    "reworded, lost",
    [
        (("GENERATED FROM PYTHON SOURCE LINES", "MADE FROM LINES"), "    first block printed\n"),
        (("Total running time of the script", "Time taken"), "Total running time"),
    ],
)
def test_a_release_that_words_its_page_otherwise_fails_the_contract(tmp_path, reworded, lost):
    """What the test above would see from a release that changed its markers or timing line."""
    assert lost not in _contract_page(tmp_path, reworded)
