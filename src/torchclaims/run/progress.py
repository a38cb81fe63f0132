"""What a run shows while its claims run: done of total, the running claims and why they re-run,
elapsed and estimated time, and one closing line saying what re-ran and why.

The build and ``verify`` give it the console (stdout, where a claim's lines always came),
because the build's own log is quiet there (``nox -s docs`` runs ``sphinx-build -q``). On a
terminal tqdm draws the count, the times and the running claims on one bar, with each
claim's line above it; elsewhere (a CI log, or a caller's own log) the same lines come as
plain text, each with the count and the times, and a line at least every HEARTBEAT_S while
claims run, so a log is never silent for long.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm

from ..text_safety import for_terminal, unguarded

HEARTBEAT_S = 10.0
NAMED = 5  # claims a closing line names before "and N more"


class _Bar(tqdm):
    monitor_interval = 0  # no monitor thread: the process that starts claims runs no thread of its own


def _duration(seconds: float) -> str:
    return tqdm.format_interval(seconds)


class Progress:
    """The console's view of one run of ``total`` claims (the runner calls started, done and tick)."""

    def __init__(self, write: Callable[[str], None], terminal: TextIO | None = None, clock=time.monotonic):
        """``write`` takes plain lines; ``terminal``, where it is one, gets tqdm's bar instead."""
        self.write, self.terminal = write, terminal
        self.clock = clock
        self.bar: _Bar | None = None
        self.total = self.finished = 0
        self.running: dict[str, str] = {}  # claim id -> why it re-runs
        self.began = self.last_line = 0.0

    def begin(self, total: int) -> None:
        self.total, self.began = total, self.clock()
        self.last_line = self.began
        if total and self.terminal is not None and _is_terminal(self.terminal):
            self.bar = _Bar(total=total, file=self.terminal, unit="claim", desc="claims", dynamic_ncols=True)

    def started(self, claim_id: str, why: str) -> None:
        self.running[claim_id] = why
        self._line(f"running {claim_id} ({why})")

    def done(self, claim_id: str, outcome: str) -> None:
        self.running.pop(claim_id, None)
        self.finished += 1
        if self.bar is not None:
            self.bar.update(1)
        self._line(f"{claim_id} -> {outcome}")

    def tick(self) -> None:
        """Called while claims run: a plain log gets a line when none came for HEARTBEAT_S."""
        if self.bar is not None:
            self.bar.refresh()
        elif self.running and self.clock() - self.last_line >= HEARTBEAT_S:
            self._line(f"still running {', '.join(sorted(self.running))}")

    def end(self) -> None:
        """The bar goes (a run that stopped half-way too); a plain log needs nothing."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def report(self, reran: dict[str, str], current: int) -> None:
        """The closing line: which claims re-ran and why, and how many were current."""
        self.end()
        self.write(for_terminal(f"torchclaims: {summary(reran, current, self.clock() - self.began)}"))

    def _where(self) -> str:
        elapsed = self.clock() - self.began
        left = elapsed / self.finished * (self.total - self.finished) if self.finished else None
        estimate = f", ~{_duration(left)} left" if left is not None else ""
        return f"[{self.finished}/{self.total} done, {_duration(elapsed)}{estimate}]"

    def _line(self, text: str) -> None:
        """One line of a claim's progress; its text (claim ids, reasons a script gave) never drives the terminal."""
        text = for_terminal(text)
        if self.bar is not None:
            self.bar.set_postfix_str(for_terminal(", ".join(sorted(self.running))), refresh=False)
            self.bar.write(f"torchclaims: {text}", file=self.terminal)
        else:
            self.write(f"torchclaims: {text} {self._where()}")
        self.last_line = self.clock()


def summary(reran: dict[str, str], current: int, seconds: float) -> str:
    """'re-ran 2 of 70 claims in 01:05: a (its script changed), b (--force); 68 current'."""
    if not reran:
        return f"nothing re-ran: {current} claims current"
    named = [f"{claim_id} ({why})" for claim_id, why in sorted(reran.items())[:NAMED]]
    more = f" and {len(reran) - NAMED} more" if len(reran) > NAMED else ""
    total = len(reran) + current
    return f"re-ran {len(reran)} of {total} claims in {_duration(seconds)}: {', '.join(named)}{more}; {current} current"


def console(stream: TextIO | None = None) -> Progress:
    """Progress on ``stream`` (this process's stdout by default): a bar on a terminal, plain lines in a log."""
    stream = stream or sys.stdout
    return Progress(lambda line: print(line, file=stream, flush=True), terminal=unguarded(stream))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or wrapped stream
        return False
