"""The project uses sphinx-gallery through its public names only: no name
starting with an underscore is imported from it, read from it or patched into
it, so an upgrade within the pinned range cannot break a private contract."""

from __future__ import annotations

from pathlib import Path

from private_names import uses

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "sphinx_gallery"


def private_uses(source: str) -> list[str]:
    """Each private sphinx-gallery name ``source`` imports, reads or sets, as its full dotted name."""
    return [name for name, _ in uses(source, PACKAGE)]


def test_the_project_uses_no_private_sphinx_gallery_name():
    files = [
        *sorted((ROOT / "src").rglob("*.py")),
        ROOT / "conf.py",
        ROOT / "noxfile.py",
        *sorted((ROOT / "benchmarks").rglob("*.py")),
    ]
    found = {
        str(path.relative_to(ROOT)): uses for path in files if (uses := private_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_each_way_of_reaching_a_private_name_is_found():
    source = """
from sphinx_gallery import gen_rst
from sphinx_gallery.gen_rst import _get_last_repr, generate_file_rst
import sphinx_gallery.gen_rst as rst
import sphinx_gallery._private
from sphinx_gallery._private import helper

class BoundedTee(gen_rst._LoggingTee):
    pass

gen_rst._get_last_repr = len
rst._exec_once(1)
setattr(gen_rst, "_LoggingTee", BoundedTee)
generate_file_rst.__name__, gen_rst.CODE_OUTPUT, gen_rst.__version__  # public
"""
    assert sorted(private_uses(source)) == [
        "sphinx_gallery._private",
        "sphinx_gallery._private.helper",
        "sphinx_gallery.gen_rst._LoggingTee",  # the base class
        "sphinx_gallery.gen_rst._LoggingTee",  # setattr
        "sphinx_gallery.gen_rst._exec_once",
        "sphinx_gallery.gen_rst._get_last_repr",
        "sphinx_gallery.gen_rst._get_last_repr",  # assigned
    ]


def test_names_of_other_packages_are_not_counted():
    assert (
        private_uses(
            "import multiprocessing\nmultiprocessing.resource_tracker._resource_tracker\n"
            "from sphinx.util import logging\nlogging._x\n"
        )
        == []
    )
