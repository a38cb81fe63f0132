"""Run sweep items in parallel worker processes that may crash, hang or be spoilt.

A device runtime can kill its process on an unusual input instead of raising
(torch_xla 2.9 dies with SIGFPE on ``torch.roll`` of an empty tensor), hang,
or be left unable to run anything else. One item must not take the sweep, or
the claim script, down with it. So items run in spawned worker processes,
several at a time: a worker that dies or stops answering costs only its item
(reported as a :class:`Failure`), and a fresh worker takes its place. A worker
may also ask to be replaced after answering (it set ``answer["restart"]``).

Workers are spawned, not forked: the claim process may already hold a device
runtime and threads, which a fork would copy half-initialised. ``spawn``
re-imports the parent's ``__main__`` in each worker, and in a claim's process
that is the claim script, which must not run again: while workers start,
``__main__`` is replaced by a blank module (:mod:`torchclaims.verify.spawning`).

The optional ``deadline`` (a ``time.monotonic()`` value) is the stated time
guard: no item starts after it, and the items left are returned as not reached.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from ..run._child import CPUS_ENV
from ..verify.spawning import main_module_hidden


@dataclass(frozen=True)
class Failure:
    """An item whose worker died (``crash``) or did not answer in time (``hang``)."""

    kind: str
    detail: str


class WorkerUnavailable(RuntimeError):
    """A worker could not be started: the harness is broken, not an item."""


def machine_workers(memory_per_worker_gb: float) -> int:
    """Workers the machine can hold: one per CPU the claim may use, fewer if memory is short.

    That is every usable CPU, or the claim's share where the runner runs others
    beside it (CPUS_ENV): a second worker on a CPU another claim keeps busy only
    adds its own imports to the build.
    """
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    share = os.environ.get(CPUS_ENV, "")
    if share.isdigit() and int(share) > 0:
        cpus = min(cpus, int(share))
    try:
        with open("/proc/meminfo") as handle:
            fields = dict(line.split(":", 1) for line in handle)
        available_gb = int(fields["MemAvailable"].split()[0]) / 2**20
    except (OSError, KeyError, ValueError):
        return cpus
    return max(1, min(cpus, int(available_gb // memory_per_worker_gb)))


def died(process) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"the worker process was killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"the worker process exited with code {code}"


class _Worker:
    def __init__(self, target: Callable, args: tuple, start_timeout_s: float):
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=target, args=(child, *args), daemon=True, name="sweep-worker")
        with main_module_hidden():
            self.process.start()
        child.close()
        self.item = None
        self.since = 0.0
        if not self.conn.poll(start_timeout_s):
            self.kill()
            raise WorkerUnavailable(f"a worker did not start within {start_timeout_s:g} s")
        try:
            ready = self.conn.recv()
        except EOFError:
            self.process.join(10)
            raise WorkerUnavailable(f"a worker failed to start: {died(self.process)}") from None
        if ready != "ready":
            self.kill()
            raise WorkerUnavailable(f"a worker failed to start: {ready}")

    def send(self, item) -> None:
        self.item, self.since = item, time.monotonic()
        self.conn.send(item)

    def stop(self) -> None:
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(5)
        self.kill()

    def kill(self) -> None:
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(10)


class WorkerPool:
    """``workers`` processes running ``target(conn, *args)``; see the module docstring.

    ``target`` sends ``"ready"`` once set up, then answers each item it
    receives with one picklable answer until it receives ``None``.
    """

    def __init__(
        self,
        target: Callable,
        args: tuple,
        workers: int,
        *,
        start_timeout_s: float = 300.0,
        item_timeout_s: float = 120.0,
    ):
        self.target, self.args, self.size = target, args, max(1, workers)
        self.start_timeout_s, self.item_timeout_s = start_timeout_s, item_timeout_s
        self.started = 0  # worker processes started, replacements included
        self.replaced: list[str] = []  # why each replacement happened

    def _start(self) -> _Worker:
        self.started += 1
        return _Worker(self.target, self.args, self.start_timeout_s)

    def run(
        self,
        items: Iterable[Hashable],
        *,
        deadline: float | None = None,
        on_answer: Callable[[Hashable, object, float], None] = lambda item, answer, seconds: None,
    ) -> dict:
        """Every item's answer (or :class:`Failure`); items never started map to ``None``.

        ``on_answer(item, answer, seconds)`` is called as each answer arrives.
        """
        pending = deque(items)
        answers: dict = {}
        idle: list[_Worker] = []
        busy: dict[int, _Worker] = {}
        try:
            while pending or busy:
                while pending and (deadline is None or time.monotonic() < deadline) and len(busy) < self.size:
                    worker = idle.pop() if idle else self._start()
                    worker.send(pending.popleft())
                    busy[worker.process.sentinel] = worker
                if not busy:
                    break  # the deadline passed: what is left is not reached
                waits = [w.conn for w in busy.values()] + list(busy)
                first_due = min(w.since for w in busy.values()) + self.item_timeout_s
                multiprocessing.connection.wait(waits, timeout=max(0.0, first_due - time.monotonic()))
                for sentinel, worker in list(busy.items()):
                    answer = self._collect(worker)
                    if answer is None:
                        continue
                    del busy[sentinel]
                    answers[worker.item] = answer
                    on_answer(worker.item, answer, time.monotonic() - worker.since)
                    if isinstance(answer, Failure) or (isinstance(answer, dict) and "restart" in answer):
                        worker.stop()
                        self.replaced.append(f"after {worker.item}: {_why(answer)}")
                    else:
                        idle.append(worker)
        finally:
            for worker in idle + list(busy.values()):
                worker.stop()
        for item in pending:
            answers[item] = None
        return answers

    def _collect(self, worker: _Worker):
        """The worker's answer if it has one, a Failure if it died or hung, else None."""
        if worker.conn.poll():
            try:
                return worker.conn.recv()
            except EOFError:
                worker.process.join(10)
                return Failure("crash", died(worker.process))
        if not worker.process.is_alive():
            worker.process.join(10)
            return Failure("crash", died(worker.process))
        if time.monotonic() - worker.since >= self.item_timeout_s:
            worker.kill()
            return Failure("hang", f"no answer within {self.item_timeout_s:g} s (the worker was killed)")
        return None


def _why(answer) -> str:
    return answer.detail if isinstance(answer, Failure) else str(answer["restart"])
