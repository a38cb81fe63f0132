"""Hostile claim scripts and runs: scripts that fork, detach, flood, hang and
crash; runs interrupted, killed, or started twice on one folder. Every process
a run starts ends with it, nothing is lost, and no traceback reaches the user."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from hostile import (
    SRC,
    Sightings,
    assert_clean_exit,
    cli,
    descendants,
    end,
    ready_for_ctrl_c,
    run_claims,
    tagged,
    wait_until,
    wait_until_gone,
)
from kb import build, write_claim, write_site
from torchclaims import limits
from torchclaims.evidence.records import Verdict, read_record
from torchclaims.evidence.results import read_results
from torchclaims.run import stopping
from torchclaims.run.runner import Runner

pytestmark = [
    pytest.mark.processes,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process trees are read from /proc"),
]


def leaver(tag: str, ending: str) -> str:
    """A script that starts a child, a setsid child and a double-forked daemon
    (each with ``tag`` in its command line), waits until all three run, then
    ends as ``ending`` says. The test finds them by the tag (hostile.tagged):
    a script can write nothing outside its own folder, and sees the pids of
    its own PID namespace."""
    start = f"""
import os, shutil, subprocess, time
sleep = shutil.which("sleep")
subprocess.Popen(["{tag}-child", "300"], executable=sleep)
subprocess.Popen(["{tag}-setsid", "301"], executable=sleep, start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sleep, ["{tag}-daemon", "302"])
    os._exit(0)

def running():
    found = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            found += open(f"/proc/{{pid}}/cmdline", "rb").read().startswith(b"{tag}-")
        except OSError:
            pass
    return found

while running() < 3:
    time.sleep(0.05)
time.sleep(1.0)  # time for the test to see them
"""
    endings = {
        "finish": 'with v.check("runs") as check:\n    check.expect(True, "")\nv.finish()\n',
        "raise": 'raise RuntimeError("the script broke")\n',
        "os_exit": "os._exit(9)\n",
        "segfault": "import ctypes\nctypes.string_at(0)\n",
        "hang": "time.sleep(3600)\n",
    }
    return start + endings[ending]


def new_tag() -> str:
    return f"tc-left-{uuid.uuid4().hex[:12]}"


def command_lines(pids: set[int]) -> dict[int, str]:
    """What each process runs, and its state, so a failure says which process was left."""
    found = {}
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            command, state = "(gone)", "-"
        found[pid] = f"[{state}] {command[:200]}"
    return found


def test_nothing_a_script_starts_outlives_its_run_however_it_ends(tmp_path):
    tag = new_tag()
    for ending in ("finish", "raise", "os_exit", "segfault", "hang"):
        write_claim(tmp_path, f"kb-{ending.replace('_', '-')}", leaver(f"{tag}-{ending}", ending))
    before = descendants(os.getpid())
    try:
        with Sightings(tag) as seen:
            outcome = run_claims(
                tmp_path, timeout=30
            )  # the hanging script's limit: time enough for the others on a loaded machine
        assert len(seen.seen) == 15, "each script started three processes"
        assert wait_until_gone(seen.seen, 60) == []
        assert tagged(tag) == set()
        # A browser an earlier test keeps open (a session fixture) may start a helper meanwhile: not this run's.
        earlier = before.union(*(descendants(pid) for pid in before))
        left = descendants(os.getpid()) - earlier
        assert left == set(), (
            f"the fork server, the resource tracker and every claim process have ended: {command_lines(left)}"
        )
    finally:
        end(tagged(tag))
    verdicts = {claim_id: record.verdict for claim_id, record in outcome.records.items()}
    assert verdicts == {
        "kb-finish": Verdict.HOLDS,
        **{f"kb-{e}": Verdict.ERROR for e in ("raise", "os-exit", "segfault", "hang")},
    }
    assert "timed out" in outcome.records["kb-hang"].reason


def test_a_claim_process_too_slow_to_end_its_script_is_ended_with_all_below_it(tmp_path, monkeypatch):
    """On a loaded machine a claim's process may not end its script's processes
    within the grace period: the run then ends the whole tree itself, the
    processes that left the claim's session included."""
    monkeypatch.setattr(stopping, "GRACE_S", 0.0)  # no time to end them itself
    tag = new_tag()
    write_claim(tmp_path, "kb-hang", leaver(tag, "hang"))
    try:
        with Sightings(tag) as seen:
            (record,) = run_claims(tmp_path, timeout=30).records.values()
        assert len(seen.seen) == 3, "the script started its processes"
        assert wait_until_gone(seen.seen, 60) == []
    finally:
        end(tagged(tag))
    assert "timed out" in record.reason


def test_each_script_gets_its_own_temporary_directory_removed_afterwards(tmp_path):
    body = """
import tempfile, json, os
place = tempfile.gettempdir()
open(os.path.join(place, "left-behind"), "w").write("x")
print("TMPDIR=" + json.dumps([place, os.environ["TMPDIR"]]))
raise SystemExit(1)
"""
    write_claim(tmp_path, "kb-one", body)
    write_claim(tmp_path, "kb-two", body)
    outcome = run_claims(tmp_path, timeout=60)
    places = []
    for record in outcome.records.values():
        line = next(line for line in record.log_tail.splitlines() if line.startswith("TMPDIR="))
        place, variable = json.loads(line.removeprefix("TMPDIR="))
        assert place == variable and not Path(place).exists()
        places.append(place)
    assert len(set(places)) == 2 and all(place != "/tmp" for place in places)


def test_flooded_output_is_kept_within_the_byte_limit(tmp_path):
    write_claim(
        tmp_path,
        "kb-flood",
        'import sys\nfor i in range(20000):\n    print("x" * 150)\n'
        'print("y" * 2_000_000)\nraise ValueError("the end of the flood")\n',
    )
    (record,) = run_claims(tmp_path, timeout=120).records.values()
    tail = record.log_tail.encode()
    assert len(tail) <= limits.LIMITS.log_tail_bytes
    assert "earlier bytes of output not kept" in record.log_tail
    assert "ValueError: the end of the flood" in record.log_tail


# -- the command line ----------------------------------------------------------------


def start_verify(root: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    command = [sys.executable, "-m", "torchclaims", "verify", "--root", str(root), "--jobs", "2", *args]
    return start_in_own_session(command, env)


def start_in_own_session(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    """The program under test in a session of its own, its output captured, as a terminal starts it."""
    return subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_at_its_default,
    )


def sigint_at_its_default() -> None:
    """A terminal's Ctrl-C reaches a program whose SIGINT is at its default; a test run started
    in the background by a shell without job control inherits SIGINT ignored, so the program
    under test is started with it reset (as Popen's preexec_fn)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# A run stopped by Ctrl-C or a kill must end within this; its hanging claim's own
# time limit (HANG_LIMIT) is far longer, so a run that ignored the signal fails.
STOP_WITHIN_S = 300
HANG_LIMIT = "1800"


def hanging_script_started(tag: str, process: subprocess.Popen, ctrl_c: bool) -> list[int]:
    """Wait until the hanging script's three processes run and, before a
    Ctrl-C, until every process of the run's group is ready for it; then the
    pids the run must end: the script's, and every process below the run
    (claim processes, fork server, resource tracker)."""
    wait_until(lambda: len(tagged(tag)) == 3, "the hanging script started its processes", process)
    if ctrl_c:
        wait_until(
            lambda: ready_for_ctrl_c(process.pid),
            "every process of the run's group set up its handling of Ctrl-C",
            process,
        )
    return sorted(tagged(tag)) + sorted(descendants(process.pid))


@pytest.mark.parametrize("how", ["ctrl-c", "kill -9"])
def test_an_interrupted_or_killed_verify_leaves_no_process(tmp_path, how):
    tag = new_tag()
    write_claim(tmp_path, "kb-hang", leaver(tag, "hang"))
    write_claim(tmp_path, "kb-holds", "holds")
    process = start_verify(tmp_path, "--timeout", HANG_LIMIT)
    started = []
    try:
        started = hanging_script_started(tag, process, ctrl_c=how == "ctrl-c")
        if how == "ctrl-c":
            os.killpg(process.pid, signal.SIGINT)  # what a terminal sends to the foreground group
        else:
            process.kill()
        out, err = process.communicate(timeout=STOP_WITHIN_S)  # not the hanging claim's time limit
        assert wait_until_gone(started, 60) == [], "processes outlived the run"
    finally:
        end(started)
    if how == "ctrl-c":
        assert process.returncode == 130
        assert_clean_exit((out, err))
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "interrupted" in lines[0] and "no results file written" in lines[0], err
        assert not list(tmp_path.glob("_build/results/*.json"))


def test_ctrl_c_reaches_no_process_of_the_fork_server_before_it_leaves_the_terminals_group(tmp_path):
    """A claim's process starts in the run's process group, where a Ctrl-C meant
    for the run also reaches it: until it leads its own session it ignores the
    signal (a KeyboardInterrupt there prints a traceback), then its script gets
    Python's usual handler back."""
    with Runner("cpu", parallel=1) as runner:
        process = runner._ctx.Process(target=signal.raise_signal, args=(signal.SIGINT,))  # forked by the fork server
        process.start()
        process.join(300)
    assert process.exitcode == 0
    body = """
import signal
with v.check("Ctrl-C raises KeyboardInterrupt in the script") as check:
    check.expect(signal.getsignal(signal.SIGINT) is signal.default_int_handler, str(signal.getsignal(signal.SIGINT)))
v.finish()
"""
    write_claim(tmp_path, "kb-sigint", body)
    (record,) = run_claims(tmp_path).records.values()
    assert record.verdict is Verdict.HOLDS, record.checks


def test_an_unusable_backend_is_refused_and_writes_no_results_file(tmp_path):
    write_claim(tmp_path, "kb-holds", "holds")
    run = cli("verify", "--root", str(tmp_path), "--backend", "neuron", "--output", str(tmp_path / "out"))
    assert_clean_exit(run)
    assert run.returncode == 2 and "backend neuron is not usable here" in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["--timeout", "-5"], {}, "must be a positive number of seconds"),
        (["--timeout", "nan"], {}, "must be a positive number of seconds"),
        ([], {"TORCHCLAIMS_TIMEOUT": "ten"}, "TORCHCLAIMS_TIMEOUT must be a number of seconds"),
        (["--jobs", "0"], {}, "--jobs must be at least 1"),
        (["--records-dir", "claims/kb-holds.toml"], {}, "is not a directory"),
        (["--workflow-run"], {"GITHUB_RUN_ID": ""}, "--workflow-run needs the GitHub Actions variables"),
    ],
)
def test_invalid_settings_are_one_clear_line(tmp_path, args, env, message):
    write_claim(tmp_path, "kb-holds", "holds")
    run = cli("verify", "--root", str(tmp_path), *args, cwd=tmp_path, env=env)
    assert_clean_exit(run)
    assert run.returncode == 2 and message in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_show_on_a_missing_results_directory_is_an_error(tmp_path):
    write_claim(tmp_path, "kb-holds", "holds")
    run = cli("show", "--root", str(tmp_path))
    assert run.returncode == 2 and "does not exist" in run.stderr


def test_two_runs_on_one_folder_neither_crash_nor_lose_records(tmp_path):
    for name in ("kb-a", "kb-b", "kb-c"):
        write_claim(tmp_path, name, "holds")
    output = tmp_path / "out"
    runs = [start_verify(tmp_path, "--force", "--output", str(output), "--label", "one box") for _ in range(2)]
    for process in runs:
        out, err = process.communicate(timeout=300)
        assert_clean_exit((out, err))
        assert process.returncode == 0, err
    (merged,) = output.glob("*.json")
    assert {r.claim_id for r in read_results(merged).records} == {"kb-a", "kb-b", "kb-c"}
    for name in ("kb-a", "kb-b", "kb-c"):
        assert read_record(tmp_path / "_build" / "records" / "cpu" / f"{name}.json").verdict is Verdict.HOLDS


def test_verifying_one_claim_keeps_the_records_of_the_others(tmp_path):
    write_claim(tmp_path, "kb-a", "holds")
    write_claim(tmp_path, "kb-b", "refuted")
    write_claim(tmp_path, "kb-gone", "holds")
    output = tmp_path / "results"
    assert cli("verify", "--root", str(tmp_path), "--output", str(output), "--label", "box").returncode == 0
    (first,) = output.glob("*.json")
    earlier = {r.claim_id: r for r in read_results(first).records}
    (tmp_path / "claims" / "kb-gone.toml").unlink()  # a claim removed since
    time.sleep(1.1)  # a new file name (it carries the time)
    run = cli("verify", "kb-a", "--force", "--root", str(tmp_path), "--output", str(output), "--label", "box")
    assert run.returncode == 0, run.stderr
    (second,) = output.glob("*.json")
    assert second != first and "kept the earlier records of 1 claim(s)" in run.stdout
    records = {r.claim_id: r for r in read_results(second).records}
    assert set(records) == {"kb-a", "kb-b"} and records["kb-b"].verdict is Verdict.REFUTED
    assert records["kb-a"].started_at > earlier["kb-a"].started_at and records["kb-b"] == earlier["kb-b"]


# -- the site build ------------------------------------------------------------------


def test_ctrl_c_stops_a_site_build_with_no_traceback_and_no_process_left(tmp_path):
    tag = new_tag()
    write_site(tmp_path)
    write_claim(tmp_path, "kb-hang", leaver(tag, "hang"))
    env = dict(os.environ, PYTHONPATH=str(SRC), TORCHCLAIMS_TIMEOUT=HANG_LIMIT)
    command = [sys.executable, "-m", "sphinx", "-b", "html", str(tmp_path), str(tmp_path / "_build" / "html")]
    process = start_in_own_session(command, env)
    started = []
    try:
        started = hanging_script_started(tag, process, ctrl_c=True)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=STOP_WITHIN_S)  # not the hanging claim's time limit
        assert wait_until_gone(started, 60) == []
    finally:
        end(started)
    assert process.returncode != 0
    assert_clean_exit((out, err))
    assert "Interrupted" in err


def test_an_invalid_build_setting_stops_the_build_with_one_message(tmp_path):
    write_site(tmp_path)
    write_claim(tmp_path, "kb-holds", "holds")
    run = build(tmp_path, TORCHCLAIMS_TIMEOUT="soon")
    assert run.returncode != 0
    assert_clean_exit(run)
    assert "torchclaims_timeout (TORCHCLAIMS_TIMEOUT) must be a number of seconds, not 'soon'" in run.stderr
    assert "Configuration error!" in run.stderr  # Sphinx's report of a setting, before any claim ran
    assert "kb-holds" not in run.stdout + run.stderr
