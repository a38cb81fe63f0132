"""The worker pool: parallel items, crashes, hangs, replacements, the time guard."""

from __future__ import annotations

import time

import pytest

from sweep_workers import echo, never_ready
from torchclaims.coverage.pool import Failure, WorkerPool, WorkerUnavailable, machine_workers
from torchclaims.run._child import CPUS_ENV

pytestmark = pytest.mark.processes  # worker processes that crash and hang


def test_every_item_gets_its_answer_from_parallel_workers():
    pool = WorkerPool(echo, ("x-",), workers=2)
    seen = []
    answers = pool.run(["a", "b", "c", "d"], on_answer=lambda item, answer, s: seen.append(item))
    assert {k: v["echo"] for k, v in answers.items()} == {"a": "x-a", "b": "x-b", "c": "x-c", "d": "x-d"}
    assert sorted(seen) == ["a", "b", "c", "d"]
    assert len({v["pid"] for v in answers.values()}) == 2  # both workers took items
    assert pool.started == 2 and pool.replaced == []


def test_a_crash_and_a_hang_cost_only_their_item():
    pool = WorkerPool(echo, ("",), workers=1, item_timeout_s=3)
    answers = pool.run(["a", "crash", "b", "hang", "c"])
    assert answers["crash"] == Failure("crash", "the worker process was killed by SIGSEGV")
    assert answers["hang"].kind == "hang" and "no answer within 3 s" in answers["hang"].detail
    assert [answers[k]["echo"] for k in "abc"] == ["a", "b", "c"]
    assert pool.started == 3  # the first, and one replacement after each failure
    assert len(pool.replaced) == 2


def test_a_worker_that_asks_is_replaced_after_answering():
    pool = WorkerPool(echo, ("",), workers=1)
    answers = pool.run(["spoil", "after"])
    assert answers["spoil"]["echo"] == "spoil"
    assert answers["spoil"]["pid"] != answers["after"]["pid"]
    assert pool.replaced == ["after spoil: the device is spoilt"]


def test_items_after_the_time_guard_are_not_reached():
    pool = WorkerPool(echo, ("",), workers=1)
    answers = pool.run(["a", "b"], deadline=time.monotonic() - 1)
    assert answers == {"a": None, "b": None}
    assert pool.started == 0


def test_a_worker_that_cannot_start_breaks_the_run_loudly():
    with pytest.raises(WorkerUnavailable, match="exited with code 3"):
        WorkerPool(never_ready, (), workers=1).run(["a"])


def test_machine_workers_is_at_least_one():
    assert machine_workers(1e9) == 1
    assert machine_workers(0.001) >= 1


def test_a_sweep_starts_no_more_workers_than_the_cpus_the_run_gives_its_claim(monkeypatch):
    monkeypatch.delenv(CPUS_ENV, raising=False)
    every = machine_workers(0.001)
    monkeypatch.setenv(CPUS_ENV, "1")
    assert machine_workers(0.001) == 1
    for unusable in ("0", "two", "-1", ""):
        monkeypatch.setenv(CPUS_ENV, unusable)
        assert machine_workers(0.001) == every
