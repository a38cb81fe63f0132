"""The site's addresses have one home, which both the site and `torchclaims check` use."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import torchclaims
from torchclaims import site_addresses
from torchclaims.site_addresses import Links, evidence_anchor, row_anchor, site_base

PACKAGE = Path(torchclaims.__file__).resolve().parent
HOME = Path(site_addresses.__file__).resolve()
OWN = inspect.getmembers(site_addresses, inspect.isfunction)
ADDRESSING = {name for name, f in OWN if f.__module__ == site_addresses.__name__}


def copies(package: Path = PACKAGE, home: Path = HOME) -> list[str]:
    """Functions elsewhere in the package named as one of site_addresses' own: a copy that can drift."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.resolve() == home:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in ADDRESSING:
                found.append(f"{path.relative_to(package)}:{node.lineno} {node.name}")
    return found


def test_no_module_keeps_its_own_copy_of_an_address():
    assert ADDRESSING >= {"slug", "claim_anchor", "evidence_anchor", "matrix_anchor", "row_anchor", "site_base"}
    assert copies() == []


def test_a_copy_is_found(tmp_path):
    (tmp_path / "check").mkdir()
    (tmp_path / "check" / "links.py").write_text("def slug(text):\n    return text\n")
    assert copies(tmp_path) == ["check/links.py:1 slug"]


def test_check_links_to_the_anchors_the_site_gives():
    claim = type("Claim", (), {"id": "xla-chunk-cat", "topic": "compile"})()
    link = Links("https://x.example/").evidence(claim, "xla", "torch_xla 2.9.0")
    anchor = evidence_anchor("xla-chunk-cat", "xla", "torch_xla 2.9.0")
    assert link == f"https://x.example/docs/topics/compile.html#{anchor}"
    assert link.endswith("#claim-xla-chunk-cat--xla--torch-xla-2-9-0")
    assert (
        Links("https://x.example/").row("operators", "a b")
        == "https://x.example/docs/coverage/operators.html?row=a%20b"
    )
    assert row_anchor("a b") == "row-a%20b"  # the page's anchor for the row ?row= opens


def test_the_site_address_comes_from_the_option_else_the_environment_else_nowhere():
    environ = {site_addresses.SITE_URL_VAR: " https://site.example "}
    assert site_base(None, environ) == "https://site.example/"
    assert site_base("https://other.example/x", environ) == "https://other.example/x/"
    assert site_base("", environ) == ""  # an empty option: paths from the site's root
    assert site_base(None, {}) == ""
