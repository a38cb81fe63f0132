"""Ending what a run started: the claims' processes, the fork server and the
multiprocessing resource tracker.

A claim's process ends its script's processes itself when asked (SIGTERM; see
torchclaims.run._child); only if it does not manage within the grace period (a
loaded machine) are it and every process below it killed from here, whatever
session each moved to. The helpers are multiprocessing's own; stopping them uses
its private handles, because the library only stops them when the process
that started them exits, and a build or a test session goes on after a run.
"""

from __future__ import annotations

import os
import signal
import time
from multiprocessing import forkserver, resource_tracker

from .processes import LINUX, freeze_tree

GRACE_S = 10.0  # how long a claim's process may take to end its script's processes


def end_claim_processes(processes: list) -> None:
    """Ask claim processes to end their scripts' processes (SIGTERM), then kill
    those that did not manage within the grace period, with all below them."""
    for process in processes:
        _signal(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            _kill_claim_tree(process.pid)
            process.join(5)


def _kill_claim_tree(pid: int) -> None:
    """The claim's process and all below it: its script's orphans are re-parented
    to it (a subreaper), so on Linux the tree holds what left the session too."""
    for stopped in freeze_tree(pid, include_root=True) if LINUX else ():
        _signal(stopped, signal.SIGKILL)
    try:
        os.killpg(pid, signal.SIGKILL)  # each claim's process leads its own session
    except (ProcessLookupError, PermissionError):
        pass


def _signal(pid: int | None, sig: int) -> None:
    if pid is None:
        return
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_or_kill(pid: int, seconds: float) -> None:
    """Reap ``pid`` (a child of ours), killing it if it has not ended in time."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not done:
        _signal(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def stop_forkserver() -> None:
    server = forkserver._forkserver
    pid = server._forkserver_pid
    if pid is None:
        return
    # Its clients are done; a process that still holds its pipe must not keep it alive.
    _signal(pid, signal.SIGTERM)
    server._stop()  # closes the pipe, reaps it, forgets its address


def stop_resource_tracker() -> None:
    """The tracker ends once every holder of its pipe has closed it (it unlinks
    what leaked first); a stray holder cannot keep it alive for long."""
    tracker = resource_tracker._resource_tracker
    with tracker._lock:
        fd, pid = getattr(tracker, "_fd", None), getattr(tracker, "_pid", None)
        if fd is None or pid is None:
            return
        os.close(fd)
        tracker._fd = tracker._pid = None
    _wait_or_kill(pid, 10.0)
