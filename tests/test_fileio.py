"""The foundation's file writing: atomic, skipped when the content is already there."""

from __future__ import annotations

import os

import pytest

from torchclaims.fileio import write_if_changed


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp") or p.name.startswith("."))


def test_write_if_changed_creates_missing_file_and_folders(tmp_path):
    path = tmp_path / "a" / "b" / "record.json"
    assert write_if_changed(path, "first\n") is True
    assert path.read_text() == "first\n"
    assert leftovers(path.parent) == []


def test_write_if_changed_leaves_identical_content_and_its_mtime_alone(tmp_path):
    path = tmp_path / "record.json"
    path.write_text("same\n", encoding="utf-8")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    inode = path.stat().st_ino
    assert write_if_changed(path, "same\n") is False
    assert path.stat().st_mtime_ns == 1_000_000_000
    assert path.stat().st_ino == inode
    assert leftovers(tmp_path) == []


def test_write_if_changed_replaces_different_content_atomically(tmp_path):
    path = tmp_path / "record.json"
    path.write_text("old\n", encoding="utf-8")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    inode = path.stat().st_ino
    assert write_if_changed(path, "new\n") is True
    assert path.read_text() == "new\n"
    assert path.stat().st_mtime_ns != 1_000_000_000
    assert path.stat().st_ino != inode  # a new file renamed over the old, not rewritten in place
    assert leftovers(tmp_path) == []


def test_write_if_changed_leaves_no_temporary_file_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "record.json"
    path.write_text("old\n", encoding="utf-8")

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        write_if_changed(path, "new\n")
    assert path.read_text() == "old\n"
    assert leftovers(tmp_path) == []


def test_write_if_changed_gives_the_permissions_of_an_ordinary_write(tmp_path):
    # Records and results files (including the results download written into the HTML
    # output) must be readable like any other file the build writes, not owner-only.
    old_umask = os.umask(0o022)
    try:
        plain = tmp_path / "plain.json"
        plain.write_text("x\n")
        created = tmp_path / "created.json"
        write_if_changed(created, "x\n")
        replaced = tmp_path / "replaced.json"
        replaced.write_text("old\n")
        write_if_changed(replaced, "new\n")
    finally:
        os.umask(old_umask)
    expected = plain.stat().st_mode & 0o777
    assert oct(created.stat().st_mode & 0o777) == oct(expected)
    assert oct(replaced.stat().st_mode & 0o777) == oct(expected)
