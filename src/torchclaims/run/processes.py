"""Process trees: a claim's supervisor watches its script and ends all it started.

The supervisor is the claim's process, forked from the fork server; the script
runs in a child of it. On Linux the supervisor is a *child subreaper*
(``prctl(PR_SET_CHILD_SUBREAPER)``): a process the script starts and abandons
(a double fork, a ``setsid`` daemon) is re-parented to the supervisor rather
than to init, so walking ``/proc`` down from the supervisor finds everything
the script started, whatever session or process group it moved to. The tree
is frozen (SIGSTOP, so nothing forks while it is walked) and then killed.
Elsewhere (macOS) only the script's process group can be ended. Where the
sandbox is available (torchclaims.run.sandbox), the script's process is also the
init of its own PID namespace, so the kernel ends every process the script
left when it ends, even when the supervisor itself was killed.

The supervisor also keeps the end of the script's output (bounded, whatever
the script prints) and stops early when asked (SIGTERM: timeout or Ctrl-C in
the parent) or when the process that started the run is gone.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

LINUX = sys.platform.startswith("linux")
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    if not LINUX:
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Orphaned descendants of this process are re-parented to it (Linux)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Receive ``sig`` when the parent process ends (Linux); end now if it already has."""
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, int(sig))
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


class Usage(NamedTuple):
    threads: int
    resident: int  # bytes in memory (RSS: a page shared with other processes counts whole in each)


def _processes() -> dict[int, tuple[int, str, Usage]]:
    """pid -> (parent pid, state, usage) of every process visible in /proc."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read().decode("ascii", "replace")
        except OSError:
            continue  # ended meanwhile
        fields = stat[stat.rfind(")") + 2 :].split()  # the name may hold spaces and parentheses
        if len(fields) > 21:  # state, parent, ..., num_threads, ..., rss in pages (proc(5))
            usage = Usage(threads=int(fields[17]), resident=int(fields[21]) * mmap.PAGESIZE)
            found[int(entry.name)] = (int(fields[1]), fields[0], usage)
    return found


def _below(root: int, table: dict[int, tuple[int, str, Usage]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return found


def descendants(root: int, include_zombies: bool = False) -> set[int]:
    """Every process below ``root`` (Linux)."""
    table = _processes()
    found = _below(root, table)
    return found if include_zombies else {pid for pid in found if table[pid][1] != "Z"}


def usage_below(root: int) -> dict[int, Usage]:
    """pid -> its threads and memory, for every live process below ``root`` (Linux)."""
    table = _processes()
    return {pid: table[pid][2] for pid in _below(root, table) if table[pid][1] != "Z"}


def _signal(pids, sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def reap_children() -> dict[int, int]:
    """Collect every child that has ended: pid -> exit code (negative: signal)."""
    ended = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended[pid] = os.waitstatus_to_exitcode(status)


def freeze_tree(root: int, include_root: bool = False) -> set[int]:
    """Stop (SIGSTOP) every descendant of ``root``, and ``root`` itself if asked,
    so that nothing forks while the tree is walked; return the pids stopped (Linux)."""
    stopped: set[int] = set()
    for _ in range(200):  # each round stops what forked since the last one
        found = (descendants(root) | ({root} if include_root else set())) - stopped
        if not found:
            break
        _signal(found, signal.SIGSTOP)
        stopped |= found
    return stopped


def end_tree(root: int, group: int | None = None, timeout: float = 10.0) -> int:
    """Freeze, then kill every descendant of ``root``; return how many there were.

    ``root`` must be this process (it reaps what it kills). Without /proc, the
    process group ``group`` is killed instead.
    """
    if not LINUX:
        if group is not None:
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        reap_children()
        return 0
    stopped = freeze_tree(root)
    _signal(stopped, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reap_children()  # killed children, and orphans re-parented to us
        if not descendants(root, include_zombies=True):
            break
        _signal(descendants(root), signal.SIGKILL)
        time.sleep(0.02)
    return len(stopped)


class OutputTail:
    """The last ``max_bytes`` of a stream, and how much went by."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.total = 0
        self._data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._data += chunk
        if len(self._data) > 2 * self.max_bytes:
            del self._data[: -self.max_bytes]

    def text(self, max_lines: int) -> str:
        """The last lines within ``max_bytes`` (a mark first when anything was dropped)."""
        data = bytes(self._data[-self.max_bytes :])
        dropped = self.total - len(data)
        lines = data.decode("utf-8", "replace").splitlines(keepends=True)
        if len(lines) > max_lines:
            dropped += len("".join(lines[:-max_lines]).encode("utf-8", "replace"))
            lines = lines[-max_lines:]
        kept = "".join(lines)
        if dropped <= 0:
            return kept.rstrip("\n")
        room = self.max_bytes - 64  # the mark fits in 64 bytes
        cut = kept.encode("utf-8", "replace")[-room:]
        dropped += len(kept.encode("utf-8", "replace")) - len(cut)
        return f"[… {dropped:,} earlier bytes of output not kept]\n" + cut.decode("utf-8", "ignore").rstrip("\n")


class Received:
    """The first ``max_bytes`` + 1 bytes of a stream (one more tells the reader it was too long)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        room = self.max_bytes + 1 - len(self.data)
        if room > 0:
            self.data += chunk[:room]


@dataclass(frozen=True)
class Ended:
    exit_code: int | None  # the script process's (negative: killed by that signal); None when stopped
    stopped: str = ""  # why it was stopped early: "terminated" or "parent gone"
    exceeded: str = ""  # the bound it went past, when ``watch`` stopped it


def supervise(
    script_pid: int,
    output_fd: int,
    parent_sentinel: int | None,
    tail: OutputTail,
    more: dict | None = None,
    watch: Callable[[], str | None] | None = None,
    every: float = 1.0,
) -> Ended:
    """Wait for the script to end, keeping the tail of its output (and reading
    each pipe of ``more`` into its buffer); stop on SIGTERM, when
    ``parent_sentinel`` (the starting process) is gone, or when ``watch``,
    asked at least every ``every`` seconds, says why the run went too far."""
    readers = {output_fd: tail, **(more or {})}
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    requests: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: requests.append(signum))
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_w)
    watched = [wake_r, *readers] + ([parent_sentinel] if parent_sentinel is not None else [])
    next_watch = 0.0
    while True:
        ended = reap_children()  # also collects orphans re-parented to us
        if script_pid in ended:
            for fd, buffer in readers.items():
                drain(fd, buffer)
            return Ended(ended[script_pid])
        if requests:
            return Ended(None, "terminated")
        if watch is not None and time.monotonic() >= next_watch:  # not on every chunk of a flood of output
            next_watch = time.monotonic() + every
            exceeded = watch()
            if exceeded:
                return Ended(None, exceeded=exceeded)
        ready, _, _ = select.select(watched, [], [], every)
        if parent_sentinel in ready:
            return Ended(None, "parent gone")
        if wake_r in ready:
            drain(wake_r, None)
        for fd in [fd for fd in ready if fd in readers]:
            if not _read_into(fd, readers[fd]):
                watched.remove(fd)  # every writer closed it


def _read_into(fd: int, tail) -> bool:
    """Read one chunk; False at the end of the stream."""
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return True
    except OSError:
        return False
    if chunk and tail is not None:
        tail.add(chunk)
    return bool(chunk)


def drain(fd: int, tail, seconds: float = 1.0) -> None:
    """Read what is there without waiting (descendants may still hold the pipe,
    and may still be writing: stop after ``seconds`` whatever comes)."""
    os.set_blocking(fd, False)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # BlockingIOError: nothing more for now
            return
        if not chunk:
            return
        if tail is not None:
            tail.add(chunk)
