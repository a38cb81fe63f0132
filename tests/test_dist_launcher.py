"""The distributed launcher's run_anyway: a job runs in whatever group each worker joined."""

from __future__ import annotations

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
