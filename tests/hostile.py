"""Shared pieces of the hostile-input tests: payloads, process checks, CLI runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# Markup that must never render: each would run script in a reader's browser.
SCRIPT_TAG = '<script>alert("tc-xss")</script>'
PAYLOAD = f'{SCRIPT_TAG}<img src=x onerror=alert("tc-xss")><a href="javascript:alert(1)">x</a>'


class _ActiveMarkup(HTMLParser):
    """Finds markup that would run: a script holding the payload, an event
    handler attribute, or a script address in a link (escaped text is inert)."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self._script = False

    def handle_starttag(self, tag, attrs):
        self._script = tag == "script"
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on") and "tc-xss" in value:
                self.found.append(f"<{tag} {name}=...>")
            if name in ("href", "src", "action", "formaction") and value.startswith(
                ("javascript:", "vbscript:", "data:text/html")
            ):
                self.found.append(f"<{tag} {name}={value[:30]}>")

    def handle_endtag(self, tag):
        self._script = False

    def handle_data(self, data):
        if self._script and "tc-xss" in data:
            self.found.append("<script> with the payload")


def active_markup(html_dir: Path) -> list[str]:
    """What in the built HTML pages would run a payload."""
    found = []
    for path in sorted(html_dir.rglob("*.html")):
        parser = _ActiveMarkup()
        parser.feed(path.read_text(encoding="utf-8", errors="replace"))
        found.extend(f"{path.relative_to(html_dir)}: {item}" for item in parser.found)
    return found


def assert_clean_exit(run: subprocess.CompletedProcess | tuple) -> None:
    """No Python traceback reached the user."""
    text = run.stdout + run.stderr if hasattr(run, "stdout") else "".join(run)
    assert "Traceback (most recent call last)" not in text, text[-3000:]


def cli(
    *args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """``torchclaims ARGS`` in its own process, as a user runs it."""
    environment = dict(os.environ, PYTHONPATH=str(SRC), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "torchclaims", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until_gone(pids, seconds: float = 20.0) -> list[int]:
    """The pids still running after ``seconds`` (empty when all ended)."""
    deadline = time.monotonic() + seconds
    left = [pid for pid in pids if alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [pid for pid in left if alive(pid)]
    return left


def _sigint_disposition(pid: int) -> tuple[int, str] | None:
    """(process group, how ``pid`` takes SIGINT: "catches", "ignores" or
    "default"), or None once it has ended."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state, _, group = handle.read().rsplit(")", 1)[1].split()[:3]
        with open(f"/proc/{pid}/status") as handle:
            masks = dict(line.split(":", 1) for line in handle if line.startswith(("SigIgn", "SigCgt")))
    except (OSError, ValueError):
        return None
    if state == "Z":
        return None
    bit = 1 << (signal.SIGINT - 1)
    how = "ignores" if int(masks["SigIgn"], 16) & bit else "catches" if int(masks["SigCgt"], 16) & bit else "default"
    return int(group), how


def ready_for_ctrl_c(leader: int) -> bool:
    """Whether a Ctrl-C sent to the process group of ``leader`` now reaches only
    processes that have set up their handling of it: the leader catches SIGINT,
    every other member ignores it. A process still starting (Python not yet up,
    a fork server still importing, a claim's process not yet in its own session)
    fails the test, so the signal is not sent before the program can take it."""
    if _sigint_disposition(leader) != (leader, "catches"):
        return False
    for pid in descendants(leader):
        found = _sigint_disposition(pid)
        if found is not None and found[0] == leader and found[1] != "ignores":
            return False  # (ended, or in a group of its own: Ctrl-C does not reach it)
    return True


def wait_until(condition, what: str, process: subprocess.Popen, seconds: float = 600) -> None:
    """Poll ``condition`` while ``process`` runs; a loaded machine may take minutes."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, (what, process.communicate())
        assert time.monotonic() < deadline, f"never happened within {seconds:.0f} s: {what}"
        time.sleep(0.1)


def descendants(root: int) -> set[int]:
    from torchclaims.run.processes import descendants as below

    return below(root)


def end(pids) -> None:
    """Clean up after a failed test: kill what it left (by pid, never by name)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run_claims(root: Path, **settings):
    """Verify every claim under ``root`` in this process (quietly)."""
    from torchclaims.claims import load_claims
    from torchclaims.run.execution import Settings, verify

    claims = load_claims(root / "claims")
    assert not claims.problems, claims.problems
    return verify(
        claims.executable(), Settings(root=root, **{"parallel": 2, **settings}), log=lambda m: None, warn=lambda m: None
    )


def tagged(tag: str) -> set[int]:
    """Live processes anywhere on this machine whose command line holds ``tag``.

    A claim's processes are found this way, wherever they went: the pids a
    script sees are those of its own PID namespace, not this process's."""
    needle = tag.encode()
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                if needle in handle.read():
                    found.add(int(entry.name))
        except OSError:
            continue
    return {pid for pid in found if alive(pid)}


class Sightings:
    """Every process with ``tag`` in its command line seen while the block runs
    (polled from a thread: a claim's processes live only as long as it does)."""

    def __init__(self, tag: str, every: float = 0.05):
        import threading

        self.tag, self.every, self.seen = tag, every, set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.seen |= tagged(self.tag)
            self._stop.wait(self.every)

    def __enter__(self) -> Sightings:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.seen |= tagged(self.tag)
