"""The worker pool: parallel items, crashes, hangs, replacements, growth, the time guard."""

from __future__ import annotations

import time

import pytest

import torchclaims.coverage.pool as pool_module
from sweep_workers import echo, never_ready
from torchclaims.coverage.machine import IdleCpus, first_workers, machine_workers, usable_cpus
from torchclaims.coverage.pool import Failure, WorkerPool, WorkerUnavailable
from torchclaims.run._child import CPUS_ENV

pytestmark = pytest.mark.processes  # worker processes that crash and hang


def test_every_item_gets_its_answer_from_parallel_workers():
    pool = WorkerPool(echo, ("x-",), workers=2)
    seen = []
    items = [f"sleep:0.5:{n}" for n in range(6)]  # long enough for the second worker to start meanwhile
    answers = pool.run(items, on_answer=lambda item, answer, s: seen.append(item))
    assert {k: v["echo"] for k, v in answers.items()} == {item: f"x-{item}" for item in items}
    assert sorted(seen) == items
    assert len({v["pid"] for v in answers.values()}) == 2  # both workers took items
    assert {v["slot"] for v in answers.values()} == {0, 1}  # each its own slot (a device, for a sweep)
    assert pool.started == 2 and pool.replaced == []
    assert sorted(f["slot"] for f in pool.facts) == [0, 1]  # what each worker said when ready


def test_a_crash_and_a_hang_cost_only_their_item():
    pool = WorkerPool(echo, ("",), workers=1, item_timeout_s=3)
    answers = pool.run(["a", "crash", "b", "hang", "c"])
    assert answers["crash"] == Failure("crash", "the worker process was killed by SIGSEGV")
    assert answers["hang"].kind == "hang" and "no answer within 3 s" in answers["hang"].detail
    assert [answers[k]["echo"] for k in "abc"] == ["a", "b", "c"]
    assert pool.started == 3  # the first, and one replacement after each failure
    assert len(pool.replaced) == 2


def test_a_crash_names_what_the_worker_last_said_it_was_doing():
    pool = WorkerPool(echo, ("",), workers=1)
    answers = pool.run(["progress", "progress-crash", "a"])
    assert answers["progress"]["echo"] == "progress"  # progress before an answer is not the answer
    assert answers["progress-crash"] == Failure("crash", "the worker process was killed by SIGFPE", {"sample": 1})
    assert answers["a"]["echo"] == "a"


def test_a_worker_that_asks_is_replaced_after_answering():
    pool = WorkerPool(echo, ("",), workers=1)
    answers = pool.run(["spoil", "after"])
    assert answers["spoil"]["echo"] == "spoil"
    assert answers["spoil"]["pid"] != answers["after"]["pid"]
    assert answers["after"]["slot"] == 0  # the replacement takes its predecessor's slot
    assert pool.replaced == ["after spoil: the device is spoilt"]


def test_items_after_the_time_guard_are_not_reached():
    pool = WorkerPool(echo, ("",), workers=1)
    answers = pool.run(["a", "b"], deadline=time.monotonic() - 1)
    assert answers == {"a": None, "b": None}
    assert pool.started == 0


def test_an_item_still_running_at_the_deadline_is_stopped_and_not_reached():
    pool = WorkerPool(echo, ("",), workers=1)
    began = time.monotonic()
    answers = pool.run(["sleep:30"], deadline=began + 3)
    assert answers == {"sleep:30": None} and pool.stopped == ["sleep:30"]
    assert time.monotonic() - began < 15  # the guard ended it, not the item


def test_no_item_starts_that_the_measured_durations_say_would_end_after_the_deadline():
    pool = WorkerPool(echo, ("",), workers=1)
    items = [f"sleep:2:{n}" for n in range(4)]
    answers = pool.run(items, deadline=time.monotonic() + 5)
    answered = [item for item in items if answers[item] is not None]
    # the first item takes 2 s; a second fits, a third would end after the deadline
    assert 1 <= len(answered) <= 2 and pool.stopped == []
    assert all(answers[item] is None for item in items[len(answered) :])


class _Idle:
    """Stands in for IdleCpus: the machine reports ``cpus`` idle CPUs at every reading."""

    cpus = 0.0

    def read(self):
        return type(self).cpus


@pytest.mark.parametrize(("idle", "expected"), [(0.0, 1), (8.0, 3)])
def test_a_sweep_starts_with_the_runners_share_and_grows_into_idle_cpus_up_to_the_machine(monkeypatch, idle, expected):
    """The runner gave the claim one CPU when it started it; once the machine has idle CPUs, the sweep takes them."""
    monkeypatch.setattr(pool_module, "IdleCpus", _Idle)
    monkeypatch.setattr(_Idle, "cpus", idle)
    monkeypatch.setenv(CPUS_ENV, "1")
    pool = WorkerPool(echo, ("",), workers=3, first=first_workers(3))
    answers = pool.run([f"sleep:0.5:{n}" for n in range(12)])
    assert all(answer is not None for answer in answers.values())
    assert pool.most == expected  # on CPUs something else keeps busy, it stays at its share


def test_idle_cpus_are_read_from_the_kernel(tmp_path):
    stat = tmp_path / "stat"
    cpus = sorted(usable_cpus())
    line = "cpu{} {} 0 0 {} 0 0 0 0 0 0\n"
    stat.write_text("".join(line.format(n, 100, 100) for n in cpus))
    reader = IdleCpus(str(stat))
    # every usable CPU then spends 100 jiffies, 75 of them idle: three quarters of each is idle
    stat.write_text("".join(line.format(n, 125, 175) for n in cpus))
    assert reader.read() == pytest.approx(0.75 * len(cpus))
    assert IdleCpus(str(tmp_path / "absent")).read() is None  # the kernel does not say: no measure


def test_a_worker_that_cannot_start_breaks_the_run_loudly():
    with pytest.raises(WorkerUnavailable, match="exited with code 3"):
        WorkerPool(never_ready, (), workers=1).run(["a"])


def test_machine_workers_is_at_least_one():
    assert machine_workers(1e9) == 1
    assert machine_workers(0.001) >= 1


def test_a_sweep_is_sized_from_the_machine_not_from_the_share_the_run_gave_its_claim(monkeypatch):
    """The runner's share (its CPUs over the claims run at once) is stale once the other claims end:
    it is where the sweep starts, not its size."""
    monkeypatch.setenv(CPUS_ENV, "1")
    assert machine_workers(0.001) == len(usable_cpus())
    assert first_workers(8) == 1
    for unusable in ("0", "two", "-1", ""):  # outside the runner, or a share that says nothing: all at once
        monkeypatch.setenv(CPUS_ENV, unusable)
        assert first_workers(8) == 8


def test_a_worker_that_dies_after_answering_is_replaced_not_waited_on():
    pool = WorkerPool(echo, ("",), workers=1)
    answers = pool.run(["exit", "sleep:0.1:a", "sleep:0.1:b"])
    assert answers["exit"]["echo"] == "exit" and all(answer is not None for answer in answers.values())
    # the next item finds it dead, idle or just sent: either way one fresh worker takes over
    assert pool.started == 2 and len(pool.replaced) == 1 and "exited with code 0" in pool.replaced[0]
    assert answers["sleep:0.1:b"]["echo"] == "sleep:0.1:b"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"cpu.max": "250000 100000\n"}, 3),  # cgroup v2: 2.5 CPUs' worth, rounded up
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "400000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 4),  # cgroup v1
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({}, None),
    ],
)
def test_a_containers_cpu_quota_bounds_the_machine(tmp_path, files, expected):
    from torchclaims.coverage.machine import cpu_quota

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cpu_quota(str(tmp_path)) == expected
