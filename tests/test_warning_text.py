"""Sphinx's and docutils' own warnings quote page text; a control character in
it reaches the terminal escaped (torchclaims.sphinxext.build.warning_text), never raw."""

from __future__ import annotations

import io
import re

import pytest
from sphinx.application import Sphinx

# A title that would erase the screen and write the clipboard (OSC 52), with an
# underline too short: docutils' warning quotes the title's lines.
PAGE = "Title\x1b[2J\x1b]52;c;aGk=\x07 here\n=====\n\nText.\n"
SPHINX_COLOUR = re.compile(r"\x1b\[[\d;]*m")  # what Sphinx itself adds around a warning line
WITH_FILTER = """
def setup(app):
    from torchclaims.sphinxext.build.warning_text import setup_warning_text
    setup_warning_text(app)
"""


@pytest.mark.parametrize("escaped", [True, False])
def test_a_warning_quoting_a_page_reaches_the_terminal_with_its_controls_escaped(tmp_path, escaped):
    """Without the filter the warning holds the raw controls: what makes the case a test."""
    (tmp_path / "conf.py").write_text(WITH_FILTER if escaped else "")
    (tmp_path / "index.rst").write_text(PAGE, encoding="utf-8")
    warnings = io.StringIO()
    app = Sphinx(tmp_path, tmp_path, tmp_path / "_build", tmp_path / "_doctrees", "html",
                 status=io.StringIO(), warning=warnings, freshenv=True)  # fmt: skip
    app.build()
    text = SPHINX_COLOUR.sub("", warnings.getvalue())
    assert "Title underline too short" in text, text
    assert ("\x1b" not in text and "\x07" not in text) is escaped, text
    if escaped:
        assert "Title\\x1b[2J\\x1b]52;c;aGk=\\x07 here" in text
        assert "index.rst:" in text  # the location kept, once
