"""Parts of a page written beside it (sphinxext/build/page_data.py): cut out of the page, into its one data file."""

from __future__ import annotations

import json
from types import SimpleNamespace

from docutils import nodes

from torchclaims.sphinxext.build.page_data import DATA_DIR, later, later_markup, write_parts


def _payload(path) -> dict:
    return json.loads(path.read_text(encoding="utf-8").partition('"] = ')[2].strip().removesuffix(";"))


def test_parts_go_to_the_page_data_file_and_leave_a_placeholder(tmp_path):
    pieces = {("matrix-a", "cpu"): [nodes.Text("2.12.0")], ("matrix-b", "xla"): []}
    runs = later("claim-a--runs", [], "Every record loads here.")
    doctree = nodes.container("", runs, later_markup("matrix", pieces))
    body = (
        "<p>before</p><!--tc-later html claim-a--runs-->"
        "<table>rows &lt;!--/tc-later--&gt; forged in a record</table><!--/tc-later-->"
        "<!--tc-later markup matrix--><!--tc-datum 1--><span>2.9.0</span><!--/tc-datum-->"
        "<!--tc-datum 0--><span>2.12.0 &lt;!--/tc-datum--&gt;</span><!--/tc-datum--><!--/tc-later--><p>after</p>"
    )
    context = {"body": body}
    write_parts(SimpleNamespace(outdir=str(tmp_path)), "docs/topics/x", "page.html", context, doctree)
    page = context["body"]
    assert (
        "<table>" not in page
        and "2.12.0" not in page
        and page.startswith("<p>before</p>")
        and page.endswith("<p>after</p>")
    )
    assert (
        '<div class="tc-later" data-tc-later="page-docs-topics-x" '
        'data-tc-src="../../_static/data/page-docs-topics-x.js" '
        'data-tc-key="claim-a--runs"><p>Every record loads here.</p></div>'
    ) in page
    parts = _payload(tmp_path / DATA_DIR / "page-docs-topics-x.js")
    assert parts == {
        "claim-a--runs": "<table>rows &lt;!--/tc-later--&gt; forged in a record</table>",
        "matrix": {  # each piece under its own datum's path, whatever order it is written in
            "matrix-a": {"cpu": "<span>2.12.0 &lt;!--/tc-datum--&gt;</span>"},
            "matrix-b": {"xla": "<span>2.9.0</span>"},
        },
    }


def test_a_page_without_parts_is_left_as_it_is_and_its_old_data_file_goes(tmp_path):
    old = tmp_path / DATA_DIR / "page-index.js"
    old.parent.mkdir(parents=True)
    old.write_text("stale")
    context = {"body": "<p>nothing deferred</p>"}
    write_parts(SimpleNamespace(outdir=str(tmp_path)), "index", "page.html", context, None)
    assert context["body"] == "<p>nothing deferred</p>" and not old.exists()
