"""Run a function in a forked child of the test process: what it changes in the
process's global state (registries, seeds, flags, imports) dies with the child."""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback

import torch


def run_forked(body, limit_s: float, what: str) -> None:
    """Call ``body()`` in a forked child; fail when it raises (its traceback goes
    to stderr) or when it is still running after ``limit_s`` (it is killed)."""
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's coverage is the body's
        code = 1
        try:
            # OpenMP's thread pool does not survive a fork: a child that computes with
            # the parent's pool hangs. One thread, as DataLoader's forked workers do.
            torch.set_num_threads(1)
            body()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    status = _wait(child, limit_s, what)
    assert os.waitstatus_to_exitcode(status) == 0, f"{what} failed in its own process (its traceback is above)"


def _wait(child: int, limit_s: float, what: str) -> int:
    """The child's wait status; a child still running after ``limit_s`` is killed and the test fails."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    raise AssertionError(f"{what} was still running after {limit_s:g} s and was killed")
