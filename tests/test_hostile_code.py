"""Hostile claim scripts and helpers: code that forges its verdict, writes where
it must not, reaches the network, kills its supervisor or leaves processes.

Each case asserts the verdict the run records, that nothing outside the
claim's own folder changed, and that no process is left (the data side is
tests/test_hostile_results.py; processes that fork and hang,
tests/test_hostile_scripts.py)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
import uuid
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hostile import Sightings, end, run_claims, tagged, wait_until_gone
from kb import page_text, write_claim
from test_hostile_scripts import leaver, new_tag
from torchclaims.authoring.lint import lint
from torchclaims.errors import InvalidFileError
from torchclaims.evidence.judging import read_own_record
from torchclaims.evidence.records import Verdict, read_record, record_json
from torchclaims.evidence.store import THIS_BUILD, Entry
from torchclaims.run import sandbox
from torchclaims.run.cache_eviction import USED

# Where CI=true the sandbox is required: these tests then run, and fail without it.
pytestmark = [
    pytest.mark.processes,
    pytest.mark.skipif(
        not sandbox.required() and (not sys.platform.startswith("linux") or sandbox.landlock_abi() < sandbox.MIN_ABI),
        reason="the sandbox needs Linux with Landlock ABI 4 or later",
    ),
]

# A check comparing ones with zeros: it can only hold if something forged it.
ONES_VS_ZEROS = """
with v.check("ones equal zeros") as check:
    check.close(torch.ones(3), torch.zeros(3), rtol=0, atol=0, what="ones")
v.finish()
"""


def snapshot(*roots: Path, skip: tuple[Path, ...] = ()) -> dict[str, tuple]:
    """Every path below ``roots`` with its type and content digest, links not followed."""
    state = {}
    for root in roots:
        for parent, dirs, files in os.walk(root):
            for name in dirs + files:
                path = Path(parent, name)
                if any(path == s or s in path.parents for s in skip):
                    continue
                info = os.lstat(path)
                digest = (
                    hashlib.sha256(path.read_bytes()).hexdigest()
                    if stat.S_ISREG(info.st_mode)
                    else os.readlink(path)
                    if stat.S_ISLNK(info.st_mode)
                    else ""
                )
                state[str(path)] = (stat.S_IFMT(info.st_mode), digest)
    return state


def runner_writes(root: Path, claim_ids: list[str]) -> tuple[Path, ...]:
    """What a run itself may write: the claims' records and figures, the memo, the probe's answer."""
    records = root / "_build" / "records"
    return (
        *(records / "cpu" / f"{c}.json" for c in claim_ids),
        *(records / "cpu" / c for c in claim_ids),
        records / "memo.json",
        *records.glob("probe-*.json"),
        *(records / "compiler-caches" / "cpu" / c for c in claim_ids),  # each claim's own
        *(records / "compiler-caches" / "cpu" / f"{c}{USED}" for c in claim_ids),  # when each last ran
    )


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A $HOME of the test's own, for the fork server and every script."""
    place = tmp_path / "home"
    place.mkdir()
    (place / ".bashrc").write_text("# the user's own\n")
    monkeypatch.setenv("HOME", str(place))
    return place


def forge_helper(root: Path) -> None:
    """A gallery helper that replaces Check.expect when a script imports it (the site never shows helpers)."""
    (root / "gallery").mkdir(parents=True, exist_ok=True)
    (root / "gallery" / "_speedups.py").write_text(
        '"""Helpers."""\nfrom torchclaims import verify\n\n\ndef _always(self, condition, failure):\n'
        "    self._judgements += 1\n    return True\n\n\nverify.Check.expect = _always\n"
    )


@pytest.mark.parametrize("where", ["inline", "helper"])
def test_a_script_that_patches_the_verification_api_gets_an_error_naming_the_check(tmp_path, where):
    if where == "inline":
        body = (
            "from torchclaims.verify import Check\n"
            "Check.expect = lambda self, condition, failure: setattr(self, '_judgements', 1) or True\n" + ONES_VS_ZEROS
        )
    else:
        forge_helper(tmp_path)
        body = "import _speedups  # noqa: F401\n" + ONES_VS_ZEROS
    write_claim(tmp_path, "kb-forged", body)
    (record,) = run_claims(tmp_path, timeout=120).records.values()
    assert record.verdict is Verdict.ERROR
    assert (
        "ones equal zeros" in record.reason
        and "'ones: max abs error' = 1.0 is not <= 0 + 0 x |reference|" in record.reason
    ), record.reason
    assert read_record(tmp_path / "_build" / "records" / "cpu" / "kb-forged.json") == record
    problems = [str(p) for p in lint(tmp_path)]
    file = "gallery/kb_forged.py" if where == "inline" else "gallery/_speedups.py"
    line = 13 if where == "inline" else 10
    assert any(p.startswith(f"{file}:{line}") and "changes the verification API" in p for p in problems), problems


def test_a_script_that_rewrites_its_record_after_finish_gets_an_error(tmp_path):
    """The record goes over the supervisor's pipe, and no record file is
    writable: a second record on the pipe makes the first one invalid."""
    body = """
import os
from torchclaims.run._child import RECORD_FD_ENV
from torchclaims.evidence.records import record_json
with v.check("one equals zero") as check:
    check.equal(1, 0, "one")
fd = os.dup(int(os.environ[RECORD_FD_ENV]))  # a copy finish() does not close
v.finish()
forged = v.record.model_copy(update={"verdict": "holds"})
os.write(fd, record_json(forged).encode())
"""
    write_claim(tmp_path, "kb-rewrite", body)
    (record,) = run_claims(tmp_path, timeout=120).records.values()
    assert record.verdict is Verdict.ERROR and "invalid record" in record.reason, record.reason


def test_a_script_that_leaves_a_fifo_for_its_last_words_does_not_hold_its_claim_to_the_timeout(tmp_path):
    """How the script's process ended is a file in its own folder, which the script can
    replace: its supervisor never opens a FIFO there (nothing would ever write to it)."""
    body = """
import os
os.mkfifo(os.path.join(os.path.dirname(os.environ["TMPDIR"]), "ended.json"))
os._exit(0)
"""
    write_claim(tmp_path, "kb-fifo", body)
    (record,) = run_claims(tmp_path, timeout=90).records.values()
    # Held to its timeout, the claim's record says so instead.
    assert record.verdict is Verdict.ERROR and "finish()" in record.reason, record.reason


def test_a_record_that_says_holds_above_a_refuted_check_is_an_error_naming_the_field(tmp_path):
    """The script skips finish() and hands over a record of its own making."""
    body = """
import os
from torchclaims.run._child import RECORD_FD_ENV
from torchclaims.evidence.fingerprint import collect
from torchclaims.evidence.records import ResultRecord, ScriptInfo, Verdict, record_json
with v.check("one equals zero") as check:
    check.equal(1, 0, "one")
forged = ResultRecord(claim_id="kb-says-holds", verdict=Verdict.HOLDS, checks=v._checks, started_at=v._started_at,
                      duration_s=0.1, script=ScriptInfo(path="gallery/kb_says_holds.py", sha256=""),
                      environment=collect(v.backend))
with os.fdopen(int(os.environ[RECORD_FD_ENV]), "w") as handle:
    handle.write(record_json(forged))
"""
    write_claim(tmp_path, "kb-says-holds", body)
    (record,) = run_claims(tmp_path, timeout=120).records.values()
    assert record.verdict is Verdict.ERROR
    assert "at verdict: says holds, but its checks (refuted) give refuted" in record.reason, record.reason


WRITER = """
import json, os, socket
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORGED = '{"verdict": "holds"}'
targets = {
    "another claim's record": ROOT + "/_build/records/cpu/kb-victim.json",
    "the history folder": ROOT + "/_build/records/history/cpu/kb-victim-20990101T000000.json",
    "results/": ROOT + "/results/cuda-forged.json",
    "claims/": ROOT + "/claims/kb-planted.toml",
    "gallery/": ROOT + "/gallery/kb_planted.py",
    "$HOME": os.path.expanduser("~/.bashrc"),
    "_build/sphinx": ROOT + "/_build/sphinx/index.html",
    "the gallery pages": ROOT + "/docs/auto_gallery/kb_victim.rst",
}
seen = {}
for what, path in targets.items():
    try:
        with open(path, "w") as handle:
            handle.write(FORGED)
        seen[what] = "written"
    except OSError as exc:
        seen[what] = exc.strerror
for what, attempt in {
    "remove another claim's record": lambda: os.remove(ROOT + "/_build/records/cpu/kb-victim.json"),
    "rename into the records": lambda: os.rename(os.environ["TMPDIR"], ROOT + "/_build/records/cpu/planted"),
    "link in the project": lambda: os.symlink("/etc/passwd", ROOT + "/planted-link"),
    "folder in the project": lambda: os.mkdir(ROOT + "/planted"),
}.items():
    try:
        attempt()
        seen[what] = "done"
    except OSError as exc:
        seen[what] = exc.strerror
with open(os.path.join(os.environ["TMPDIR"], "mine"), "w") as handle:  # its own folder stays writable
    handle.write("x")
with v.check("every write outside its own folder is refused") as check:
    for what, outcome in seen.items():
        check.measure(what, outcome)
        check.expect(outcome not in ("written", "done"), f"{what}: {outcome}")
v.finish()
"""


def test_a_script_can_write_nothing_outside_its_own_folder(tmp_path, home):
    write_claim(tmp_path, "kb-victim", "refuted")
    run_claims(tmp_path, timeout=120)
    for folder, name in (
        ("results", "keep.json"),
        ("_build/sphinx", "index.html"),
        ("docs/auto_gallery", "kb_victim.rst"),
        ("_build/records/history/cpu", "old.json"),
    ):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / name).write_text("the build's own\n")
    victim = read_record(tmp_path / "_build" / "records" / "cpu" / "kb-victim.json")
    write_claim(tmp_path, "kb-writer", WRITER)
    before = snapshot(tmp_path, home, skip=runner_writes(tmp_path, ["kb-writer"]))
    records = run_claims(tmp_path, timeout=120).records
    assert records["kb-writer"].verdict is Verdict.HOLDS, records["kb-writer"].checks
    assert records["kb-victim"] == victim and records["kb-victim"].verdict is Verdict.REFUTED
    assert snapshot(tmp_path, home, skip=runner_writes(tmp_path, ["kb-writer"])) == before
    assert records["kb-writer"].sandbox.startswith("sandboxed: Landlock")


def test_a_script_reaches_no_network_and_a_loopback_claim_only_its_own(tmp_path):
    server = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    abstract = socket.socket(socket.AF_UNIX)
    name = f"\0tc-{uuid.uuid4().hex}"
    abstract.bind(name)
    abstract.listen()
    body = f"""
import socket
def attempt(what, make):  # "reached", or the error that refused it
    try:
        make()
        return "reached"
    except OSError as exc:
        return type(exc).__name__
seen = {{
    "TCP to this machine": attempt(
        "tcp", lambda: socket.create_connection(("127.0.0.1", {server.getsockname()[1]}), timeout=5)
    ),
    "an abstract socket of this machine": attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect({name!r})),
    "TCP to the internet": attempt("net", lambda: socket.create_connection(("1.1.1.1", 443), timeout=5)),
}}
# UDP is not refused (a loopback claim sends to its own loopback): the test sees that nothing arrives.
attempt(
    "udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", {udp.getsockname()[1]}))
)
own = socket.create_server(("127.0.0.1", 0)) if LOOPBACK else None
with v.check("nothing outside the sandbox is reached") as check:
    for what, outcome in seen.items():
        check.measure(what, outcome)
        check.expect(outcome != "reached", what)
    if own is not None:
        check.expect(socket.create_connection(own.getsockname(), timeout=5) is not None, "its own loopback works")
v.finish()
"""
    try:
        write_claim(tmp_path, "kb-offline", body.replace("LOOPBACK", "False"))
        write_claim(tmp_path, "kb-loopback", body.replace("LOOPBACK", "True"))
        toml = tmp_path / "claims" / "kb-loopback.toml"
        toml.write_text(toml.read_text().replace("caveats = [", 'network = "loopback"\ncaveats = [', 1))
        udp.settimeout(0.1)
        records = run_claims(tmp_path, timeout=120).records
        for claim_id in ("kb-offline", "kb-loopback"):
            assert records[claim_id].verdict is Verdict.HOLDS, (
                claim_id,
                records[claim_id].checks,
                records[claim_id].reason,
            )
        assert "loopback only" in records["kb-loopback"].sandbox and "no network" in records["kb-offline"].sandbox
        server.settimeout(0.1)
        with pytest.raises(socket.timeout):
            server.accept()  # nothing ever connected
        with pytest.raises(socket.timeout):
            udp.recv(10)
    finally:
        server.close()
        udp.close()
        abstract.close()


def unix_server(address: str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(address)
    server.listen()
    server.settimeout(0.1)
    return server


def test_a_script_reaches_no_unix_socket_of_the_machine(tmp_path):
    """Pathname sockets where services keep them (here a folder in the build's
    temporary folder, as the fork server's own listener is) are hidden by the
    mount namespace, since Landlock does not govern connect() by path; an
    abstract socket is out of reach of its network namespace and Landlock's scope."""
    folder = Path(tempfile.mkdtemp(prefix="tc-sockets-"))  # beside the repository, not in it
    servers = {
        "a pathname socket in the temporary folder": unix_server(str(folder / "service.sock")),
        "an abstract socket": unix_server(f"\0tc-{uuid.uuid4().hex}"),
    }
    body = f"""
import socket
seen = {{}}
for what, address in { ({what: server.getsockname() for what, server in servers.items()})!r}.items():
    try:
        socket.socket(socket.AF_UNIX).connect(address)
        seen[what] = "reached"
    except OSError as exc:
        seen[what] = type(exc).__name__
with v.check("no Unix socket of the machine is reached") as check:
    for what, outcome in seen.items():
        check.measure(what, outcome)
        check.expect(outcome != "reached", what)
v.finish()
"""
    try:
        write_claim(tmp_path, "kb-unix", body)
        (record,) = run_claims(tmp_path, timeout=120).records.values()
        assert record.verdict is Verdict.HOLDS, (record.checks, record.reason)
        assert {m.name for m in record.checks[0].measurements} == set(servers)
        assert "no Unix socket of the machine there" in record.sandbox and "abstract Unix socket" in record.sandbox
        for server in servers.values():
            with pytest.raises(socket.timeout):
                server.accept()  # nothing ever connected
    finally:
        for server in servers.values():
            server.close()
        shutil.rmtree(folder)


def test_landlock_alone_refuses_an_abstract_socket_outside_the_sandbox():
    """Without the namespaces (where a container refuses them), Landlock's scope
    still keeps a script from the machine's abstract sockets; unconfined, the
    same connection is made."""
    if sandbox.landlock_abi() < sandbox.SCOPE_ABI:
        pytest.skip(f"Landlock's scopes need ABI {sandbox.SCOPE_ABI}")
    server = unix_server(f"\0tc-{uuid.uuid4().hex}")

    def connect(confined: bool) -> str:
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                if confined and sandbox.confine([], loopback=False) is not None:
                    os._exit(4)
                socket.socket(socket.AF_UNIX).connect(server.getsockname())
                code = 0
            except PermissionError:
                code = 1
            finally:
                os._exit(code)
        return {0: "reached", 1: "refused", 3: "other error", 4: "not confined"}[
            os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        ]

    try:
        assert connect(confined=False) == "reached"
        assert connect(confined=True) == "refused"
    finally:
        server.close()


def supervisor_of(tag: str) -> int:
    """The claim's supervisor: the parent of the script's process, the parent of its tagged child."""
    child = next(
        pid for pid in tagged(tag) if open(f"/proc/{pid}/cmdline", "rb").read().startswith(f"{tag}-child".encode())
    )
    return _parent(_parent(child))


def when_started(tag: str, then, seen: Sightings) -> threading.Thread:
    """A thread that waits for the script's three processes, then calls ``then(supervisor pid)``.
    The processes it waited for count as ``seen``: ``then`` may end them before the sampler looks."""

    def wait():
        deadline = time.monotonic() + 300
        while len(found := tagged(tag)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        seen.seen |= found
        then(supervisor_of(tag))

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def test_a_script_cannot_kill_its_supervisor(tmp_path):
    """The test tells the script its supervisor's pid (a file it can read);
    the sandbox refuses the signal, and the run goes on to a record."""
    tag, pidfile = new_tag(), tmp_path / "supervisor.pid"
    body = leaver(tag, "finish").replace(
        'with v.check("runs") as check:\n    check.expect(True, "")',
        f"""import signal
while not os.path.exists({str(pidfile)!r}):
    time.sleep(0.1)
tried = {{}}
for name, pid in (("the supervisor", int(open({str(pidfile)!r}).read())), ("the parent", os.getppid())):
    try:
        os.kill(pid, signal.SIGKILL) if pid else None
        tried[name] = "killed" if pid else "no parent in its PID namespace"
    except OSError as exc:
        tried[name] = type(exc).__name__
with v.check("its supervisor cannot be killed") as check:
    for name, outcome in tried.items():
        check.measure(name, outcome)
        check.expect(outcome != "killed", name)""",
    )
    write_claim(tmp_path, "kb-killer", body)
    try:
        with Sightings(tag) as seen:
            when_started(tag, lambda supervisor: pidfile.write_text(str(supervisor)), seen)
            (record,) = run_claims(tmp_path, timeout=300).records.values()
        assert record.verdict is Verdict.HOLDS, (record.reason, record.checks)
        assert record.checks[0].measurements[0].value in ("ProcessLookupError", "PermissionError")
        assert len(seen.seen) == 3 and wait_until_gone(seen.seen, 60) == []
    finally:
        end(tagged(tag))


def test_killing_a_claims_supervisor_frees_none_of_its_processes(tmp_path):
    """SIGKILL the supervisor from outside (nothing inside may): the script's
    process, init of its PID namespace, dies with it, and the kernel ends
    everything in that namespace: the setsid child and the daemon too."""
    tag = new_tag()
    write_claim(tmp_path, "kb-hang", leaver(tag, "hang"))
    killed = []

    def kill(supervisor: int) -> None:
        killed.append(supervisor)
        os.kill(supervisor, signal.SIGKILL)

    try:
        with Sightings(tag) as seen:
            when_started(tag, kill, seen)
            (record,) = run_claims(tmp_path, timeout=600).records.values()
        assert killed, "the supervisor was found and killed"
        assert len(seen.seen) == 3 and wait_until_gone(seen.seen, 30) == []
    finally:
        end(tagged(tag))
    assert record.verdict is Verdict.ERROR and "SIGKILL" in record.reason, record.reason


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def test_under_ci_a_script_the_sandbox_cannot_confine_does_not_run(tmp_path, monkeypatch):
    monkeypatch.delenv(sandbox.REQUIRED_ENV, raising=False)
    monkeypatch.setenv(sandbox.SWITCH_ENV, "off")
    write_claim(tmp_path, "kb-loose", "holds")
    (record,) = run_claims(tmp_path, timeout=120).records.values()
    assert record.verdict is Verdict.HOLDS and record.unconfined
    assert record.sandbox == "ran without sandbox: turned off (TORCHCLAIMS_SANDBOX=off)"
    monkeypatch.setenv(sandbox.REQUIRED_ENV, "true")
    (record,) = run_claims(tmp_path, timeout=120, force=True).records.values()
    assert record.verdict is Verdict.ERROR
    assert record.reason == "the sandbox is required here (CI=true) but turned off (TORCHCLAIMS_SANDBOX=off)"


def test_a_record_run_without_sandbox_says_so_beside_its_verdict(tmp_path, monkeypatch):
    from torchclaims.sphinxext.views.evidence import verdict_badge

    monkeypatch.delenv(sandbox.REQUIRED_ENV, raising=False)
    monkeypatch.setenv(sandbox.SWITCH_ENV, "off")
    write_claim(tmp_path, "kb-loose", "holds")
    (record,) = run_claims(tmp_path, timeout=120).records.values()
    assert "ran without sandbox" in verdict_badge(Entry(record, THIS_BUILD)).astext()
    assert (
        "ran without sandbox"
        not in verdict_badge(Entry(record.model_copy(update={"sandbox": "sandboxed: ..."}), THIS_BUILD)).astext()
    )


def test_a_forged_record_in_the_build_folder_or_its_history_is_not_admitted(tmp_path):
    """Whoever wrote them (a run without the sandbox, a hand): the build judges
    its own records as it judges results files."""
    write_claim(tmp_path, "kb-refuted", ONES_VS_ZEROS)
    (record,) = run_claims(tmp_path, timeout=120).records.values()
    assert record.verdict is Verdict.REFUTED
    check = record.checks[0].model_copy(update={"outcome": Verdict.HOLDS})
    forged = record.model_copy(update={"verdict": Verdict.HOLDS, "checks": [check]})
    path = tmp_path / "_build" / "records" / "cpu" / "kb-refuted.json"
    path.write_text(record_json(forged))
    with pytest.raises(InvalidFileError) as caught:
        read_own_record(path)
    (problem,) = caught.value.problems
    assert problem.field == "checks.0.measurements.0" and "check 'ones equal zeros' says holds" in problem.message
    (again,) = run_claims(tmp_path, timeout=120).records.values()
    assert again.verdict is Verdict.REFUTED and again.started_at >= record.started_at  # judged, refused, run again
    history = tmp_path / "_build" / "records" / "history" / "cpu"
    history.mkdir(parents=True)
    (history / "kb-refuted-20260101T000000.json").write_text(record_json(forged))
    from torchclaims.evidence.store import load_store

    store = load_store({}, None, None, history_dir=tmp_path / "_build" / "records" / "history")
    assert store.entries == {} and "says holds" in str(store.problems[0])


def test_a_results_file_whose_check_holds_against_its_measurement_is_rejected_naming_the_check(tmp_path):
    from torchclaims.evidence.admission import Admission
    from torchclaims.evidence.results import build_results

    write_claim(tmp_path, "kb-refuted", ONES_VS_ZEROS)
    (record,) = run_claims(tmp_path, timeout=120).records.values()
    check = record.checks[0].model_copy(update={"outcome": Verdict.HOLDS})
    forged = record.model_copy(update={"verdict": Verdict.HOLDS, "checks": [check]})
    admitted = Admission().check(tmp_path / "r.json", build_results([forged], record.environment))
    assert admitted.records == []
    (problem,) = admitted.problems
    assert problem.field == "records.0.checks.0.measurements.0"
    assert (
        "check 'ones equal zeros' says holds, but 'ones: max abs error' = 1.0 is not <= 0 + 0 x |reference|"
        in problem.message
    )


def test_a_ctrl_c_of_a_run_whose_script_holds_semaphores_prints_one_line(tmp_path):
    from hostile import ready_for_ctrl_c, wait_until
    from test_hostile_scripts import start_verify

    tag = new_tag()
    hang = leaver(tag, "hang").replace(
        "time.sleep(3600)",
        "import multiprocessing\nlocks = [multiprocessing.Lock() for _ in range(3)]\ntime.sleep(3600)",
    )
    write_claim(tmp_path, "kb-locks", hang)
    process = start_verify(tmp_path, "--timeout", "1800")
    try:
        wait_until(lambda: len(tagged(tag)) == 3, "the script started", process)
        time.sleep(1)  # the locks exist
        wait_until(lambda: ready_for_ctrl_c(process.pid), "ready for Ctrl-C", process)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=300)
    finally:
        end(tagged(tag))
    assert process.returncode == 130
    assert "leaked semaphore" not in err and len(err.strip().splitlines()) == 1, err


def test_a_gallery_page_planted_for_another_script_never_reaches_the_site(tmp_path):
    """A script's page is staged in its own folder and moved into place by the
    build, by name: a page, image or link it leaves for another script stays behind."""
    from hostile import PAYLOAD, active_markup
    from kb import build, write_site

    write_site(tmp_path)
    write_claim(tmp_path, "kb-victim", "holds")
    planter = f"""
import os
staged = os.path.join(os.path.dirname(os.environ["TMPDIR"]), "page", "docs", "auto_gallery")
os.makedirs(os.path.join(staged, "images"), exist_ok=True)
with open(os.path.join(staged, "kb_victim.rst"), "w") as handle:
    handle.write(".. raw:: html\\n\\n   " + {PAYLOAD!r} + "\\n")
with open(os.path.join(staged, "images", "sphx_glr_kb_victim_001.png"), "w") as handle:
    handle.write("not a figure")
os.symlink("/etc/hostname", os.path.join(staged, "kb_planter.txt"))
with v.check("runs") as check:
    check.expect(True, "")
v.finish()
"""
    write_claim(tmp_path, "kb-planter", planter)
    result = build(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    planted = read_record(tmp_path / "_build" / "records" / "cpu" / "kb-planter.json")
    assert planted.verdict is Verdict.HOLDS, (planted.reason, planted.log_tail)
    gallery = tmp_path / "docs" / "auto_gallery"
    assert "raw::" not in (gallery / "kb_victim.rst").read_text()
    assert (
        not (gallery / "images" / "sphx_glr_kb_victim_001.png").exists() and not (gallery / "kb_planter.txt").exists()
    )
    assert (gallery / "kb_planter.rst").is_file()  # its own page did arrive
    assert active_markup(tmp_path / "_build" / "html") == []


class _Classes(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.found.update(dict(attrs).get("class", "").split())


def test_a_script_cannot_forge_its_own_gallery_page(tmp_path):
    """The script runs in sphinx-gallery's interpreter: it can print markup or
    patch what writes its page. The page the build writes holds the script's
    own blocks and its output as literal text; no element it made renders."""
    from kb import build, write_site

    write_site(tmp_path)
    write_claim(tmp_path, "kb-plain", "figure")
    forged = '.. raw:: html\\n\\n   <div class=\\"tc-forged\\">holds</div>\\n\\n'
    patch = """
import sphinx_gallery.gen_rst as gen_rst
_save = gen_rst.save_rst_example
def _forged(example_rst, *args, **kwargs):
    return _save(EDIT, *args, **kwargs)
gen_rst.save_rst_example = _forged
"""
    scripts = {
        "kb-printer": f'print("{forged}")\n',  # its output: sphinx-gallery shows it literally anyway
        "kb-forger": patch.replace(
            "EDIT",
            'example_rst.replace("out\\n\\n .. code-block:: none", '
            '"out\\n\\n .. raw:: html\\n\\n    <div class=\\"tc-forged\\">holds</div>\\n")',
        ),
        "kb-prepender": patch.replace("EDIT", f'"{forged}" + example_rst'),
    }
    for claim_id, script in scripts.items():
        write_claim(
            tmp_path,
            claim_id,
            script + 'print("printed")\nwith v.check("runs") as check:\n    check.expect(True, "")\nv.finish()\n',
        )
    result = build(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    html = tmp_path / "_build" / "html" / "docs" / "auto_gallery"
    for claim_id in scripts:
        page = html / f"{claim_id.replace('-', '_')}.html"
        classes = _Classes()
        classes.feed(page.read_text(encoding="utf-8"))
        assert "tc-forged" not in classes.found, claim_id
    assert '<div class="tc-forged">holds</div>' in page_text(html / "kb_printer.html")  # what it printed, as text
    assert '<div class="tc-forged">holds</div>' in page_text(html / "kb_forger.html")  # its edit of its output, as text
    assert "printed" in page_text(html / "kb_forger.html")
    assert "its output is not shown" in page_text(html / "kb_prepender.html")  # its page is not its script's
    plain = (tmp_path / "docs" / "auto_gallery" / "kb_plain.rst").read_text()
    assert (
        "sphx_glr_kb_plain_001.png" in plain and "Claim kb-plain: HOLDS" in plain
    )  # an honest page keeps its figure and output
    assert (
        (tmp_path / "docs" / "auto_gallery" / "images" / "sphx_glr_kb_plain_001.png")
        .read_bytes()
        .startswith(b"\x89PNG")
    )
    assert 'src="../../_images/sphx_glr_kb_plain_001.png"' in (html / "kb_plain.html").read_text(encoding="utf-8")


METADATA = """
import os
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLAIM = ROOT + "/claims/kb-metadata.toml"
attempts = {
    "chmod claims/": lambda: os.chmod(ROOT + "/claims", 0o777),
    "chmod a file in $HOME": lambda: os.chmod(os.path.expanduser("~/.bashrc"), 0),
    "utime a claim record": lambda: os.utime(CLAIM, (0, 0)),
    "setxattr a claim record": lambda: os.setxattr(CLAIM, "user.planted", b"x"),
    "chown a claim record": lambda: os.chown(CLAIM, os.getuid(), os.getgid()),
    "open the terminal": lambda: open("/dev/tty", "w").close(),
}
seen = {}
for what, attempt in attempts.items():
    try:
        attempt()
        seen[what] = "done"
    except OSError as exc:
        seen[what] = exc.strerror
os.chmod(os.environ["TMPDIR"], 0o700)  # its own folder stays its own
with v.check("no metadata or terminal outside its own folder") as check:
    for what, outcome in seen.items():
        check.measure(what, outcome)
        check.expect(outcome != "done", f"{what}: {outcome}")
v.finish()
"""


def test_a_script_changes_no_mode_time_owner_or_attribute_outside_its_own_folder(tmp_path, home):
    """Landlock does not govern chmod, chown, utime or extended attributes: the script's
    mount namespace shows every file system read-only but its own folder."""
    write_claim(tmp_path, "kb-metadata", METADATA)
    watched = [tmp_path / "claims", tmp_path / "claims" / "kb-metadata.toml", home / ".bashrc"]
    before = [(p.stat().st_mode, p.stat().st_mtime_ns, p.stat().st_uid) for p in watched]
    records = run_claims(tmp_path, timeout=120).records
    assert records["kb-metadata"].verdict is Verdict.HOLDS, records["kb-metadata"].checks
    assert [(p.stat().st_mode, p.stat().st_mtime_ns, p.stat().st_uid) for p in watched] == before
    assert "user.planted" not in os.listxattr(tmp_path / "claims" / "kb-metadata.toml")


CANARIES = {"GITHUB_TOKEN": "tc-canary-gh", "AWS_SECRET_ACCESS_KEY": "tc-canary-aws", "HF_TOKEN": "tc-canary-hf"}
LEAKER = """
import os
print(dict(os.environ))
with v.check("the build's secrets are not in the script's environment") as check:
    found = sorted(name for name, value in os.environ.items() if value.startswith("tc-canary"))
    check.measure("secrets seen", ", ".join(found) or "none")
    check.expect(not found, f"the script sees {found}")
    check.expect(os.environ.get("CUDA_VISIBLE_DEVICES") == "0", "a backend's variable is kept")
v.finish()
"""


def test_a_script_sees_none_of_the_builds_secrets(tmp_path, monkeypatch):
    for name, value in {**CANARIES, "CUDA_VISIBLE_DEVICES": "0"}.items():
        monkeypatch.setenv(name, value)
    write_claim(tmp_path, "kb-leaker", LEAKER)
    record = run_claims(tmp_path, timeout=120).records["kb-leaker"]
    assert record.verdict is Verdict.HOLDS, record.checks
    assert not any(value in record.model_dump_json() for value in CANARIES.values())


# A claim that leaves code where compilers look for their caches: its own
# cache, torch's shared default folder (which a plain torch.compile of the same
# user reads), the precompiled headers' folder the fork server fixed there, and
# another claim's caches.
POISONER = """
import os
from torch._inductor import codecache
from torch._inductor.runtime.cache_dir_utils import cache_dir
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
folders = {{
    "its own cache": cache_dir(),
    "the shared cache": {shared!r},
    "the headers' folder": codecache._HEADER_DIR,
    "another claim's cache": ROOT + "/_build/records/compiler-caches/cpu/kb-cache-victim/torchinductor",
}}
seen = {{}}
for what, folder in folders.items():
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, {mark!r}), "w") as handle:
            handle.write("raise SystemExit('planted')\\n")
        seen[what] = "written"
    except OSError as exc:
        seen[what] = exc.strerror
with v.check("planted") as check:
    for what, outcome in seen.items():
        check.measure(what, outcome)
    check.measure("headers' folder", codecache._HEADER_DIR)
    check.expect(seen["its own cache"] == "written", "its own cache is writable")
v.finish()
"""
CACHE_VICTIM = """
import os
from torch._inductor import codecache
from torch._inductor.runtime.cache_dir_utils import cache_dir
with v.check("finds nothing another claim planted") as check:
    for folder in (cache_dir(), {shared!r}, codecache._HEADER_DIR):
        found = os.path.exists(os.path.join(folder, {mark!r}))
        check.measure(folder, "planted" if found else "clean")
        check.expect(not found, f"found what another claim planted in {{folder}}")
v.finish()
"""


@pytest.mark.parametrize("preloaded", [False, True])
def test_a_claims_compiler_cache_reaches_neither_another_claim_nor_a_later_process(tmp_path, preloaded):
    """``preloaded``: the fork server imported the compiler (more claims use it than
    there are workers), which fixes the precompiled headers' folder in the shared one."""
    from torchclaims.run.compiler_caches import shared_inductor_dir

    shared, mark = shared_inductor_dir(), f"planted-{uuid.uuid4().hex}.py"
    write_claim(tmp_path, "kb-poisoner", POISONER.format(shared=shared, mark=mark))
    compiles = "import torch._inductor.codecache\nv.finish()\n"
    if preloaded:
        write_claim(tmp_path, "kb-compiles-1", compiles)
    try:
        poisoner = run_claims(tmp_path, timeout=180, parallel=1).records["kb-poisoner"]
        write_claim(tmp_path, "kb-cache-victim", CACHE_VICTIM.format(shared=shared, mark=mark))
        if preloaded:
            write_claim(tmp_path, "kb-compiles-2", compiles)
        victim = run_claims(tmp_path, timeout=180, parallel=1).records["kb-cache-victim"]
        planted_in_shared = sorted(str(p) for p in Path(shared).rglob(mark))
    finally:
        for path in Path(shared).rglob(mark):
            path.unlink()
    assert poisoner.verdict is Verdict.HOLDS, poisoner.reason or poisoner.checks
    outcomes = {m.name: m.value for m in poisoner.checks[0].measurements}
    assert outcomes["another claim's cache"] != "written", outcomes
    assert outcomes["the headers' folder"] == "written", outcomes  # its own, wherever torch fixed it
    assert (outcomes["headers' folder"] == f"{shared}/precompiled_headers") is preloaded, outcomes
    assert victim.verdict is Verdict.HOLDS, victim.checks
    assert planted_in_shared == []  # what a plain torch.compile of this user reads
    own = tmp_path / "_build" / "records" / "compiler-caches" / "cpu" / "kb-poisoner" / "torchinductor"
    assert (own / mark).is_file() and (own / "precompiled_headers" / mark).is_file()  # kept for its own next run
