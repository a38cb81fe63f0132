"""A build or a verify leaves no process behind, and a rebuild with nothing to
do starts none: no fork server, no probe, no torch import anywhere.

Each run is watched from outside (tests/build_watch.py): a marker in its
environment finds every process it started, however that process detached,
and an audit hook in every Python process it starts notes torch imports and
process starts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from build_watch import install_hook, run
from hostile import SRC, Sightings, end, tagged
from kb import write_claim, write_site
from test_hostile_scripts import leaver, new_tag

pytestmark = [
    pytest.mark.processes,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="processes are found through /proc"),
]


def environment(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(SRC), **extra)


def sphinx(root: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "sphinx",
        "-b",
        "html",
        "-d",
        str(root / "_build" / "doctrees"),
        str(root),
        str(root / "_build" / "html"),
    ]


def test_a_site_build_and_a_verify_leave_no_process_however_their_scripts_end(tmp_path):
    root, tag = tmp_path / "kb", new_tag()
    root.mkdir()
    write_site(root)
    write_claim(root, "kb-holds", "holds")
    write_claim(root, "kb-leaver", leaver(f"{tag}-finish", "finish"))
    write_claim(root, "kb-crash", leaver(f"{tag}-segfault", "segfault"))
    write_claim(root, "kb-hang", leaver(f"{tag}-hang", "hang"))
    hooks = install_hook(tmp_path / "hooks")
    try:
        with Sightings(tag) as seen:
            built = run(sphinx(root), root, environment(TORCHCLAIMS_TIMEOUT="15"), hooks, timeout=900)
        assert built.returncode == 0, built.output[-3000:]
        assert len(seen.seen) == 9, "each script started three processes"
        assert built.left_behind == [] and tagged(tag) == set()
        with Sightings(tag) as seen:
            verified = run(
                [
                    sys.executable,
                    "-m",
                    "torchclaims",
                    "verify",
                    "--root",
                    str(root),
                    "--jobs",
                    "2",
                    "--force",
                    "--timeout",
                    "15",
                ],
                root,
                environment(),
                hooks,
                timeout=900,
            )
        assert verified.returncode == 1, verified.output[-3000:]  # two claims errored, on purpose
        assert len(seen.seen) == 9
        assert verified.left_behind == [] and tagged(tag) == set()
    finally:
        end(tagged(tag))
    assert "timed out" in built.output and "SIGSEGV" in built.output


def test_a_rebuild_with_nothing_changed_starts_no_process_and_imports_no_torch(tmp_path):
    root = tmp_path / "kb"
    root.mkdir()
    write_site(root)
    for claim_id, body in (("kb-holds", "holds"), ("kb-refuted", "refuted"), ("kb-unverified", "unverified")):
        write_claim(root, claim_id, body)
    hooks = install_hook(tmp_path / "hooks")
    first = run(sphinx(root), root, environment(), hooks, timeout=900)
    assert first.returncode == 0, first.output[-3000:]
    assert first.torch_imported_by and "torchclaims: running kb-holds" in first.output
    second = run(sphinx(root), root, environment(), hooks, timeout=900)
    assert second.returncode == 0, second.output[-3000:]
    assert "torchclaims: running" not in second.output
    assert "as probed before" in second.output
    assert second.torch_imported_by == [], second.torch_imported_by
    assert second.starters == [], second.starters
    assert second.left_behind == []
