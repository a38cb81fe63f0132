"""What Sphinx reads to make pages: an example page's title shows no hidden character, and no
source is a link out of the repository. Both are checked here without a site build; the built
site's own tests (test_hostile_site) read the pages."""

from __future__ import annotations

from torchclaims.sphinxext.build.gallery_safety import neutralise_page
from torchclaims.sphinxext.build.source_links import links_out

EXCLUDE = ["_build", ".*", "**/.*", "gallery", "claims", "results"]


def test_an_example_page_title_shows_its_hidden_characters(tmp_path):
    """The title of a script's docstring becomes the page's <title> and <h1>."""
    title = "Claim \u202eTXET\u200b\ufeff\u2028holds"
    script = tmp_path / "a_claim.py"
    script.write_text(f'"""\n{title}\n{"=" * len(title)}\n\nText.\n"""\nx = 1  # \u2066code\u2069\n')
    page = f"{title}\n{'=' * len(title)}\n\nText.\n\n.. code-block:: Python\n\n    x = 1  # \u2066code\u2069\n"
    shown, reasons = neutralise_page(page, script)
    assert reasons == []
    first, underline = shown.splitlines()[:2]
    assert first == "Claim \ufffdTXET\ufffd\ufffd holds" and len(underline) == len(first)  # still a title
    assert "x = 1  # \ufffdcode\ufffd" in shown


def test_a_source_linked_out_of_the_repository_is_named(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_ed25519").write_text("a key")
    (outside / "folder").mkdir()
    (outside / "folder" / "page.md").write_text("# elsewhere")
    root = tmp_path / "repo"
    (root / "docs" / "img").mkdir(parents=True)
    (root / "_static").mkdir()
    (root / "index.md").write_text("# home")
    (root / "docs" / "page.md").write_text("# a page")
    (root / "docs" / "inside.md").symlink_to(root / "docs" / "page.md")  # within the repository: read
    (root / "docs" / "img" / "key.png").symlink_to(outside / "id_ed25519")
    (root / "docs" / "more").symlink_to(outside / "folder")
    (root / "_static" / "style.css").symlink_to(outside / "id_ed25519")
    (root / ".nox").mkdir()
    (root / ".nox" / "python").symlink_to(outside / "id_ed25519")  # not read by Sphinx: excluded
    found = links_out(root, ["index.md", "docs/**"], EXCLUDE, ["_static", "/elsewhere/absolute"])
    assert sorted(line.split(":")[0] for line in found) == [
        "_static/style.css",
        "docs/img/key.png",
        "docs/more/page.md",
    ]
    assert all("outside the repository; it is not read" in line for line in found)
    assert links_out(root, ["index.md", "docs/page.md"], EXCLUDE, []) == []


def test_the_build_stops_before_reading_naming_the_link(tmp_path):
    import inspect

    import pytest

    from torchclaims import sphinxext
    from torchclaims.sphinxext.build import source_links

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "leak.md").symlink_to(tmp_path.parent / "elsewhere.md")

    class Config:
        include_patterns, exclude_patterns = ["docs/**"], EXCLUDE
        templates_path, html_static_path, html_extra_path = [], [], []

    class App:
        srcdir = str(tmp_path)

    with pytest.raises(
        source_links.LinkOutOfRepository, match="docs/leak.md: is a link to .*elsewhere.md, outside the repository"
    ):
        source_links._check(App(), Config())
    assert "setup_source_links(app)" in inspect.getsource(sphinxext.setup)  # every build runs it
