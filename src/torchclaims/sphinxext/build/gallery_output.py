"""What a script printed, bounded on its gallery page.

The build writes each example page with every line a code block printed in
a literal block of class ``sphx-glr-script-out`` (torchclaims.run.gallery_page).
At ``doctree-read``, on each example page, those blocks are cut once the
page holds ``page_output_bytes`` of them, in page order, with a mark where
it was cut. This runs in the Sphinx process, out of the script's reach; the
page's source keeps the whole output, the doctree and the HTML do not.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx

from ... import limits
from .gallery_safety import example_script

OUTPUT_CLASS = "sphx-glr-script-out"


def cut_mark(limit: int) -> str:
    return f"[… output cut here: a page shows at most {limit:,} bytes of a script's output]"


def _retext(block: nodes.literal_block, text: str) -> None:
    block.replace_self(nodes.literal_block(text, text, **block.attributes))


def bound_output(doctree: nodes.document, limit: int) -> bool:
    """Keep the first ``limit`` UTF-8 bytes of the output blocks, in page order;
    each block past the limit shows the mark instead. Say whether any was cut."""
    remaining, cut = limit, False
    for block in list(doctree.findall(nodes.literal_block)):
        if OUTPUT_CLASS not in block["classes"]:
            continue
        data = block.astext().encode("utf-8", "replace")
        if len(data) <= remaining:
            remaining -= len(data)
            continue
        kept = data[:remaining].decode("utf-8", "ignore")
        remaining, cut = 0, True
        _retext(block, f"{kept}\n{cut_mark(limit)}" if kept else cut_mark(limit))
    return cut


def on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    if example_script(app, app.env.docname) is not None:
        bound_output(doctree, limits.LIMITS.page_output_bytes)


def setup_gallery_output(app: Sphinx) -> None:
    app.connect("doctree-read", on_doctree_read)
