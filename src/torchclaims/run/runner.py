"""The isolated, parallel runner: each claim script in its own process.

Children fork from a multiprocessing fork server that has torch (and the other
heavy modules) imported already, so isolation costs a fork, not an import. The
fork server starts with the first child a run needs, so a run with nothing to
do starts no process. The parent never imports torch. Whatever a child does (raise, ``sys.exit``,
``os._exit``, segfault, hang, fork and leave processes behind), the parent turns
it into a result record, and the other claims are unaffected.

Nothing a run starts outlives it: each claim's process ends everything its
script started (torchclaims.run._child), a timeout or Ctrl-C asks it to do so
(SIGTERM, then SIGKILL for its session), and closing the runner stops the fork
server and the multiprocessing resource tracker it started.

The script runs sandboxed (torchclaims.run.sandbox) and writes only its own
folder: its record comes to the claim's supervisor over a pipe, and this
process judges it again from its measurements (torchclaims.evidence.judging) and
writes every record file, and moves the script's figures and page into place.
A run that went past one of the claim's bounds (processes, memory, open files,
its folder's size and depth, its figures: torchclaims.run.bounds) gets an
error record naming the limit instead.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import shutil
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import forkserver, resource_tracker
from pathlib import Path

from .. import limits
from ..caches import COMPILER_DIR
from ..errors import InvalidFileError, TorchclaimsError
from ..evidence.judging import judgement_problems
from ..evidence.records import Environment, ResultRecord, ScriptInfo, Verdict, now, read_record, write_record
from ..fileio import locked
from ..project import DEFAULTS
from . import _child, bounds, runtimes, sandbox
from .compiler_caches import COLD_CONDITION, CONDITION_NAME, cache_env, shown_instead
from .folders import remove_tree, scratch_folder
from .stopping import GRACE_S, end_claim_processes, stop_forkserver, stop_resource_tracker

# What the fork server imports (torchclaims.run.preload), and the groups it may add: a
# group's module, and the module names (as scripts import them) that mean a claim uses it.
PRELOAD = "torchclaims.run.preload"
PRELOAD_READY = "torchclaims.run.preload.ready"  # always last: waits for the groups' background work
COMPILER = "torchclaims.run.preload.compiler"
PRELOAD_GROUPS = {
    COMPILER: ("torch.compile", "torch._dynamo", "torch._inductor"),
    "torchclaims.run.preload.huggingface": ("transformers", "accelerate"),
}
SMOKE_SCRIPT = Path(__file__).resolve().with_name("device_smoke.py")
SMOKE_SCRIPT_REL = "torchclaims/run/device_smoke.py"
SMOKE_TIMEOUT_S = 120.0  # a runtime's first start can take tens of seconds (CUDA's module loading)
# The backends whose runtime the fork server never loads, so the groups may be
# preloaded: the CPU, and XLA (torch_xla is imported in each claim's process
# only). Elsewhere importing a group can start the device's runtime
# (torch.utils.cpp_extension asks torch.cuda.is_available() when imported), and
# every claim forked afterwards fails.
GROUPS_BACKENDS = frozenset({"cpu", "xla"})


@dataclass(frozen=True)
class Job:
    """One claim to run: the script, where its record goes, and what it may cost."""

    claim_id: str
    script: Path
    script_rel: str
    record_path: Path
    cache_key: str
    inputs: dict[str, str]
    timeout: float
    gallery: _child.GalleryTarget | None = None
    cold_caches: bool = False  # the claim measures compiling: empty compiler caches (compiler_caches.py)
    uses: frozenset[str] = frozenset()  # modules the script and its project helpers import (cache.InputScanner)
    loopback: bool = False  # the claim's record says it needs the loopback interface
    readable: tuple[str, ...] = ()  # paths outside the project the script reads (a team's model file)
    caches: Path | None = None  # its own compiler caches, kept between its runs (None: empty ones in its folder)


@dataclass(frozen=True)
class Probe:
    """What the environment looks like for the chosen backend, seen from a child."""

    backend: str
    why: str  # how the backend was chosen ("auto picked ...")
    unavailable: str | None  # None when the backend is usable here
    environment: Environment


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; every process it started has ended."""


class Runner:
    """Owns the fork server; runs jobs ``parallel`` at a time. Use it as a
    context manager: leaving it stops the helper processes it started.

    With ``shortcuts`` (the default) the fork server also imports what many
    of the claims about to run import (``preload_for``), and claims that do not
    measure compiling keep their own compiler caches between runs. Without, only
    torch and the harness are imported beforehand and every claim gets empty
    compiler caches: the reference the shortcuts must give the same verdicts as.
    """

    def __init__(self, backend: str, *, parallel: int, shortcuts: bool = True, log: Callable[[str], None] = print):
        self.backend = backend
        self.parallel = max(1, parallel)
        self.shortcuts = shortcuts
        self.log = log
        self.env = {**_child.SCRIPT_ENVIRONMENT, "TORCHCLAIMS_BACKEND": backend}
        self._ctx = multiprocessing.get_context("forkserver")
        self._preload = [PRELOAD, PRELOAD_READY]
        self._ctx.set_forkserver_preload(self._preload)
        self.unconfined, self.sandbox_required = sandbox.turned_off(), sandbox.required()
        # Helpers already running belong to someone else in this process.
        self._own_forkserver = forkserver._forkserver._forkserver_pid is None
        self._own_tracker = getattr(resource_tracker._resource_tracker, "_pid", None) is None
        # The server started next reads where to say that a preload touched a runtime.
        self._report = Path(tempfile.mkdtemp(prefix="torchclaims-forkserver-")) / "report.json"
        self._saved_report_env = os.environ.get(runtimes.REPORT_ENV)
        if self._own_forkserver:
            os.environ[runtimes.REPORT_ENV] = str(self._report)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def preload_for(self, uses: list[frozenset[str]]) -> list[str]:
        """Before the fork server starts: add each group more claims use than
        there are workers (importing it once in the server then costs less than
        each claim importing it). Returns the groups added."""
        if not self.shortcuts or self.backend not in GROUPS_BACKENDS:
            return []
        groups = [
            group
            for group, names in PRELOAD_GROUPS.items()
            if sum(any(used == n or used.startswith(n + ".") for used in claim for n in names) for claim in uses)
            > self.parallel
        ]
        if COMPILER in groups and self.unconfined is None:
            # Imported in the server, inductor fixes its precompiled headers' folder in the shared
            # cache, which only a claim's own mount namespace shows as its own: without one, Landlock
            # leaves it read-only and every compilation fails. Each claim imports the compiler itself.
            missing = sandbox.namespaces_unavailable()
            if missing is not None:
                groups.remove(COMPILER)
                self.log(f"torchclaims: the fork server does not preload the compiler: {missing}")
        self._preload = [PRELOAD, *groups, PRELOAD_READY]
        self._ctx.set_forkserver_preload(self._preload)
        return groups

    def close(self) -> None:
        """Stop the fork server and the resource tracker this runner started."""
        if self._own_forkserver:
            stop_forkserver()
            if self._saved_report_env is None:
                os.environ.pop(runtimes.REPORT_ENV, None)
            else:
                os.environ[runtimes.REPORT_ENV] = self._saved_report_env
        if self._own_tracker:
            stop_resource_tracker()
        shutil.rmtree(self._report.parent, ignore_errors=True)

    def _launch(self, process: multiprocessing.Process) -> None:
        """Start a process forked from the fork server. A server that stopped
        itself because what it imported started an accelerator runtime is
        replaced by one that imports less: only torch and the harness, then
        nothing (each claim imports torch itself, as a plugin that starts its
        runtime when torch loads it requires)."""
        while True:
            try:
                process.start()
                return
            except (EOFError, OSError):
                why = runtimes.report(str(self._report))
                if why is None or not self._preload:
                    raise
            self._report.unlink(missing_ok=True)
            stop_forkserver()
            groups = [g.rsplit(".", 1)[-1] for g in self._preload[1:-1]]
            if groups:
                why += f" (the groups preloaded: {', '.join(groups)})"
            less = [PRELOAD, PRELOAD_READY] if groups else []
            self.log(
                f"torchclaims: {why}, and a process forked after that could not use it; the fork server now imports "
                + ("only torch and the harness" if less else "nothing (each claim imports torch itself)")
            )
            self._preload = less
            self._ctx.set_forkserver_preload(less)

    def probe(self, timeout: float = DEFAULTS.timeout_s) -> Probe:
        """Resolve the backend and fingerprint the environment in a child."""
        receiver, sender = self._ctx.Pipe(duplex=False)
        process = self._ctx.Process(target=_child.probe, args=(self.backend, self.env, sender), daemon=True)
        self._launch(process)
        sender.close()
        try:
            if not receiver.poll(timeout):
                raise TorchclaimsError(f"probing backend {self.backend!r} timed out after {timeout:.0f}s")
            answer = receiver.recv()
        except EOFError:
            raise TorchclaimsError(f"probing backend {self.backend!r} crashed (exit code {process.exitcode})") from None
        finally:
            process.join(5)
            if process.is_alive():
                process.kill()
        if "error" in answer:
            raise TorchclaimsError(f"probing backend {self.backend!r} failed: {answer['error']}")
        return Probe(
            answer["backend"], answer["why"], answer["unavailable"], Environment.model_validate(answer["environment"])
        )

    def run(
        self,
        jobs: list[Job],
        environment: Environment,
        on_start: Callable[[Job], None] = lambda job: None,
        on_done: Callable[[Job, ResultRecord], None] = lambda job, record: None,
        on_tick: Callable[[], None] = lambda: None,
        tick_s: float | None = None,
    ) -> dict[str, ResultRecord]:
        """Run every job; always return one record per job. ``on_tick`` is called at least
        every ``tick_s`` while claims run (a progress display's heartbeat)."""
        pending = deque(jobs)
        # Each claim's share of the CPUs (its torch threads, the workers a sweep starts with):
        # all of them for a claim that runs alone.
        threads = max(1, (os.cpu_count() or 1) // min(self.parallel, max(1, len(jobs))))
        running: dict[int, _Running] = {}
        ended: list[_Running] = []  # exited, their records not filed yet
        results: dict[str, ResultRecord] = {}

        def file(item: _Running, timed_out: bool) -> None:
            record = self._finish(item, environment, timed_out)
            results[item.job.claim_id] = record
            on_done(item.job, record)

        with scratch_folder("torchclaims-") as scratch:
            try:
                while pending or running or ended:
                    while pending and len(running) < self.parallel:
                        job = pending.popleft()
                        on_start(job)
                        started = self._start(job, scratch, threads)
                        running[started.process.sentinel] = started
                    # A freed worker has started its next claim before the last one's
                    # record is judged and written: a short claim's filing costs no worker time.
                    while ended:
                        file(ended.pop(0), timed_out=False)
                    if not running:
                        continue
                    wait = min(r.deadline for r in running.values()) - time.monotonic()
                    multiprocessing.connection.wait(list(running), timeout=max(0.0, min(wait, tick_s or wait)))
                    on_tick()
                    for sentinel, item in list(running.items()):
                        timed_out = item.process.is_alive() and time.monotonic() >= item.deadline
                        if item.process.is_alive() and not timed_out:
                            continue
                        del running[sentinel]
                        item.ended = time.monotonic()
                        if timed_out:
                            file(item, timed_out=True)  # ends its processes before another claim starts
                        else:
                            ended.append(item)
            except KeyboardInterrupt:
                end_claim_processes([item.process for item in running.values()])
                while ended:  # they finished before the interruption: their records are kept
                    file(ended.pop(0), timed_out=False)
                stopped = sorted(item.job.claim_id for item in running.values())
                raise Interrupted(
                    f"interrupted: {len(results)} of {len(jobs)} claims finished; "
                    f"stopped {', '.join(stopped) or 'nothing'}; every process the run started has ended"
                ) from None
            except BaseException:
                end_claim_processes([item.process for item in running.values()])
                raise
        return results

    def device_smoke(self, parts: tuple[str, ...] = sandbox.PARTS) -> str | None:
        """Run the device smoke (torchclaims.run.device_smoke) where a claim runs,
        with the sandbox's ``parts``: None when the device works there, else why not."""
        job = Job("device-smoke", SMOKE_SCRIPT, SMOKE_SCRIPT_REL, Path(), "", {}, SMOKE_TIMEOUT_S)
        with scratch_folder("torchclaims-smoke-") as scratch:
            item = self._start(job, scratch, 1, parts)
            item.process.join(job.timeout)
            timed_out = item.process.is_alive()
            if timed_out:
                end_claim_processes([item.process])
            item.process.join(GRACE_S)
            cause = _failure_cause(item.process.exitcode, timed_out, job.timeout, _status(Path(item.child.status_path)))
            try:
                answer = json.loads(Path(item.child.record_path).read_bytes())
            except (OSError, ValueError):
                answer = None
        if cause is None and isinstance(answer, dict) and "unavailable" in answer:
            return None if answer["unavailable"] is None else str(answer["unavailable"])[:1000]
        return cause or "the smoke ended without an answer"

    def sandbox_stops_device(self) -> str | None:
        """When the device works outside the sandbox (the probe said so) but not
        in it: one line naming the part of the sandbox that stops it. None when
        it works, when the sandbox is off, or when CI=true requires a sandbox
        this host cannot make (each claim's error record says so)."""
        if self.unconfined is not None:
            return None
        why = self.device_smoke()
        if why is None or why.startswith(sandbox.REQUIRED_BUT):  # no device fault: each claim's record says why
            return None
        culprits = [part for part in sandbox.RESTRICTING if self.device_smoke(sandbox.without(part)) is None]
        found = f"the part that stops it: {', '.join(culprits)}" if culprits else "no one part alone stops it"
        return (
            f"backend {self.backend} works outside the sandbox but not inside it ({why}); {found} "
            f"(torchclaims doctor --backend {self.backend} tries each part)"
        )

    def _start(self, job: Job, scratch: Path, threads: int, parts: tuple[str, ...] = sandbox.PARTS) -> _Running:
        run_dir = scratch / job.claim_id
        run_dir.mkdir()
        cold = job.cold_caches or not self.shortcuts
        child_job = _child.ChildJob(
            claim_id=job.claim_id,
            script=str(job.script),
            cwd=str(job.script.parent),
            root=str(job.script.parents[len(Path(job.script_rel).parts) - 1]),
            build_tmp=tempfile.gettempdir(),
            env={},
            run_dir=str(run_dir),
            cache_dirs=(),
            shown_instead={},
            threads=threads,
            log_bytes=limits.LIMITS.log_tail_bytes,
            log_lines=limits.LIMITS.log_tail_lines,
            record_bytes=limits.LIMITS.record_file_bytes,
            loopback=job.loopback,
            readable=job.readable,
            parts=parts,
            unconfined=self.unconfined,
            sandbox_required=self.sandbox_required and parts == sandbox.PARTS,  # a part left out on purpose
            gallery=job.gallery,
            limits=limits.LIMITS,
        )
        # Its own caches, kept (headers even for a cold run, as torch keeps them), or empty ones in its folder.
        fresh = os.path.join(child_job.tmp_dir, COMPILER_DIR)
        kept = None if job.caches is None else str(job.caches)
        child_job = dataclasses.replace(
            child_job,
            cache_dirs=(kept,) if kept else (),
            shown_instead=shown_instead(kept or fresh),
            env={
                **self.env,
                **cache_env(fresh if cold or not kept else kept),
                "TORCHCLAIMS_DEADLINE": f"{time.time() + job.timeout:.3f}",  # long sweeps size their guard from it
                "TORCHCLAIMS_SCRIPT": job.script_rel,
            },
        )
        process = self._ctx.Process(target=_child.run, args=(child_job,), name=f"claim:{job.claim_id}")
        self._launch(process)
        return _Running(job, child_job, process, time.monotonic(), time.monotonic() + job.timeout, now(), cold)

    def _finish(self, item: _Running, environment: Environment, timed_out: bool) -> ResultRecord:
        process, child = item.process, item.child
        if timed_out:
            end_claim_processes([process])
        process.join(GRACE_S)
        duration = round(item.ended - item.started, 3)
        status = _status(Path(child.status_path))
        # Every process of the claim has ended (its PID namespace with it, where
        # no process can start any more): its folder holds still while it is measured.
        folder = bounds.folder_problems(child.work_dir, child.figure_folders, child.limits)
        status["exceeded"] = _exceeded(status) + folder
        cause = _failure_cause(process.exitcode, timed_out, item.job.timeout, status)
        record = None
        if cause is None:
            record, cause = _received_record(Path(child.record_path), item.job.claim_id)
        if record is None:
            record = error_record(item.job, environment, cause, item.started_at, duration, _tail(Path(child.log_path)))
        with locked(item.job.record_path.parent):  # another run may write the same claim's record
            figures = _keep_figures(Path(child.figures_dir), item.job.record_path) if record.checks else []
            record = _stamp(record, item, environment, duration, figures, str(status.get("sandbox", "")))
            write_record(item.job.record_path, record)
        if child.gallery is not None:
            _keep_page(child, with_output=not _exceeded(status))
        remove_tree(child.run_dir)
        return record


def _received_record(path: Path, claim_id: str) -> tuple[ResultRecord | None, str]:
    """The record the script handed over, judged again here; or None and why not."""
    if not path.exists():
        return None, "the script ended without calling finish()"
    try:
        record = read_record(path)
    except InvalidFileError as exc:
        return None, f"the script wrote an invalid record: {exc}"
    if record.claim_id != claim_id:
        return None, f"the script verified claim {record.claim_id!r}, not {claim_id!r}"
    problems = judgement_problems(record)
    if problems:
        field, message = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return None, f"the script's record disagrees with its own evidence at {field}: {message}{more}"
    return record, ""


def _stamp(
    record: ResultRecord, item: _Running, environment: Environment, duration: float, figures: list[str], sandboxed: str
) -> ResultRecord:
    # The parent knows the script's project path and content for sure (in the
    # child, sphinx-gallery changes the working directory).
    script = ScriptInfo.of(item.job.script, item.job.script_rel)
    # The duration is the child's wall time, imports included: what the claim costs a build.
    # The environment is the one the child was started in (the cache key's), not
    # one the script may have changed (inductor sets its own variables, say).
    # When it ran and under which of the harness's conditions are the harness's word:
    # a script's own "compiler caches" condition is dropped, its start time replaced.
    conditions = {k: v for k, v in record.conditions.items() if k != CONDITION_NAME}
    if item.cold:  # the run had empty compiler caches: a condition of its verdict
        conditions[CONDITION_NAME] = COLD_CONDITION
    update = {
        "started_at": item.started_at,
        "conditions": conditions,
        "cache_key": item.job.cache_key,
        "inputs": item.job.inputs,
        "script": script,
        "duration_s": duration,
        "environment": environment,
        "figures": figures,
        "sandbox": sandboxed[:2000],  # what the supervisor learnt before the script ran, never the script's word
    }
    return record.model_copy(update=update)


@dataclass
class _Running:
    job: Job
    child: _child.ChildJob
    process: multiprocessing.Process
    started: float
    deadline: float
    started_at: object
    cold: bool  # empty compiler caches
    ended: float = 0.0  # time.monotonic() when it was seen to have exited (or to be out of time)


def _plain_files(folder: Path) -> list[Path]:
    """The regular files in ``folder`` itself, links not followed (the script made
    them); not below it: the script may nest folders deeper than os.walk recurses."""
    try:
        with os.scandir(folder) as entries:
            return [Path(entry.path) for entry in entries if entry.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _keep_figures(scratch: Path, record_path: Path) -> list[str]:
    """Move a run's figures beside its record; return their paths relative to it.
    Their count and sizes were checked when the run ended (torchclaims.run.bounds)."""
    target = record_path.with_suffix("")  # <records>/<backend>/<claim>/figure-N.png
    shutil.rmtree(target, ignore_errors=True)
    named = [p for p in _plain_files(scratch) if re.fullmatch(r"figure-\d{1,4}\.png", p.name)]
    figures = sorted(named, key=lambda p: int(p.stem.split("-")[1]))
    if figures:
        target.mkdir(parents=True, exist_ok=True)
    for figure in figures:
        shutil.move(figure, target / figure.name)
    return [f"{target.name}/{figure.name}" for figure in figures]


def _keep_page(child: _child.ChildJob, with_output: bool) -> None:
    """Write the script's gallery page into the real gallery folder, taking from
    what its process staged only data: its output, figures and running time
    (torchclaims.run.gallery_page); none of it from a run that went past a bound."""
    from .gallery_page import write_page  # sphinx-gallery: only a build that makes pages needs it

    staged = _child.staged_target(child)[1] if with_output else os.path.join(child.run_dir, "nothing staged")
    target = child.gallery
    write_page(
        target.fname,
        target.src_dir,
        Path(target.target_dir),
        target.gallery_conf,
        Path(staged),
        Path(child.run_dir, "page"),
    )


def _status(path: Path) -> dict:
    """What the claim's supervisor wrote of the run ({} when it wrote nothing)."""
    try:
        status = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return status if isinstance(status, dict) else {}


def _exceeded(status: dict) -> list[str]:
    """The bounds the run went past (torchclaims.run.bounds): as the supervisor
    saw it run, and as its folder was when it ended."""
    exceeded = status.get("exceeded")
    return [str(e) for e in exceeded] if isinstance(exceeded, list) else []


def _failure_cause(exitcode: int | None, timed_out: bool, timeout: float, status: dict) -> str | None:
    """Why a claim's run gave no record (None: it ended normally). A run that
    went past a bound gives none, whatever its script handed over.

    ``exitcode`` is the claim process's; the supervisor's status holds the script's."""
    if timed_out:
        return f"timed out after {timeout:g}s (the process was killed)"
    if _exceeded(status):
        return f"the run went past the claim's limits: {'; '.join(_exceeded(status))}"[:2000]
    code = status.get("exit_code", exitcode) if exitcode == 0 else exitcode
    if status.get("stopped"):
        return f"the run was stopped ({status['stopped']}) before the script ended"
    if isinstance(code, int) and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the process was killed by {name} (exit code {code})"
    if status.get("ended"):
        return str(status["ended"])
    if code:
        return f"the process exited with code {code} (os._exit or a crash before the script ended)"
    return None


def _tail(log: Path) -> str:
    """The end of a script's output (the claim's process kept it within the limit)."""
    try:
        with log.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 2 * limits.LIMITS.log_tail_bytes))
            data = handle.read()
    except OSError:
        return ""
    return data.decode("utf-8", "replace")[-limits.LIMITS.log_tail_bytes :]


def error_record(
    job: Job, environment: Environment, cause: str, started_at, duration: float, log_tail: str = ""
) -> ResultRecord:
    """A record saying the verification broke; it is never evidence about the claim."""
    return ResultRecord(
        claim_id=job.claim_id,
        verdict=Verdict.ERROR,
        reason=cause,
        started_at=started_at,
        duration_s=duration,
        script=ScriptInfo.of(job.script, job.script_rel),
        cache_key=job.cache_key,
        inputs=job.inputs,
        environment=environment,
        log_tail=log_tail,
    )


def unverified_record(job: Job, environment: Environment, reason: str) -> ResultRecord:
    """A record for a claim that could not be run here at all (backend absent)."""
    return error_record(job, environment, reason, now(), 0.0).model_copy(update={"verdict": Verdict.UNVERIFIED})
