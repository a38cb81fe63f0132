"""The build's settings are checked once, when Sphinx has read them, and a bad one stops it with Sphinx's own error."""

from __future__ import annotations

import ast
from io import StringIO
from pathlib import Path

import pytest
from sphinx.errors import ConfigError
from sphinx.testing.util import SphinxTestApp

import torchclaims.sphinxext
from torchclaims.sphinxext.build import state

EXTENSION = Path(torchclaims.sphinxext.__file__).parent


def test_a_bad_setting_stops_the_build_at_config_inited_naming_the_setting(tmp_path, monkeypatch):
    (tmp_path / "conf.py").write_text('extensions = ["torchclaims.sphinxext"]\ntorchclaims_timeout = "soon"\n')
    (tmp_path / "index.md").write_text("# Index\n")
    prepared = []
    monkeypatch.setattr(state, "prepare", prepared.append)  # builder-inited: reached only past the check
    with pytest.raises(ConfigError, match=r"torchclaims_timeout \(TORCHCLAIMS_TIMEOUT\) must be a number of seconds"):
        SphinxTestApp("html", srcdir=tmp_path, status=StringIO(), warning=StringIO())
    assert prepared == []


def system_exits(package: Path = EXTENSION) -> list[str]:
    """Where the extension raises SystemExit or calls sys.exit / exit: Sphinx reports neither."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
            if name in ("SystemExit", "exit", "_exit"):
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    return sorted(found)


def test_no_event_handler_exits_the_process():
    assert system_exits() == []


def test_an_exit_in_the_extension_is_found(tmp_path):
    handlers = "import sys\n\ndef f(app):\n    sys.exit(2)\n\ndef g(app):\n    raise SystemExit\n"
    (tmp_path / "handler.py").write_text(handlers)
    assert system_exits(tmp_path) == ["handler.py:4", "handler.py:7"]
