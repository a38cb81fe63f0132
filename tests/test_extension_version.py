"""The extension's environment version follows its code, so Sphinx re-reads every page when the code changes."""

from __future__ import annotations

from torchclaims.sphinxext import _code_version


def test_a_change_in_a_subfolder_of_the_extension_changes_its_version(tmp_path):
    (tmp_path / "views").mkdir()
    (tmp_path / "__init__.py").write_text("")
    module = tmp_path / "views" / "matrix.py"
    module.write_text("WORDS = 1\n")
    before = _code_version(tmp_path)
    module.write_text("WORDS = 2\n")
    assert _code_version(tmp_path) != before


def test_a_module_moved_to_another_folder_changes_its_version(tmp_path):
    (tmp_path / "views").mkdir()
    (tmp_path / "build").mkdir()
    (tmp_path / "views" / "grid.py").write_text("X = 1\n")
    before = _code_version(tmp_path)
    (tmp_path / "views" / "grid.py").rename(tmp_path / "build" / "grid.py")
    assert _code_version(tmp_path) != before
