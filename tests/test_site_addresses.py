"""The site's addresses have one home, which both the site and `torchclaims check` use."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import torchclaims
from torchclaims import site_addresses
from torchclaims.errors import UsageError
from torchclaims.site_addresses import Links, evidence_anchor, row_anchor, site_address

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
    assert ADDRESSING >= {"slug", "claim_anchor", "evidence_anchor", "matrix_anchor", "row_anchor", "site_address"}
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
    assert site_address(None, environ).base == "https://site.example/"
    assert site_address("https://other.example/x", environ).base == "https://other.example/x/"
    assert site_address("", environ).base == ""  # an empty option: paths from the site's root
    assert site_address(None, {}).base == ""


def project(tmp_path: Path, setting: str = "", built: bool = False) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "kb"\n\n[tool.torchclaims]\n{setting}\n')
    if built:
        (tmp_path / "_build" / "html").mkdir(parents=True)
        (tmp_path / "_build" / "html" / "index.html").write_text("<html></html>")
    return tmp_path


def test_without_option_or_environment_the_projects_own_address_then_its_built_site_give_absolute_links(tmp_path):
    configured = project(tmp_path / "a", 'site-url = "https://kb.example/site"', built=True)
    address = site_address(None, {}, configured)
    assert address.base == "https://kb.example/site/"
    assert address.describe() == "https://kb.example/site/ (site-url in pyproject.toml)"
    assert (
        site_address(None, {site_addresses.SITE_URL_VAR: "https://env.example"}, configured).base
        == "https://env.example/"
    )
    built = project(tmp_path / "b", built=True)
    assert site_address(None, {}, built).base == (built / "_build" / "html").resolve().as_uri() + "/"
    assert Links(site_address(None, {}, built).base).page("docs/check").startswith("file:///")
    bare = project(tmp_path / "c")
    address = site_address(None, {}, bare)
    assert address.base == ""
    assert address.describe().startswith("paths from the site's root (no address: give --site-url")


@pytest.mark.parametrize(
    "setting, says",
    [
        ('site-url = "ftp://kb.example/"', "must be an http(s) address of the published site, not 'ftp://kb.example/'"),
        ('site-url = "kb.example"', "must be an http(s) address"),
        ("site-url = 3", "must be text (an https:// address), not int"),
    ],
)
def test_a_bad_site_url_setting_is_an_error_naming_the_file_and_the_field(tmp_path, setting, says):
    root = project(tmp_path, setting, built=True)
    with pytest.raises(UsageError) as raised:
        site_address(None, {}, root)
    assert str(raised.value).startswith(f"{root / 'pyproject.toml'}: [tool.torchclaims] site-url ")
    assert says in str(raised.value)
    (root / "pyproject.toml").write_text("[tool.torchclaims\n")
    with pytest.raises(UsageError, match="pyproject.toml: not readable TOML"):
        site_address(None, {}, root)
