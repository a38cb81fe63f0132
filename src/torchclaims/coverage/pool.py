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

The pool starts ``first`` workers and grows, up to its size, while CPUs are
idle (:mod:`.machine`); workers start in the background while the others work.
Each worker has a slot number (``target(conn, slot, *args)``; a replacement
takes its predecessor's slot), which a sweep uses to spread workers over the
devices. The first message of a worker is ``"ready"`` or ``("ready", facts)``,
facts it reports about itself (say, its precision mode), kept in ``facts``.
While it works on an item, a worker may say what it is about to do
(``conn.send(Progress(what))``, before the answer): a runtime that kills its
process leaves nothing else behind, so a crash or a hang names the last
:class:`Progress` (say, which sample of a cell was running), as ``during``.

The optional ``deadline`` (a ``time.monotonic()`` value) is the stated time
guard, the moment by which every answer must be in. No item starts that the
measured durations say would not end before it (the slower tenth of the items
answered so far), an item still running at the deadline is stopped, and what
was not answered is returned as not reached (``None``; ``stopped`` names the
items that had started).
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

from ..verify.spawning import main_module_hidden
from .machine import IdleCpus

GROW_EVERY_S = 1.0  # how often the idle CPUs are measured while the pool may still grow
SLOW_SHARE = 0.9  # an item may start while the slowest tenth of items seen so far would still end in time


@dataclass(frozen=True)
class Failure:
    """An item whose worker died (``crash``) or did not answer in time (``hang``)."""

    kind: str
    detail: str
    during: object = None  # what the worker's last Progress said it was doing; None when it sent none


@dataclass(frozen=True)
class Progress:
    """A worker's word, before its answer, on what it is about to do within the item (picklable)."""

    what: object


class WorkerUnavailable(RuntimeError):
    """A worker could not be started: the harness is broken, not an item."""


def died(process) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"the worker process was killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"the worker process exited with code {code}"


class _Worker:
    """A worker process; it is ``ready`` once it has said so (it starts in the background)."""

    def __init__(self, target: Callable, slot: int, args: tuple):
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=target, args=(child, slot, *args), daemon=True, name="sweep-worker")
        with main_module_hidden():
            self.process.start()
        child.close()
        self.slot, self.ready, self.facts = slot, False, None
        self.item = None
        self.progress = None  # what the last Progress of the current item said
        self.since = time.monotonic()

    def take_ready(self):
        """Read the worker's first message; raises WorkerUnavailable when it is not "ready"."""
        try:
            message = self.conn.recv()
        except EOFError:
            self.process.join(10)
            raise WorkerUnavailable(f"a worker failed to start: {died(self.process)}") from None
        if isinstance(message, tuple) and len(message) == 2 and message[0] == "ready":
            message, self.facts = message
        if message != "ready":
            self.kill()
            raise WorkerUnavailable(f"a worker failed to start: {message}")
        self.ready = True

    def send(self, item) -> None:
        self.item, self.progress, self.since = item, None, time.monotonic()
        self.conn.send(item)

    def stop(self) -> None:
        if self.process.is_alive() and self.ready:
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
    """Up to ``workers`` processes running ``target(conn, slot, *args)``; see the module docstring.

    ``target`` sends ``"ready"`` (or ``("ready", facts)``) once set up, then
    answers each item it receives with one picklable answer until it receives
    ``None``. ``first`` workers start at once (None: all of them), the others
    as CPUs fall idle.
    """

    def __init__(
        self,
        target: Callable,
        args: tuple,
        workers: int,
        *,
        start_timeout_s: float = 300.0,
        item_timeout_s: float = 120.0,
        first: int | None = None,
    ):
        self.target, self.args, self.size = target, args, max(1, workers)
        self.first = self.size if first is None else max(1, min(first, self.size))
        self.start_timeout_s, self.item_timeout_s = start_timeout_s, item_timeout_s
        self.started = 0  # worker processes started, replacements included
        self.most = 0  # the most workers alive at once
        self.replaced: list[str] = []  # why each replacement happened
        self.facts: list = []  # what each started worker reported with "ready"
        self.stopped: list = []  # items stopped at the deadline while they ran
        self.durations: list[float] = []  # seconds each answered item took

    def run(
        self,
        items: Iterable[Hashable],
        *,
        deadline: float | None = None,
        on_answer: Callable[[Hashable, object, float], None] = lambda item, answer, seconds: None,
    ) -> dict:
        """Every item's answer (or :class:`Failure`); items without an answer map to ``None``.

        ``on_answer(item, answer, seconds)`` is called as each answer arrives.
        """
        pending = deque(items)
        answers: dict = {}
        workers: list[_Worker] = []
        idle_cpus = IdleCpus() if self.first < self.size else None
        next_growth = time.monotonic() + GROW_EVERY_S
        try:
            while pending or any(w.item is not None for w in workers):
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                if pending and not workers:
                    for _ in range(min(self.first, len(pending))):
                        workers.append(self._start(len(workers)))
                elif pending and idle_cpus is not None and now >= next_growth:
                    next_growth = now + GROW_EVERY_S
                    idle = idle_cpus.read()
                    room = self.size - len(workers) if idle is None else int(idle)
                    for _ in range(max(0, min(room, self.size - len(workers), len(pending)))):
                        workers.append(self._start(len(workers)))
                for index, worker in enumerate(workers):
                    if worker.ready and worker.item is None and pending and self._fits(deadline):
                        try:
                            worker.send(pending[0])
                            pending.popleft()
                        except OSError:  # it died since its last answer: the item waits for its replacement
                            workers[index] = self._replace_idle(worker)
                if not any(w.item is not None or not w.ready for w in workers):
                    break  # nothing runs and nothing may start: what is left is not reached
                self._wait(workers, deadline, None if idle_cpus is None or not pending else next_growth)
                for index, worker in enumerate(workers):
                    workers[index] = self._attend(worker, answers, on_answer)
        finally:
            for worker in workers:
                if worker.item is not None:
                    self.stopped.append(worker.item)
                worker.stop()
        for item in [*pending, *self.stopped]:
            answers[item] = None
        return answers

    def _start(self, slot: int) -> _Worker:
        self.started += 1
        self.most = max(self.most, slot + 1)
        return _Worker(self.target, slot, self.args)

    def _fits(self, deadline: float | None) -> bool:
        """Whether an item started now ends before the deadline, judged by the items answered so far."""
        if deadline is None or not self.durations:
            return deadline is None or time.monotonic() < deadline
        ordered = sorted(self.durations)
        slow = ordered[min(len(ordered) - 1, int(SLOW_SHARE * len(ordered)))]
        return time.monotonic() + slow < deadline

    def _wait(self, workers: list[_Worker], deadline: float | None, growth: float | None) -> None:
        moments = [w.since + self.start_timeout_s for w in workers if not w.ready]
        moments += [w.since + self.item_timeout_s for w in workers if w.item is not None]
        moments += [m for m in (deadline, growth) if m is not None]
        waits = [w.conn for w in workers] + [w.process.sentinel for w in workers]
        due = min(moments, default=None)
        multiprocessing.connection.wait(waits, timeout=None if due is None else max(0.0, due - time.monotonic()))

    def _attend(self, worker: _Worker, answers: dict, on_answer) -> _Worker:
        """The worker after looking at it: itself, or its replacement when it failed."""
        if not worker.ready:
            if worker.conn.poll():
                worker.take_ready()
                self.facts.append(worker.facts)
            elif not worker.process.is_alive():
                worker.process.join(10)
                raise WorkerUnavailable(f"a worker failed to start: {died(worker.process)}")
            elif time.monotonic() - worker.since >= self.start_timeout_s:
                worker.kill()
                raise WorkerUnavailable(f"a worker did not start within {self.start_timeout_s:g} s")
            return worker
        if worker.item is None:
            return worker if worker.process.is_alive() else self._replace_idle(worker)
        answer = self._collect(worker)
        if answer is None:
            return worker
        item, seconds = worker.item, time.monotonic() - worker.since
        worker.item = None
        answers[item] = answer
        self.durations.append(seconds)
        on_answer(item, answer, seconds)
        if isinstance(answer, Failure) or (isinstance(answer, dict) and "restart" in answer):
            worker.stop()
            self.replaced.append(f"after {item}: {_why(answer)}")
            return self._start(worker.slot)
        return worker

    def _replace_idle(self, worker: _Worker) -> _Worker:
        """A fresh worker in the slot of one that died while idle (its sentinel would wake every wait)."""
        worker.process.join(10)
        self.replaced.append(f"idle worker: {died(worker.process)}")
        return self._start(worker.slot)

    def _collect(self, worker: _Worker):
        """The worker's answer if it has one, a Failure if it died or hung, else None (Progress is kept)."""
        while worker.conn.poll():
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                worker.process.join(10)
                return Failure("crash", died(worker.process), worker.progress)
            if not isinstance(message, Progress):
                return message
            worker.progress = message.what
        if not worker.process.is_alive():
            worker.process.join(10)
            return Failure("crash", died(worker.process), worker.progress)
        if time.monotonic() - worker.since >= self.item_timeout_s:
            worker.kill()
            return Failure(
                "hang", f"no answer within {self.item_timeout_s:g} s (the worker was killed)", worker.progress
            )
        return None


def _why(answer) -> str:
    return answer.detail if isinstance(answer, Failure) else str(answer["restart"])
