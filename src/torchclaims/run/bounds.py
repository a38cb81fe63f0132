"""Resource bounds of one claim: what its script, and all it starts, may take.

Each bound is a field of ``torchclaims.limits.Limits`` (docs/limits.md renders
them); a run that goes past one gets an error record naming the field, and
neither the build nor another claim notices. Measured on Linux 6.18, with the
build running as root and as an ordinary user:

* Processes and threads. A claim's processes all live below its supervisor, in
  their own PID namespace (torchclaims.run.sandbox): the supervisor counts them,
  their threads and the memory they hold every ``WATCH_S`` and, past
  ``claim_processes``, ``claim_tasks`` or ``claim_memory_share``, freezes and
  ends them all (``while_running``). The kernel bounds tasks as they start, too,
  where it counts them per claim: the script's process sets RLIMIT_NPROC
  (``claim_tasks``, threads included) inside the claim's own user namespace,
  where the kernel (5.14 on) counts that namespace's tasks only (measured: 30
  processes of the same user outside did not count). The kernel ignores the
  limit for root, so a build run as root has the supervisor's count alone. A
  cgroup (pids.max, memory.max) would bound both exactly, but making one needs
  write access to a cgroup v2 tree: root on a host that mounts one so, or a
  tree delegated to the user, which CI runners do not give.
* Memory: RLIMIT_DATA, per process. It counts private writable memory (what
  malloc and torch's CPU allocator take), not address space: CUDA and torch
  reserve large address ranges they never write, which an RLIMIT_AS bound
  would count (and CUDA would not start). An allocation past it fails
  (MemoryError, torch's "can't allocate memory"), and the record says so.
  Together, a claim's processes hold the sum of their proportional set sizes
  (a page shared by n processes counts 1/n: the fork server's, which every
  claim maps, count once) and what its own /dev/shm holds (a tmpfs of its
  mount namespace: memory, mapped or not), which no rlimit bounds: the
  supervisor's count does.
* Open files: RLIMIT_NOFILE, per process (EMFILE).
* Disk: every file the script writes stays within ``folder_bytes`` as it is
  written (RLIMIT_FSIZE: EFBIG; Python ignores SIGXFSZ); the whole folder is
  measured after the run (``du``), as are the folder's depth, the files it
  holds and the figures, before anything is taken from it.

Setting a limit never raises it (a hard limit below ours stays), and the hard
limit is lowered too, so the script cannot raise it back.
"""

from __future__ import annotations

import errno
import os
import re
import resource
import subprocess

from ..limits import MAX_FIGURES, Limits
from . import processes
from .folders import MEASURE_TIMEOUT_S, disk_use

WATCH_S = 0.25  # how often the supervisor counts a claim's processes
# How a script's last exception reads when it ran into a bound (its type and
# message, or the last line of sphinx-gallery's traceback).
_OUT_OF_MEMORY = re.compile(r"(^|\W)\w*MemoryError\b|can't allocate memory")
_ERRNO = re.compile(r"\[Errno (\d+)\]")
_NO_THREAD = "can't start new thread"  # Python's words when the kernel refuses a thread (RLIMIT_NPROC)
_PSS = re.compile(rb"^Pss:\s+(\d+) kB", re.MULTILINE)


def in_units(n: int) -> str:
    """``n`` bytes as a reader reads them (3 significant digits)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def _of_machine(share: float) -> int:
    return int(share * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def memory_bytes(bounds: Limits) -> int:
    """The data each of a claim's processes may hold: its share of this machine's memory."""
    return _of_machine(bounds.process_memory_share)


def claim_memory_bytes(bounds: Limits) -> int:
    """The memory all of a claim's processes may hold together: its share of this machine's."""
    return _of_machine(bounds.claim_memory_share)


def restrict(bounds: Limits, own_user_namespace: bool) -> None:
    """In the script's process, before the script runs: the kernel's limits.
    RLIMIT_NPROC only in the claim's own user namespace: elsewhere it would
    count every process of the user (the build's, other claims')."""
    wanted = {
        resource.RLIMIT_DATA: memory_bytes(bounds),
        resource.RLIMIT_NOFILE: bounds.open_files,
        resource.RLIMIT_FSIZE: bounds.folder_bytes,
    }
    if own_user_namespace:
        wanted[resource.RLIMIT_NPROC] = bounds.claim_tasks
    for which, value in wanted.items():
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def exceeded_by(ending: str, bounds: Limits) -> str | None:
    """The bound that the exception the script ended with (``Type: message``) says
    it ran into, or None. The words are the script's: this only explains an error."""
    code = _ERRNO.search(ending)
    number = int(code.group(1)) if code else None
    if _OUT_OF_MEMORY.search(ending) or number == errno.ENOMEM:
        return (
            f"a memory allocation failed: each of a claim's processes may hold "
            f"{in_units(memory_bytes(bounds))} of data (limit process_memory_share)"
        )
    if _NO_THREAD in ending:
        return f"a thread or process could not start (limit claim_tasks: {bounds.claim_tasks:,})"
    if number == errno.EMFILE:
        return f"a process opened more than {bounds.open_files:,} files (limit open_files)"
    if number == errno.EFBIG:
        return f"a file grew past {in_units(bounds.folder_bytes)} (limit folder_bytes)"
    return None


def while_running(root: int, bounds: Limits, shm: str) -> str | None:
    """Why the claim below ``root`` (its supervisor) must stop now, or None: the
    bounds on what its processes take together, which no rlimit counts per claim.
    ``shm`` is the claim's /dev/shm as seen from here (through one of its processes)."""
    usage = processes.usage_below(root)
    count = len(usage)
    if count > bounds.claim_processes:
        return f"it ran more than {bounds.claim_processes:,} processes at once ({count:,}; limit claim_processes)"
    tasks = sum(u.threads for u in usage.values())
    if tasks > bounds.claim_tasks:
        return f"it ran more than {bounds.claim_tasks:,} processes and threads at once ({tasks:,}; limit claim_tasks)"
    limit, shared = claim_memory_bytes(bounds), _private_tmpfs_bytes(shm)
    # The resident sizes bound the proportional ones from above and cost a read of stat
    # that was made anyway: smaps_rollup (milliseconds for a process with torch) only past them.
    if sum(u.resident for u in usage.values()) + shared <= limit:
        return None
    held = sum(map(_proportional_memory, usage)) + shared
    if held > limit:
        return (
            f"its processes held {in_units(held)} of memory together, more than "
            f"{in_units(limit)} (limit claim_memory_share)"
        )
    return None


def _private_tmpfs_bytes(shm: str) -> int:
    """What the claim wrote into its own /dev/shm, a tmpfs of its mount namespace:
    memory that no process's set holds unless one maps it (then it counts twice:
    the bound errs high). 0 where its /dev/shm is the machine's (no private
    mounts): what others wrote there is not the claim's to answer for."""
    try:
        if os.stat(shm).st_dev == os.stat("/dev/shm").st_dev:
            return 0
        found = os.statvfs(shm)
    except OSError:
        return 0
    return (found.f_blocks - found.f_bfree) * found.f_frsize


def _proportional_memory(pid: int) -> int:
    """What ``pid`` holds of the machine's memory: its proportional set size (a page
    it shares with n processes counts 1/n, so the fork server's pages that every
    claim maps are not counted once per process); 0 once it has ended."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            rollup = handle.read()
    except OSError:
        return 0
    found = _PSS.search(rollup)
    return int(found.group(1)) * 1024 if found else 0


def folder_problems(folder: str, figure_folders: list[str], bounds: Limits) -> list[str]:
    """After the run, with every process of the claim ended: each bound its own
    folder goes past. ``figure_folders`` hold what may be kept as figures.
    A folder that cannot be measured is a problem too, never a pass."""
    if not os.path.isdir(folder):
        return []  # the script removed its own folder: nothing left to keep or measure
    return (
        _depth_problems(folder, bounds)
        + _disk_problems(folder, bounds)
        + _count_problems(folder, bounds)
        + _figure_problems(figure_folders, bounds)
    )


def _depth_problems(folder: str, bounds: Limits) -> list[str]:
    level = str(bounds.folder_depth + 1)
    deeper = _run(["find", folder, "-mindepth", level, "-maxdepth", level, "-print", "-quit"])
    if deeper is None:
        return [f"its folder's depth could not be measured (limit folder_depth: {bounds.folder_depth})"]
    return [f"it nested folders more than {bounds.folder_depth} deep (limit folder_depth)"] if deeper else []


def _disk_problems(folder: str, bounds: Limits) -> list[str]:
    limit = in_units(bounds.folder_bytes)
    used = _du(folder, "-B1")
    if used is None:
        return [f"its folder's disk use could not be measured (limit folder_bytes: {limit})"]
    if used > bounds.folder_bytes:
        return [f"its folder used {in_units(used)} of disk, more than {limit} (limit folder_bytes)"]
    return []


def _count_problems(folder: str, bounds: Limits) -> list[str]:
    """Files and folders (inodes: a link, a FIFO, an empty file each take one)."""
    held = _du(folder, "--inodes")
    if held is None:
        return [f"the files in its folder could not be counted (limit folder_files: {bounds.folder_files:,})"]
    held -= 1  # the folder itself
    if held > bounds.folder_files:
        return [f"its folder held {held:,} files and folders, more than {bounds.folder_files:,} (limit folder_files)"]
    return []


def _du(folder: str, unit: str) -> int | None:
    """What ``du`` counts in ``folder`` in ``unit`` (bytes, inodes), or None."""
    said = disk_use(folder, "-s", unit)
    return said[0][0] if said else None


def _figure_problems(folders: list[str], bounds: Limits) -> list[str]:
    """More files than ``MAX_FIGURES`` where figures are taken from, or one larger
    than ``figure_bytes`` (its size as stat says it: a sparse file would be copied whole)."""
    sizes = []
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                sizes += [e.stat(follow_symlinks=False).st_size for e in entries if e.is_file(follow_symlinks=False)]
        except OSError:
            continue  # no such folder: no figures
    problems = []
    if len(sizes) > MAX_FIGURES:
        problems.append(f"it left {len(sizes)} figures, more than {MAX_FIGURES} (limit MAX_FIGURES)")
    largest = max(sizes, default=0)
    if largest > bounds.figure_bytes:
        problems.append(
            f"it left a figure of {in_units(largest)}, more than {in_units(bounds.figure_bytes)} (limit figure_bytes)"
        )
    return problems


def _run(command: list[str]) -> str | None:
    """What ``command`` printed, or None when it failed. find walks any
    depth and follows no link (Python's os.walk recurses, and stops on a deep tree)."""
    try:
        done = subprocess.run(command, capture_output=True, timeout=MEASURE_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None
