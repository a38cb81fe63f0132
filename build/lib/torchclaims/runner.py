"""The isolated, parallel runner: each claim script in its own process.

Children fork from a multiprocessing fork server that has torch (and the other
heavy modules) imported already, so isolation costs a fork, not an import. The
fork server starts with the first child a run needs, so a run with nothing to
do starts no process. The parent never imports torch. Whatever a child does (raise, ``sys.exit``,
``os._exit``, segfault, hang, fork and leave processes behind), the parent turns
it into a result record, and the other claims are unaffected.

Nothing a run starts outlives it: each claim's process ends everything its
script started (torchclaims._child), a timeout or Ctrl-C asks it to do so
(SIGTERM, then SIGKILL for its session), and closing the runner stops the fork
server and the multiprocessing resource tracker it started.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import forkserver, resource_tracker
from pathlib import Path

from . import _child, limits
from .compiler_caches import COLD_CONDITION, CONDITION_NAME, cold_cache_env, shared_cache_links
from .errors import InvalidFileError, TorchclaimsError
from .fileio import locked
from .stopping import GRACE_S, end_claim_processes, stop_forkserver, stop_resource_tracker
from .records import Environment, ResultRecord, ScriptInfo, Verdict, now, read_record, write_record

# What the fork server imports (torchclaims.preload), and the groups it may add: a
# group's module, and the module names (as scripts import them) that mean a claim uses it.
PRELOAD = "torchclaims.preload"
PRELOAD_GROUPS = {
    "torchclaims.preload.compiler": ("torch.compile", "torch._dynamo", "torch._inductor"),
    "torchclaims.preload.huggingface": ("transformers", "accelerate"),
}


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
    measure compiling share the compiler caches between runs. Without, only
    torch and the harness are imported beforehand and every claim gets empty
    compiler caches: the reference the shortcuts must give the same verdicts as.
    """

    def __init__(self, backend: str, *, parallel: int, shortcuts: bool = True):
        self.backend = backend
        self.parallel = max(1, parallel)
        self.shortcuts = shortcuts
        self.env = {**_child.SCRIPT_ENVIRONMENT, "TORCHCLAIMS_BACKEND": backend}
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload([PRELOAD])
        self.threads = max(1, (os.cpu_count() or 1) // self.parallel)
        # Helpers already running belong to someone else in this process.
        self._own_forkserver = forkserver._forkserver._forkserver_pid is None
        self._own_tracker = getattr(resource_tracker._resource_tracker, "_pid", None) is None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def preload_for(self, uses: list[frozenset[str]]) -> list[str]:
        """Before the fork server starts: add each group more claims use than
        there are workers (importing it once in the server then costs less than
        each claim importing it). Returns the groups added."""
        if not self.shortcuts:
            return []
        groups = [
            group for group, names in PRELOAD_GROUPS.items()
            if sum(any(used == n or used.startswith(n + ".") for used in claim for n in names) for claim in uses) > self.parallel
        ]
        self._ctx.set_forkserver_preload([PRELOAD, *groups])
        return groups

    def close(self) -> None:
        """Stop the fork server and the resource tracker this runner started."""
        if self._own_forkserver:
            stop_forkserver()
        if self._own_tracker:
            stop_resource_tracker()

    def probe(self, timeout: float = 300.0) -> Probe:
        """Resolve the backend and fingerprint the environment in a child."""
        receiver, sender = self._ctx.Pipe(duplex=False)
        process = self._ctx.Process(target=_child.probe, args=(self.backend, self.env, sender), daemon=True)
        process.start()
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
        return Probe(answer["backend"], answer["why"], answer["unavailable"], Environment.model_validate(answer["environment"]))

    def run(
        self,
        jobs: list[Job],
        environment: Environment,
        on_start: Callable[[Job], None] = lambda job: None,
        on_done: Callable[[Job, ResultRecord], None] = lambda job, record: None,
    ) -> dict[str, ResultRecord]:
        """Run every job; always return one record per job."""
        pending = deque(jobs)
        running: dict[int, _Running] = {}
        results: dict[str, ResultRecord] = {}
        with tempfile.TemporaryDirectory(prefix="torchclaims-") as scratch:
            try:
                while pending or running:
                    while pending and len(running) < self.parallel:
                        job = pending.popleft()
                        on_start(job)
                        started = self._start(job, Path(scratch))
                        running[started.process.sentinel] = started
                    deadline = min(r.deadline for r in running.values())
                    multiprocessing.connection.wait(list(running), timeout=max(0.0, deadline - time.monotonic()))
                    for sentinel, item in list(running.items()):
                        timed_out = item.process.is_alive() and time.monotonic() >= item.deadline
                        if item.process.is_alive() and not timed_out:
                            continue
                        del running[sentinel]
                        record = self._finish(item, environment, timed_out)
                        results[item.job.claim_id] = record
                        on_done(item.job, record)
            except KeyboardInterrupt:
                end_claim_processes([item.process for item in running.values()])
                stopped = sorted(item.job.claim_id for item in running.values())
                raise Interrupted(
                    f"interrupted: {len(results)} of {len(jobs)} claims finished; "
                    f"stopped {', '.join(stopped) or 'nothing'}; every process the run started has ended"
                ) from None
            except BaseException:
                end_claim_processes([item.process for item in running.values()])
                raise
        return results

    def _start(self, job: Job, scratch: Path) -> _Running:
        stem = scratch / job.claim_id
        cold = job.cold_caches or not self.shortcuts
        child_job = _child.ChildJob(
            claim_id=job.claim_id,
            script=str(job.script),
            cwd=str(job.script.parent),
            env={
                **self.env,
                **(cold_cache_env(f"{stem}.tmp") if cold else {}),
                "TORCHCLAIMS_RECORD_PATH": f"{stem}.record.json",
                "TORCHCLAIMS_DEADLINE": f"{time.time() + job.timeout:.3f}",  # long sweeps size their guard from it
                "TORCHCLAIMS_SCRIPT": job.script_rel,
            },
            log_path=f"{stem}.log",
            status_path=f"{stem}.status.json",
            figures_dir=f"{stem}.figures",
            tmp_dir=f"{stem}.tmp",
            tmp_links={} if cold else shared_cache_links(),
            threads=self.threads,
            log_bytes=limits.LIMITS.log_tail_bytes,
            log_lines=limits.LIMITS.log_tail_lines,
            page_output_bytes=limits.LIMITS.page_output_bytes,
            gallery=job.gallery,
        )
        process = self._ctx.Process(target=_child.run, args=(child_job,), name=f"claim:{job.claim_id}")
        process.start()
        return _Running(job, child_job, process, time.monotonic(), time.monotonic() + job.timeout, now(), cold)

    def _finish(self, item: _Running, environment: Environment, timed_out: bool) -> ResultRecord:
        process, child = item.process, item.child
        if timed_out:
            end_claim_processes([process])
        process.join(GRACE_S)
        shutil.rmtree(child.tmp_dir, ignore_errors=True)  # in case the claim's process could not
        duration = round(time.monotonic() - item.started, 3)
        cause = _failure_cause(process.exitcode, timed_out, item.job.timeout, Path(child.status_path))
        record = None
        if cause is None:
            try:
                record = read_record(Path(child.env["TORCHCLAIMS_RECORD_PATH"]))
            except InvalidFileError as exc:
                missing = not Path(child.env["TORCHCLAIMS_RECORD_PATH"]).exists()
                cause = "the script ended without calling finish()" if missing else f"the script wrote an invalid record: {exc}"
            else:
                if record.claim_id != item.job.claim_id:
                    cause = f"the script verified claim {record.claim_id!r}, not {item.job.claim_id!r}"
                    record = None
        if record is None:
            record = error_record(item.job, environment, cause, item.started_at, duration, _tail(Path(child.log_path)))
        with locked(item.job.record_path.parent):  # another run may write the same claim's record
            figures = _keep_figures(Path(child.figures_dir), item.job.record_path) if record.checks else []
            record = _stamp(record, item, environment, duration, figures)
            write_record(item.job.record_path, record)
        return record

def _stamp(record: ResultRecord, item: _Running, environment: Environment, duration: float, figures: list[str]) -> ResultRecord:
    # The parent knows the script's project path and content for sure (in the
    # child, sphinx-gallery changes the working directory).
    script = ScriptInfo(path=item.job.script_rel, sha256=_sha256(item.job.script))
    # The duration is the child's wall time, imports included: what the claim costs a build.
    # The environment is the one the child was started in (the cache key's), not
    # one the script may have changed (inductor sets its own variables, say).
    update = {
        "cache_key": item.job.cache_key,
        "inputs": item.job.inputs,
        "script": script,
        "duration_s": duration,
        "environment": environment,
        "figures": figures,
    }
    if item.cold:  # the run had empty compiler caches: a condition of its verdict
        update["conditions"] = {**record.conditions, CONDITION_NAME: COLD_CONDITION}
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


def _keep_figures(scratch: Path, record_path: Path) -> list[str]:
    """Move a run's figures beside its record; return their paths relative to it."""
    target = record_path.with_suffix("")  # <records>/<backend>/<claim>/figure-N.png
    shutil.rmtree(target, ignore_errors=True)
    figures = sorted(scratch.glob("figure-*.png"), key=lambda p: int(p.stem.split("-")[1]))
    if figures:
        target.mkdir(parents=True, exist_ok=True)
    for figure in figures:
        shutil.move(figure, target / figure.name)
    return [f"{target.name}/{figure.name}" for figure in figures]


def _failure_cause(exitcode: int | None, timed_out: bool, timeout: float, status_path: Path) -> str | None:
    """Why a claim's run gave no record (None: it ended normally).

    ``exitcode`` is the claim process's; the status file holds the script's."""
    if timed_out:
        return f"timed out after {timeout:g}s (the process was killed)"
    try:
        status = json.loads(status_path.read_text())
    except (OSError, ValueError):
        status = {}
    if not isinstance(status, dict):
        status = {}
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


def error_record(job: Job, environment: Environment, cause: str, started_at, duration: float, log_tail: str = "") -> ResultRecord:
    """A record saying the verification broke; it is never evidence about the claim."""
    return ResultRecord(
        claim_id=job.claim_id,
        verdict=Verdict.ERROR,
        reason=cause,
        started_at=started_at,
        duration_s=duration,
        script=ScriptInfo(path=job.script_rel, sha256=_sha256(job.script)),
        cache_key=job.cache_key,
        inputs=job.inputs,
        environment=environment,
        log_tail=log_tail,
    )


def unverified_record(job: Job, environment: Environment, reason: str) -> ResultRecord:
    """A record for a claim that could not be run here at all (backend absent)."""
    return error_record(job, environment, reason, now(), 0.0).model_copy(update={"verdict": Verdict.UNVERIFIED})


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""
