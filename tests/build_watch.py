"""Running one build (or verify) and watching what it does to the machine.

Used by benchmarks/build_speed.py and by the tests of clean exits. A build runs
as its own process with a marker in its environment. While it runs, a sampler
adds up the memory of its whole process tree (every process below it, claims'
processes and their scripts included): RSS, which counts a page shared by
several processes once in each, and PSS, which splits it between them. A
``sitecustomize`` on ``PYTHONPATH`` installs an audit hook in every Python
process the build starts, which notes each process that imports torch or
starts a process (fork, exec, subprocess). After the build, every process
that still carries the marker is one the build left behind.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from torchclaims.run.processes import descendants

MARKER = "TORCHCLAIMS_BENCH_RUN"
IMPORTS = "TORCHCLAIMS_BENCH_IMPORTS"

SITECUSTOMIZE = f'''\
import os, re, sys

_TORCH = re.compile(r"[\\\\/]torch[\\\\/](__pycache__[\\\\/])?__init__\\.")
_where = os.environ.get("{IMPORTS}")
_STARTS = ("os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.system", "subprocess.Popen")
if _where:
    def _note(event, args):
        # importlib.import_module raises no "import" event: reading torch's own
        # __init__ (source or bytecode) shows those imports.
        if (event == "import" and args[0] == "torch") or (event == "open" and _TORCH.search(str(args[0]))):
            kind = "torch"
        elif event in _STARTS:
            kind = "starts"
        else:
            return
        what = " ".join(sys.argv)[:300] + (f" [{{event}} {{str(args[:2])[:200]}}]" if kind == "starts" else "")
        try:
            with open(os.path.join(_where, f"{{os.getpid()}}.{{kind}}"), "a") as handle:
                handle.write(what + "\\n")
        except OSError:
            pass

    sys.addaudithook(_note)
'''


@dataclass
class Run:
    """What one build cost."""

    command: list[str]
    seconds: float
    returncode: int
    peak_rss_mb: float
    peak_pss_mb: float
    torch_imported_by: list[str]  # command lines of the processes that imported torch
    starters: list[str]  # command lines of the Python processes that started a process
    left_behind: list[str]  # processes still running after the build ended
    output: str = field(repr=False)


def install_hook(directory: Path) -> Path:
    """A folder to put first on PYTHONPATH: its sitecustomize notes torch imports."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return directory


def tree(root: int) -> set[int]:
    """``root`` and every live process below it."""
    return {root} | descendants(root)


def _memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; zeros when it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            values = dict(line.split(":", 1) for line in handle if ":" in line and not line[0].isdigit())
        return int(values["Rss"].split()[0]), int(values["Pss"].split()[0])
    except (OSError, KeyError, ValueError):
        return 0, 0


class _Sampler(threading.Thread):
    # Reading smaps_rollup walks a process's page tables: about 10 ms for one
    # with torch imported. Sampled five times a second, the tree of a cold build
    # cost a third of a core, which the build's time then included.
    def __init__(self, root: int, every: float = 1.0):
        super().__init__(daemon=True)
        self.root, self.every = root, every
        self.peak_rss = self.peak_pss = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            sizes = [_memory_kb(pid) for pid in tree(self.root)]
            self.peak_rss = max(self.peak_rss, sum(r for r, _ in sizes))
            self.peak_pss = max(self.peak_pss, sum(p for _, p in sizes))
            self.stop.wait(self.every)


def marked(run_id: str) -> list[str]:
    """Processes whose environment carries this run's marker: 'pid command'."""
    needle = f"{MARKER}={run_id}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                if needle not in handle.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
        except OSError:
            continue
        found.append(f"{entry.name} {command[:120]}")
    return found


def run(command: list[str], cwd: Path, env: dict[str, str], hook_dir: Path, timeout: float = 3600) -> Run:
    """Run one build, measuring time, memory, torch imports and what is left after it."""
    run_id = uuid.uuid4().hex
    imports = hook_dir / "imports" / run_id
    imports.mkdir(parents=True)
    environment = dict(env, **{MARKER: run_id, IMPORTS: str(imports)})
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook_dir), env.get("PYTHONPATH", "")) if p)
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    sampler = _Sampler(process.pid)
    sampler.start()
    try:
        output, _ = process.communicate(timeout=timeout)
    finally:
        seconds = time.perf_counter() - started
        sampler.stop.set()
        sampler.join()
    time.sleep(0.5)  # what a build ends on its way out has ended by now
    noted = {
        kind: [p.read_text(errors="replace").splitlines()[0] for p in sorted(imports.glob(f"*.{kind}"))]
        for kind in ("torch", "starts")
    }
    return Run(
        command,
        seconds,
        process.returncode,
        sampler.peak_rss / 1024,
        sampler.peak_pss / 1024,
        noted["torch"],
        noted["starts"],
        marked(run_id),
        output,
    )


def end(left: list[str]) -> None:
    """Kill what a build left behind (by pid), so one build cannot slow the next."""
    for item in left:
        try:
            os.kill(int(item.split()[0]), 9)
        except (ProcessLookupError, PermissionError, ValueError):
            pass
