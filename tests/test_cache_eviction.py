"""Each claim's own compiler caches stay within their bounds (torchclaims.run.cache_eviction):
a claim's caches past compiler_cache_bytes go, and while all of them are past
compiler_caches_total_bytes, those of the claim the build ran longest ago go first,
whatever times the script set on its own files."""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import pytest

from hostile import run_claims
from kb import write_claim
from test_claim_bounds import HOLDS, bounded
from torchclaims import limits
from torchclaims.caches import Caches
from torchclaims.evidence.records import Verdict
from torchclaims.run import execution
from torchclaims.run.cache_eviction import USED, in_use, keep_within, mark_used

MIB = limits.MIB


def fill(records, claim_id: str, size: int, used_at: float | None) -> None:
    """Caches of ``size`` bytes (written, so on disk), last run at ``used_at`` (None: never marked)."""
    caches = Caches(records).compiler("cpu", claim_id) / "torchinductor"
    caches.mkdir(parents=True)
    (caches / "kernel").write_bytes(b"\1" * size)
    if used_at is not None:
        mark_used(records, "cpu", [claim_id])
        os.utime(caches.parent.with_suffix(USED), (used_at, used_at))


def left(records) -> set[str]:
    return {path.name for path in (records / "compiler-caches" / "cpu").iterdir() if path.is_dir()}


def test_caches_past_a_claims_bound_go_then_the_least_recently_run_until_all_fit(tmp_path):
    bounds = dataclasses.replace(
        limits.LIMITS, compiler_cache_bytes=MIB + MIB // 2, compiler_caches_total_bytes=3 * MIB
    )
    now = time.time()
    fill(tmp_path, "kb-large", 2 * MIB, now)  # past its own bound, though run last
    fill(tmp_path, "kb-unmarked", MIB, None)  # caches of a layout before the marks: the oldest
    fill(tmp_path, "kb-old", MIB, now - 3600)
    fill(tmp_path, "kb-recent", MIB, now - 60)
    fill(tmp_path, "kb-newest", MIB, now - 1)
    # A script sets any time on its own files: it does not make its caches look used.
    os.utime(Caches(tmp_path).compiler("cpu", "kb-old") / "torchinductor" / "kernel", (now + 1e6, now + 1e6))
    removed = keep_within(tmp_path, bounds)
    assert left(tmp_path) == {"kb-recent", "kb-newest"}
    assert removed[0].startswith("compiler caches removed: cpu/kb-large: 2")  # MiB, and its folders' blocks
    assert removed[0].endswith(" MiB (limit compiler_cache_bytes)")
    assert removed[1:] == [
        "compiler caches removed: cpu/kb-unmarked: the least recently run (limit compiler_caches_total_bytes)",
        "compiler caches removed: cpu/kb-old: the least recently run (limit compiler_caches_total_bytes)",
    ]
    assert not Caches(tmp_path).compiler("cpu", "kb-large").with_suffix(USED).exists()


def test_caches_within_their_bounds_are_all_kept(tmp_path):
    fill(tmp_path, "kb-one", MIB, time.time())
    fill(tmp_path, "kb-two", MIB, None)
    assert keep_within(tmp_path, limits.LIMITS) == []
    assert left(tmp_path) == {"kb-one", "kb-two"}


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox's caches are Linux's")
def test_a_claim_that_fills_its_caches_past_the_bound_loses_them_and_its_neighbour_keeps_its_own(tmp_path, monkeypatch):
    bounded(monkeypatch, compiler_cache_bytes=MIB)
    body = """
import os
with open(os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "filler"), "wb") as handle:
    handle.write(b"\\1" * (2 << 20))
"""
    write_claim(tmp_path, "kb-filler", body + HOLDS)
    write_claim(tmp_path, "kb-modest", "holds")
    records = run_claims(tmp_path, timeout=120).records
    assert records["kb-filler"].verdict is Verdict.HOLDS and records["kb-modest"].verdict is Verdict.HOLDS
    top = tmp_path / "_build" / "records"
    assert not Caches(top).compiler("cpu", "kb-filler").exists()
    assert Caches(top).compiler("cpu", "kb-modest").is_dir()
    assert Caches(top).compiler("cpu", "kb-modest").with_suffix(USED).is_file()


def test_caches_a_run_holds_are_left_with_the_reason_and_go_once_it_ends(tmp_path):
    bounds = dataclasses.replace(limits.LIMITS, compiler_cache_bytes=MIB // 2, compiler_caches_total_bytes=MIB // 2)
    fill(tmp_path, "kb-running", MIB, time.time())
    fill(tmp_path, "kb-idle", MIB, time.time())
    with in_use(tmp_path, "cpu", ["kb-running"]):  # another build, running the claim
        lines = keep_within(tmp_path, bounds)
        assert left(tmp_path) == {"kb-running"}
    idle, running = lines  # in the order of their names
    assert idle.startswith("compiler caches removed: cpu/kb-idle: ")
    assert running.startswith("compiler caches kept: cpu/kb-running: ") and running.endswith(
        ", but a run is using them"
    )
    assert keep_within(tmp_path, bounds)[0].startswith("compiler caches removed: cpu/kb-running: ")
    assert left(tmp_path) == set()


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox's caches are Linux's")
def test_while_a_build_runs_claims_another_builds_eviction_leaves_their_caches(tmp_path, monkeypatch):
    top = tmp_path / "_build" / "records"
    fill(top, "kb-modest", MIB, time.time())  # caches of its last run
    fill(top, "kb-retired", MIB, time.time())  # of a claim this build does not run
    write_claim(tmp_path, "kb-modest", "holds")
    zero = dataclasses.replace(limits.LIMITS, compiler_cache_bytes=1, compiler_caches_total_bytes=1)
    during = []
    carry_out = execution._carry_out

    def another_build_evicts(*args, **kwargs):
        during.extend(keep_within(top, zero))
        return carry_out(*args, **kwargs)

    monkeypatch.setattr(execution, "_carry_out", another_build_evicts)
    records = run_claims(tmp_path, timeout=120).records
    assert records["kb-modest"].verdict is Verdict.HOLDS
    assert any(line.startswith("compiler caches kept: cpu/kb-modest: ") for line in during)
    assert any(line.startswith("compiler caches removed: cpu/kb-retired: ") for line in during)
    assert Caches(top).compiler("cpu", "kb-modest").is_dir()
