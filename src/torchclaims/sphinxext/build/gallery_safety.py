"""Script text and links that would run on a reader's browser never render.

Lint rejects raw HTML, includes and ``javascript:`` links in gallery text
(torchclaims.authoring.gallery_text); the build does not rely on lint having run:

- ``source-read``: before a generated example page is parsed, each text block
  of its script that holds such markup is replaced by the same text as a
  literal block (the reader sees it, nothing renders). A page whose blocks
  cannot be found in its source is withheld rather than shown unchecked. The
  whole page, its title included, is then shown as torchclaims.text_safety
  shows data: bidi controls, zero-width characters and the BOM as U+FFFD.
- ``doctree-read``: on every page, links to ``javascript:``, ``vbscript:`` or
  ``data:`` addresses become plain text; on example pages, raw HTML that holds
  a script, an event handler or such a link becomes a literal block.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

from ...authoring.gallery_text import unsafe_markup
from ...project import GALLERY
from ...text_safety import shown
from .state import get_state, warn

_SCRIPT_URI = re.compile(r"^\s*(javascript|vbscript|data)\s*:", re.IGNORECASE)
_ACTIVE_HTML = re.compile(r"<\s*(script|iframe|object|embed)\b|\son\w+\s*=|(javascript|vbscript)\s*:", re.IGNORECASE)


def as_text(block: str) -> str:
    """A text block shown literally (its title kept as a title), with a note saying why."""
    lines = block.splitlines()
    title = []
    if len(lines) > 1 and lines[0].strip() and re.fullmatch(r"([=\-~^])\1{2,}\s*", lines[1]):
        title, lines = lines[:2], lines[2:]
    note = ".. note:: This text block of the script holds raw markup or a script link; it is shown as text."
    body = textwrap.indent("\n".join(lines), "    ", lambda line: True)
    return "\n".join(title + ["", note, "", ".. code-block:: text", "", body, ""])


def neutralise_page(source: str, script: Path) -> tuple[str, list[str]]:
    """The generated page source with the script's unsafe text blocks as literal text,
    and its title (the page's ``<title>`` and ``<h1>``), text and code as text_safety shows them."""
    from sphinx_gallery.py_source_parser import split_code_and_text_blocks

    _, blocks = split_code_and_text_blocks(str(script))[:2]
    reasons = []
    for block in blocks:
        if block.type != "text":
            continue
        found = unsafe_markup(block.content)
        if not found:
            continue
        reasons.extend(why for _, why in found)
        if block.content.strip() not in source:
            withheld = f"{script.stem}\n{'=' * len(script.stem)}\n\n" + as_text("the page of this script is withheld")
            return withheld, reasons + ["its text could not be located on the page, so the page is withheld"]
        source = source.replace(block.content.strip(), as_text(block.content.strip()).strip())
    return shown(source), reasons


def example_script(app: Sphinx, docname: str) -> Path | None:
    """The script whose generated example page ``docname`` is (None: not an example page)."""
    if not docname.startswith(f"{get_state(app.env).gallery_dir}/"):
        return None
    script = Path(app.confdir, GALLERY, f"{Path(docname).name}.py")
    return script if script.is_file() else None


def on_source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    script = example_script(app, docname)
    if script is None:
        return
    try:
        source[0], reasons = neutralise_page(source[0], script)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        source[0], reasons = f"{script.stem}\n{'=' * len(script.stem)}\n\nThe script could not be read.\n", [str(exc)]
    for why in dict.fromkeys(reasons):
        warn(f"gallery/{script.name}: {why}; shown as text", "markup", location=docname)


def on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    docname = app.env.docname
    for reference in list(doctree.findall(nodes.reference)):
        if _SCRIPT_URI.match(reference.get("refuri", "")):
            warn(f"a link to {reference['refuri'][:40]!r} is shown as text", "markup", location=reference)
            reference.replace_self(nodes.Text(reference.astext()))
    if not docname.startswith(f"{get_state(app.env).gallery_dir}/"):
        return
    for raw in list(doctree.findall(nodes.raw)):
        if _ACTIVE_HTML.search(raw.astext()):
            warn("raw HTML with a script, event handler or script link is shown as text", "markup", location=raw)
            raw.replace_self(nodes.literal_block(raw.astext(), raw.astext()))


def setup_gallery_safety(app: Sphinx) -> None:
    app.connect("source-read", on_source_read)
    app.connect("doctree-read", on_doctree_read)
