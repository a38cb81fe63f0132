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
from pathlib import Path

import pytest
from hostile import SRC, assert_clean_exit, cli, descendants, end, run_claims, wait_until_gone
from kb import build, write_claim, write_site

from torchclaims import limits
from torchclaims.records import Verdict, read_record
from torchclaims.results import read_results

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process trees are read from /proc")


def leaver(pidfile: Path, ending: str) -> str:
    """A script that starts a child, a setsid child and a double-forked daemon,
    writes their pids, then ends as ``ending`` says."""
    start = f"""
import os, subprocess, time
pids = [subprocess.Popen(["sleep", "300"]).pid, subprocess.Popen(["setsid", "sleep", "301"]).pid]
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    daemon = os.fork()
    if daemon == 0:
        time.sleep(302)
        os._exit(0)
    os.write(w, str(daemon).encode())
    os._exit(0)
pids.append(int(os.read(r, 32)))
with open({str(pidfile)!r}, "a") as handle:
    handle.write(" ".join(map(str, pids)) + "\\n")
"""
    endings = {
        "finish": 'with v.check("runs") as check:\n    check.expect(True, "")\nv.finish()\n',
        "raise": 'raise RuntimeError("the script broke")\n',
        "os_exit": "os._exit(9)\n",
        "segfault": "import ctypes\nctypes.string_at(0)\n",
        "hang": "time.sleep(3600)\n",
    }
    return start + endings[ending]


def recorded_pids(pidfile: Path) -> list[int]:
    return [int(pid) for pid in pidfile.read_text().split()] if pidfile.exists() else []


def test_nothing_a_script_starts_outlives_its_run_however_it_ends(tmp_path):
    pidfile = tmp_path / "pids"
    for ending in ("finish", "raise", "os_exit", "segfault", "hang"):
        write_claim(tmp_path, f"kb-{ending.replace('_', '-')}", leaver(pidfile, ending))
    before = descendants(os.getpid())
    try:
        outcome = run_claims(tmp_path, timeout=8)
        started = recorded_pids(pidfile)
        assert len(started) == 15, "each script started three processes"
        assert wait_until_gone(started, 5) == []
        assert descendants(os.getpid()) - before == set(), "the fork server, the resource tracker and every claim process have ended"
    finally:
        end(recorded_pids(pidfile))
    verdicts = {claim_id: record.verdict for claim_id, record in outcome.records.items()}
    assert verdicts == {"kb-finish": Verdict.HOLDS, **{f"kb-{e}": Verdict.ERROR for e in ("raise", "os-exit", "segfault", "hang")}}
    assert "timed out" in outcome.records["kb-hang"].reason


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
    write_claim(tmp_path, "kb-flood", 'import sys\nfor i in range(20000):\n    print("x" * 150)\nprint("y" * 2_000_000)\nraise ValueError("the end of the flood")\n')
    (record,) = run_claims(tmp_path, timeout=120).records.values()
    tail = record.log_tail.encode()
    assert len(tail) <= limits.LIMITS.log_tail_bytes
    assert "earlier bytes of output not kept" in record.log_tail
    assert "ValueError: the end of the flood" in record.log_tail


# -- the command line ----------------------------------------------------------------


def start_verify(root: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    command = [sys.executable, "-m", "torchclaims", "verify", "--root", str(root), "--jobs", "2", *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for(path: Path, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the scripts never started"
        time.sleep(0.1)


@pytest.mark.parametrize("how", ["ctrl-c", "kill -9"])
def test_an_interrupted_or_killed_verify_leaves_no_process(tmp_path, how):
    pidfile = tmp_path / "pids"
    write_claim(tmp_path, "kb-hang", leaver(pidfile, "hang"))
    write_claim(tmp_path, "kb-holds", "holds")
    process = start_verify(tmp_path)
    started = []
    try:
        wait_for(pidfile, process)
        started = recorded_pids(pidfile) + sorted(descendants(process.pid))  # scripts, claim processes, helpers
        sent = time.monotonic()
        if how == "ctrl-c":
            os.killpg(process.pid, signal.SIGINT)  # what a terminal sends to the foreground group
        else:
            process.kill()
        out, err = process.communicate(timeout=60)
        assert wait_until_gone(started, 20) == [], "processes outlived the run"
    finally:
        end(started)
    if how == "ctrl-c":
        assert time.monotonic() - sent < 20, "Ctrl-C must stop promptly"
        assert process.returncode == 130
        assert_clean_exit((out, err))
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "interrupted" in lines[0] and "no results file written" in lines[0], err
        assert not list(tmp_path.glob("_build/results/*.json"))


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
    pidfile = tmp_path / "pids"
    write_site(tmp_path)
    write_claim(tmp_path, "kb-hang", leaver(pidfile, "hang"))
    env = dict(os.environ, PYTHONPATH=str(SRC))
    command = [sys.executable, "-m", "sphinx", "-b", "html", str(tmp_path), str(tmp_path / "_build" / "html")]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    started = []
    try:
        wait_for(pidfile, process)
        started = recorded_pids(pidfile) + sorted(descendants(process.pid))
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
        assert wait_until_gone(started, 20) == []
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
