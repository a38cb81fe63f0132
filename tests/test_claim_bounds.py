"""What one claim may take while it runs (torchclaims.run.bounds): processes,
memory, open files, disk, folder depth and figures. A claim that goes past a
bound gets an error record naming the limit; the claim beside it still holds,
and the run completes. Each case holds on a run without the bound."""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile

import pytest

from hostile import run_claims, tagged
from kb import write_claim
from test_hostile_scripts import new_tag
from torchclaims import limits
from torchclaims.evidence.records import Verdict
from torchclaims.run import bounds
from torchclaims.run.folders import remove_tree, scratch_folder

pytestmark = [
    pytest.mark.processes,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a claim's processes are counted in /proc"),
]

HOLDS = """
with v.check("went on") as check:
    check.expect(True, "")
v.finish()
"""


def bounded(monkeypatch, **changes) -> limits.Limits:
    """Run with these limits (the runner reads them as each claim starts)."""
    changed = dataclasses.replace(limits.LIMITS, **changes)
    monkeypatch.setattr(limits, "LIMITS", changed)
    return changed


def run_beside_one_that_holds(tmp_path, body: str) -> str:
    """Run ``body`` as claim kb-greedy beside a claim that holds; the greedy one's
    error (it must be one), after checking the other was unharmed."""
    write_claim(tmp_path, "kb-greedy", body + HOLDS)
    write_claim(tmp_path, "kb-modest", "holds")
    records = run_claims(tmp_path, timeout=120).records
    assert records["kb-modest"].verdict is Verdict.HOLDS, records["kb-modest"].reason
    greedy = records["kb-greedy"]
    assert greedy.verdict is Verdict.ERROR, (greedy.verdict, greedy.reason)
    assert not greedy.checks and not greedy.figures
    return greedy.reason


def test_a_fork_bomb_is_stopped_at_the_process_limit_and_leaves_nothing(tmp_path, monkeypatch):
    bounded(monkeypatch, claim_processes=20)
    tag = new_tag()
    bomb = f"""
import os, shutil, time
sleep = shutil.which("sleep")
for _ in range(60):
    if os.fork() == 0:
        os.execv(sleep, ["{tag}", "300"])
time.sleep(20)  # long enough for the supervisor's count; a run without the bound holds after it
"""
    reason = run_beside_one_that_holds(tmp_path, bomb)
    assert "more than 20 processes at once" in reason and "limit claim_processes" in reason
    assert not tagged(tag)


def test_an_allocation_past_the_memory_bound_is_an_error_record(tmp_path, monkeypatch):
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    limit = bounded(monkeypatch, process_memory_share=(1 << 30) / machine)  # 1 GiB of data per process
    # torch.empty takes the memory without touching it: a run without the bound holds, using none of it.
    reason = run_beside_one_that_holds(tmp_path, "big = torch.empty(2 << 30, dtype=torch.uint8)\n")
    assert "can't allocate memory" in reason and "limit process_memory_share" in reason
    assert bounds.memory_bytes(limit) == pytest.approx(1 << 30, rel=0.01)


def test_processes_holding_more_memory_together_than_the_claims_share_are_stopped(tmp_path, monkeypatch):
    """Each process within its own bound (RLIMIT_DATA), the four together past the claim's:
    the supervisor sums what they hold (a run without the bound holds after its sleep)."""
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    limit = bounded(monkeypatch, claim_memory_share=(600 << 20) / machine)
    body = """
import os, time
for _ in range(4):
    if os.fork() == 0:
        held = b"\\1" * (300 << 20)  # written, so resident: 300 MiB in each process
        time.sleep(30)
        os._exit(0)
time.sleep(30)
"""
    reason = run_beside_one_that_holds(tmp_path, body)
    assert "of memory together, more than 600 MiB (limit claim_memory_share)" in reason
    assert bounds.claim_memory_bytes(limit) == pytest.approx(600 << 20, rel=0.01)


def test_memory_forked_processes_share_counts_once(tmp_path, monkeypatch):
    """300 MiB written, then shared by four processes: their resident sizes add up
    to 1.2 GiB, their proportional ones to the 300 MiB they hold. Within the bound."""
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    bounded(monkeypatch, claim_memory_share=(600 << 20) / machine)
    body = """
import os, time
held = b"\\1" * (300 << 20)
for _ in range(3):
    if os.fork() == 0:
        time.sleep(5)
        os._exit(0)
time.sleep(5)
"""
    write_claim(tmp_path, "kb-sharing", body + HOLDS)
    record = run_claims(tmp_path, timeout=120).records["kb-sharing"]
    assert record.verdict is Verdict.HOLDS, record.reason


def test_memory_written_into_the_claims_own_shm_counts_towards_its_share(tmp_path, monkeypatch):
    """/dev/shm is a tmpfs of the claim's mount namespace, writable by its script:
    what a file there holds is memory, though no process maps it."""
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    bounded(monkeypatch, claim_memory_share=(600 << 20) / machine)
    body = """
import time
with open("/dev/shm/filler", "wb") as handle:
    for _ in range(8):
        handle.write(b"\\1" * (100 << 20))
time.sleep(30)
"""
    reason = run_beside_one_that_holds(tmp_path, body)
    assert "of memory together, more than 600 MiB (limit claim_memory_share)" in reason


def test_a_thread_bomb_is_stopped_at_the_task_limit(tmp_path, monkeypatch):
    """Threads count as tasks: by the supervisor's count (the only one under root,
    where the kernel ignores RLIMIT_NPROC), else by the kernel refusing the thread."""
    bounded(monkeypatch, claim_tasks=100)
    body = """
import threading, time
for _ in range(300):
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
time.sleep(30)
"""
    reason = run_beside_one_that_holds(tmp_path, body)
    assert "limit claim_tasks" in reason


def test_a_folder_holding_more_files_than_the_limit_is_an_error_record(tmp_path, monkeypatch):
    bounded(monkeypatch, folder_files=100)
    body = """
import os
for n in range(300):  # empty: no disk bound sees them
    open(os.path.join(os.environ["TMPDIR"], f"empty-{n}"), "w").close()
"""
    reason = run_beside_one_that_holds(tmp_path, body)
    assert "more than 100 (limit folder_files)" in reason


def test_too_many_open_files_is_an_error_record_naming_the_limit(tmp_path, monkeypatch):
    bounded(monkeypatch, open_files=64)
    body = "import os\nkept = [open(os.devnull) for _ in range(200)]\n"
    reason = run_beside_one_that_holds(tmp_path, body)
    assert "Too many open files" in reason or "[Errno 24]" in reason
    assert "more than 64 files (limit open_files)" in reason


def test_a_file_past_the_folder_bound_fails_as_it_is_written(tmp_path, monkeypatch):
    bounded(monkeypatch, folder_bytes=1 << 20)
    body = """
import os
with open(os.path.join(os.environ["TMPDIR"], "sparse"), "wb") as handle:
    handle.seek(1 << 30)  # sparse: no disk used, but a file of 1 GiB
    handle.write(b"x")
"""
    reason = run_beside_one_that_holds(tmp_path, body)
    assert "a file grew past 1 MiB (limit folder_bytes)" in reason


def test_a_folder_past_the_disk_bound_is_an_error_record(tmp_path, monkeypatch):
    bounded(monkeypatch, folder_bytes=1 << 20)
    body = """
import os
for n in range(3):  # each file within the bound, the three together past it
    with open(os.path.join(os.environ["TMPDIR"], f"part-{n}"), "wb") as handle:
        handle.write(os.urandom(600 << 10))
"""
    reason = run_beside_one_that_holds(tmp_path, body)
    assert "of disk, more than 1 MiB (limit folder_bytes)" in reason


FIGURES = """
import os
figures = os.path.join(os.environ["TMPDIR"], os.pardir, "figures")  # where the runner takes them from
os.makedirs(figures, exist_ok=True)
"""


def test_more_figures_than_the_limit_are_refused(tmp_path):
    body = (
        FIGURES
        + f"""
for n in range({limits.MAX_FIGURES + 10}):
    with open(os.path.join(figures, f"figure-{{n}}.png"), "wb") as handle:
        handle.write(b"\\x89PNG\\r\\n\\x1a\\n")
"""
    )
    reason = run_beside_one_that_holds(tmp_path, body)
    assert f"it left {limits.MAX_FIGURES + 10} figures, more than {limits.MAX_FIGURES} (limit MAX_FIGURES)" in reason
    assert not list((tmp_path / "_build").rglob("figure-*.png"))


def test_a_sparse_figure_past_the_size_limit_is_refused_not_copied(tmp_path):
    body = (
        FIGURES
        + """
with open(os.path.join(figures, "figure-1.png"), "wb") as handle:
    handle.write(b"\\x89PNG\\r\\n\\x1a\\n")
    handle.truncate(1 << 30)  # 1 GiB on paper, no disk used: a copy would write all of it
"""
    )
    reason = run_beside_one_that_holds(tmp_path, body)
    assert "it left a figure of 1 GiB, more than 8 MiB (limit figure_bytes)" in reason
    assert not list((tmp_path / "_build").rglob("figure-*.png"))


@pytest.mark.parametrize("under", ["tmp", "figures"])
def test_a_folder_tree_past_the_depth_limit_is_an_error_record_and_is_removed(tmp_path, under):
    """2,500 levels: deeper than Python's recursion limit (shutil.rmtree and
    os.walk raised RecursionError in the build's own process) and than a path may be long."""
    body = f"""
import os
top = os.path.join(os.environ["TMPDIR"], os.pardir, "{under}")
os.makedirs(top, exist_ok=True)
os.chdir(top)
for _ in range(2500):
    os.mkdir("d")
    os.chdir("d")
os.chdir(os.environ["TMPDIR"])
"""
    reason = run_beside_one_that_holds(tmp_path, body)
    assert f"it nested folders more than {limits.LIMITS.folder_depth} deep (limit folder_depth)" in reason


def test_a_process_count_below_the_limit_stops_nothing(tmp_path, monkeypatch):
    """The bound counts processes at once: a script that starts many in turn runs to its end."""
    bounded(monkeypatch, claim_processes=20)
    body = """
import subprocess
for _ in range(60):
    subprocess.run(["true"], check=True)
"""
    write_claim(tmp_path, "kb-sequential", body + HOLDS)
    record = run_claims(tmp_path, timeout=120).records["kb-sequential"]
    assert record.verdict is Verdict.HOLDS, record.reason


@pytest.mark.parametrize(
    ("ending", "field"),
    [
        ("MemoryError", "process_memory_share"),
        ("_ArrayMemoryError: Unable to allocate 8.00 GiB for an array", "process_memory_share"),
        ("RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 1", "process_memory_share"),
        ("OSError: [Errno 12] Cannot allocate memory", "process_memory_share"),
        ("OSError: [Errno 24] Too many open files: 'x'", "open_files"),
        ("OSError: [Errno 27] File too large", "folder_bytes"),
        ("ValueError: [Errno 2] something else", None),
        ("RuntimeError: the script broke", None),
    ],
)
def test_the_bound_an_ending_names(ending, field):
    named = bounds.exceeded_by(ending, limits.LIMITS)
    assert (named is None) if field is None else (f"(limit {field})" in named)


def test_a_tree_whose_folders_its_owner_made_unreadable_is_removed(tmp_path):
    """A script may chmod its own folders to 0: rm -rf of a user other than root
    then stops there. Removed by an ordinary user (this one, or nobody under root),
    in a forked child that makes the tree and removes it."""
    place = tempfile.mkdtemp(dir=tempfile.gettempdir())
    os.chmod(place, 0o777)  # nobody makes and removes the tree in it
    tree = os.path.join(place, "work")
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            os.makedirs(os.path.join(tree, "a", "b", "c"))
            for folder in ("a/b", "a", ""):
                os.chmod(os.path.join(tree, folder), 0)
            remove_tree(tree)
            code = 1 if os.path.lexists(tree) else 0
        finally:
            os._exit(code)
    try:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the tree was left behind (1) or the child failed (3)"
    finally:
        remove_tree(place)


def test_the_runs_scratch_folder_is_removed_whatever_depth_a_claim_left_in_it():
    """What an interrupted claim leaves stays until the run's folder goes:
    tempfile.TemporaryDirectory would raise RecursionError there, in the build's process."""
    with scratch_folder("torchclaims-test-") as scratch:
        fd = os.open(scratch, os.O_RDONLY)
        for _ in range(2500):
            os.mkdir("d", dir_fd=fd)
            deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = deeper
        os.close(fd)
    assert not scratch.exists()
