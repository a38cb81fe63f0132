"""The Sphinx process runs no script: sphinx-gallery's matplotlib import is skipped
there, and a figure a script draws still reaches its gallery page."""

from __future__ import annotations

import pytest

from kb import build, write_claim, write_site

pytestmark = pytest.mark.processes  # a Sphinx build of a small knowledge base

PROBE = """
import sys

def _report(app, exception):
    with open(app.confdir + "/modules-after-build.txt", "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
def setup(app):
    app.connect("build-finished", _report)
"""


def test_a_script_figure_reaches_its_page_and_the_sphinx_process_imports_no_matplotlib(tmp_path):
    write_site(tmp_path)
    (tmp_path / "conf.py").write_text((tmp_path / "conf.py").read_text() + PROBE)
    write_claim(tmp_path, "kb-figure", "figure")
    result = build(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    page = (tmp_path / "_build" / "html" / "docs" / "auto_gallery" / "kb_figure.html").read_text()
    assert "sphx_glr_kb_figure_001.png" in page
    assert (tmp_path / "_build" / "html" / "_images" / "sphx_glr_kb_figure_001.png").stat().st_size > 1000
    imported = set((tmp_path / "modules-after-build.txt").read_text().split())
    assert "matplotlib" not in imported and "torch" not in imported
