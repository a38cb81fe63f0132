"""The distributed launcher's run_anyway: a job runs in whatever group each worker joined."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gallery"))

import _jobs  # noqa: E402

from torchclaims.backends import resolve_backend  # noqa: E402
from torchclaims.verify import distributed  # noqa: E402

CPU, _ = resolve_backend("cpu")


def fails_on_rank_one(rank: int, world_size: int, device: torch.device) -> dict:
    if rank == 1:
        raise RuntimeError("rank one gives up")
    return {"value": torch.tensor(rank)}


def test_both_workers_report_the_group_they_joined_and_the_job_result():
    ended = distributed.run_anyway(_jobs.allreduce_job, backend=CPU)
    assert sorted(ended.results) == [0, 1]
    for worker, result in ended.results.items():
        assert (result["rank"], result["world_size"]) == (worker, 2)
        assert result["allreduce"].tolist() == [3.0, 6.0, 9.0, 12.0]


def test_a_worker_that_fails_is_described_not_raised():
    ended = distributed.run_anyway(fails_on_rank_one, backend=CPU, timeout_s=20, startup_s=30)
    assert 1 not in ended.results
    assert "exited with code" in ended.failed(1) or "hung" in ended.failed(1)


def one_device(monkeypatch):
    """This machine as a one-GPU machine to the launcher's placement (the workers still run on the CPU)."""
    monkeypatch.setattr(distributed, "_device_count", lambda backend: 1)


# The CPU backend as a backend whose own process-group backend needs a device per rank and is absent
# here (as NCCL is on this machine), with gloo to share one device: what cuda and rocm declare.
ONE_PER_RANK = dataclasses.replace(CPU, dist_backend="nccl", shared_device_dist_backend="gloo")


def test_ranks_short_of_devices_are_not_run_one_device_each(monkeypatch):
    one_device(monkeypatch)
    results, reason = distributed.attempt(_jobs.allreduce_job, ONE_PER_RANK)
    assert results is None
    assert reason == "2 ranks need 2 cpu devices, one each; this machine has 1"


def test_ranks_share_one_device_through_the_sharing_process_group_backend(monkeypatch):
    one_device(monkeypatch)
    results, reason = distributed.attempt(_jobs.allreduce_job, ONE_PER_RANK, share_device=True)
    assert reason is None
    assert [r["process_group_backend"] for r in results] == ["gloo", "gloo"]
    assert [r["allreduce"].tolist() for r in results] == [[3.0, 6.0, 9.0, 12.0]] * 2


def test_a_backend_without_a_sharing_process_group_backend_keeps_the_reason(monkeypatch):
    one_device(monkeypatch)
    placed = distributed.place(dataclasses.replace(ONE_PER_RANK, shared_device_dist_backend=None), share_device=True)
    assert placed.reason == "2 ranks need 2 cpu devices, one each; this machine has 1"


def test_a_shared_run_that_breaks_is_a_reason_not_evidence(monkeypatch):
    one_device(monkeypatch)
    results, reason = distributed.attempt(fails_on_rank_one, ONE_PER_RANK, share_device=True)
    assert results is None
    assert reason.startswith("2 ranks share 1 cpu device(s) through gloo: nccl needs one device per rank")
    assert "did not complete" in reason


def test_the_record_of_a_rank_run_says_the_ranks_shared_a_device(monkeypatch):
    one_device(monkeypatch)
    measured = {}

    class Check:
        def measure(self, name, value, **_):
            measured[name] = value

        def equal(self, *_):
            pass

        def unsupported(self, reason):
            raise AssertionError(reason)

    results = distributed.RankRun(_jobs.allreduce_job).start(Check(), ONE_PER_RANK, "cpu")
    assert len(results) == 2
    assert measured["process-group backend"] == "gloo"
    assert "2 ranks share 1 cpu device(s) through gloo" in measured["ranks per device"]
