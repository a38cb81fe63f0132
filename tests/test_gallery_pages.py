"""Generated example pages follow their scripts (sphinx-gallery keeps orphans)."""

from torchclaims.sphinxext.build.state import remove_orphan_pages


def test_pages_of_removed_scripts_and_helpers_are_deleted(tmp_path):
    out, src = tmp_path / "out", tmp_path / "src"
    (out / "images" / "thumb").mkdir(parents=True)
    src.mkdir()
    (src / "kept.py").write_text("")
    (src / "_helper.py").write_text("")
    for stem in ("kept", "gone", "_helper"):
        for suffix in (".rst", ".py", ".py.md5", ".codeobj.json", ".zip"):
            (out / f"{stem}{suffix}").write_text("")
        (out / "images" / f"sphx_glr_{stem}_001.png").write_text("")
        (out / "images" / "thumb" / f"sphx_glr_{stem}_thumb.png").write_text("")
    (out / "index.rst").write_text("")

    assert remove_orphan_pages(out, src) == ["_helper", "gone"]

    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert left == [
        "images/sphx_glr_kept_001.png",
        "images/thumb/sphx_glr_kept_thumb.png",
        "index.rst",
        "kept.codeobj.json",
        "kept.py",
        "kept.py.md5",
        "kept.rst",
        "kept.zip",
    ]
