"""Verify a set of claims: decide what is stale, run it, collect every record.

Shared by the command line and the Sphinx build, so a record is the same
whichever way it was produced. Free of Sphinx imports.

Before any claim runs, a device smoke runs where the claims will (forked from
the fork server, in the sandbox): a device that works for the probe but not
there stops the run in one line naming the part of the sandbox that stops it,
instead of one error record per claim.

A run with nothing to do starts no process: the environment probe's answer
is remembered (torchclaims.run.probe_cache) and the fork server starts with the
first claim that must run. A run with claims to run probes again, so each new
record carries an environment measured by that run, and starts the claims
that took longest last time first, so two workers finish together.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import limits
from ..caches import Caches
from ..claims import Claim, CompilerCaches, Network
from ..errors import InvalidFileError, TorchclaimsError, UsageError
from ..evidence.judging import read_own_record
from ..evidence.memo import ContentMemo
from ..evidence.records import ResultRecord, Verdict, now, write_record
from ..fileio import decode_utf8, leaves, read_bytes
from ..project import DEFAULTS, Folders
from ._child import GalleryTarget
from .cache import InputScanner, Staleness, cache_key, staleness
from .cache_eviction import in_use, keep_within, mark_used
from .probe_cache import key_parts, recall, remember
from .progress import HEARTBEAT_S, Progress
from .runner import Job, Probe, Runner, error_record, unverified_record
from .scheduling import longest_first


@dataclass(frozen=True)
class Settings:
    root: Path  # the project root: claims/, gallery/ live here
    backend: str = "cpu"
    timeout: float = DEFAULTS.timeout_s
    parallel: int = field(default_factory=lambda: os.cpu_count() or 1)
    records_dir: Path | None = None  # default: <root>/_build/records
    force: bool = False  # re-run even when the cache says the record is current
    require_usable: bool = False  # refuse (UsageError) instead of recording "unverified" for an unusable backend
    # Remembered probe, common modules preloaded, compiler caches shared between
    # runs (for claims that allow it). False: the reference these must agree with.
    shortcuts: bool = True
    results_dir: Path | None = None  # committed results files: their durations order a first run

    def records_root(self) -> Path:
        return self.records_dir or Folders(self.root).records


@dataclass
class Outcome:
    probe: Probe
    records: dict[str, ResultRecord]  # the current record of every claim asked for
    reran: dict[str, Staleness]  # claims that ran in this call, with why


def record_path(settings: Settings, backend: str, claim_id: str) -> Path:
    return Caches(settings.records_root()).record(backend, claim_id)


def history_dir(settings: Settings) -> Path:
    """Superseded records of earlier builds, kept so the changes page can compare."""
    return settings.records_root() / "history"


def archive(record: ResultRecord, settings: Settings) -> None:
    stamp = record.started_at.strftime("%Y%m%dT%H%M%S")
    write_record(history_dir(settings) / record.environment.backend / f"{record.claim_id}-{stamp}.json", record)


def previous_record(path: Path, warn: Callable[[str], None]) -> ResultRecord | None:
    if not path.exists():
        return None
    try:
        return read_own_record(path)
    except InvalidFileError as exc:
        warn(f"ignoring an unreadable earlier record, the claim will re-run: {exc}")
        return None


def unrunnable(script: Path, rel: str) -> str | None:
    """Why a script cannot be run at all (missing, too large, not UTF-8), or None."""
    if not script.is_file():
        return f"script {rel} does not exist"
    outside = leaves(script, script.parents[len(Path(rel).parts) - 1])  # the project root
    if outside:
        return f"script {rel} {outside}"
    try:
        decode_utf8(script, read_bytes(script, limits.LIMITS.script_bytes, "script"))
    except InvalidFileError as exc:
        return f"script {rel} cannot be run: {exc.problems[0].message}"
    return None


@dataclass
class Plan:
    """What a run will do, decided before anything is written or started."""

    current: dict[str, ResultRecord] = field(default_factory=dict)  # records that stay
    written: dict[str, ResultRecord] = field(default_factory=dict)  # records made without running (error, unverified)
    archived: list[ResultRecord] = field(default_factory=list)  # superseded records to keep in the history
    jobs: list[Job] = field(default_factory=list)
    stale: dict[str, Staleness] = field(default_factory=dict)
    took: dict[str, float] = field(default_factory=dict)  # claim id -> seconds its earlier run took


def verify(
    claims: list[Claim],
    settings: Settings,
    *,
    gallery_target: Callable[[Claim], GalleryTarget | None] = lambda claim: None,
    extra_reasons: Callable[[Claim], list[str]] = lambda claim: [],
    log: Callable[[str], None] = print,
    warn: Callable[[str], None] = print,
    progress: Progress | None = None,
) -> Outcome:
    """Bring the records of ``claims`` up to date on the configured backend; ``progress`` shows
    the claims as they run (by default as lines of ``log``)."""
    # Backend plugins are imported in each child, not in the fork server: importing
    # torch_xla there marks every forked child as a bad fork for torch.cuda calls.
    with Runner(settings.backend, parallel=settings.parallel, shortcuts=settings.shortcuts, log=log) as runner:
        memo = ContentMemo(Caches(settings.records_root()).memo())
        scanner = InputScanner(settings.root, memo)
        prober = _Prober(runner, settings, log)
        probe, why = prober.recall()
        if probe is None:  # probing starts the fork server: ready it for every claim that may run
            _preload(
                runner,
                [scanner.uses_of(settings.root / c.script) for c in claims if (settings.root / c.script).is_file()],
                log,
            )
            probe = prober.measure(why)
        if probe.unavailable is not None and settings.require_usable:
            raise UsageError(f"backend {probe.backend} is not usable here: {probe.unavailable}")
        plan = _plan(claims, settings, probe, scanner, gallery_target, extra_reasons, warn)
        if plan.jobs and not prober.measured:
            _preload(runner, [job.uses for job in plan.jobs], log)
            fresh = prober.measure("claims will run")
            if fresh != probe:  # something the probe's key does not cover moved: decide again
                probe, plan = fresh, _plan(claims, settings, fresh, scanner, gallery_target, extra_reasons, warn)
        memo.save()
        if plan.jobs:  # the device works outside the sandbox (the probe): it must work inside too
            stopped = runner.sandbox_stops_device()
            if stopped is not None:
                raise TorchclaimsError(stopped)
        ran = [job.claim_id for job in plan.jobs]
        with in_use(settings.records_root(), probe.backend, ran):  # another build's eviction leaves these be
            outcome = _carry_out(runner, plan, probe, settings, progress or Progress(log))
    if plan.jobs:  # only a claim that ran can have grown its caches
        mark_used(settings.records_root(), probe.backend, ran)
        for line in keep_within(settings.records_root(), limits.LIMITS):  # the oldest caches go
            log(f"torchclaims: {line}")
    return outcome


def _preload(runner: Runner, uses: list[frozenset[str]], log: Callable[[str], None]) -> None:
    groups = runner.preload_for(uses)
    if groups:
        log(
            f"torchclaims: the fork server preloads {', '.join(g.rsplit('.', 1)[-1] for g in groups)} "
            "(used by more claims than workers; not where torch is built for CUDA or ROCm)"
        )


class _Prober:
    """The probe's answer: remembered when nothing it depends on changed, else measured."""

    def __init__(self, runner: Runner, settings: Settings, log: Callable[[str], None]):
        self.runner, self.log = runner, log
        self.path = Caches(settings.records_root()).probe(settings.backend)
        self.parts = key_parts(settings.backend)
        self.shortcuts = settings.shortcuts
        self.measured = False

    def recall(self) -> tuple[Probe | None, str]:
        """The remembered answer, or None and why the probe must run."""
        if not self.shortcuts:
            return None, "probing every run (no shortcuts)"
        probe, why = recall(self.path, self.parts)
        if probe is not None:
            self.log(
                f"torchclaims: backend {probe.backend}: {probe.why} "
                "(as probed before: nothing the probe reads has changed)"
            )
        return probe, why

    def measure(self, why: str) -> Probe:
        probe = self.runner.probe()
        self.measured = True
        self.log(f"torchclaims: backend {probe.backend}: {probe.why} (probed: {why})")
        remember(self.path, self.parts, probe)
        return probe


def _plan(claims, settings: Settings, probe: Probe, scanner: InputScanner, gallery_target, extra_reasons, warn) -> Plan:
    environment = probe.environment
    plan = Plan()
    for claim in claims:
        script = settings.root / claim.script
        path = record_path(settings, probe.backend, claim.id)
        cold = claim.compiler_caches is CompilerCaches.COLD
        job = Job(claim.id, script, claim.script, path, "", {}, settings.timeout, gallery_target(claim), cold)
        cannot = unrunnable(script, claim.script)
        if cannot:
            plan.written[claim.id] = error_record(job, environment, cannot, now(), 0.0)
            continue
        inputs = scanner.inputs(script)
        if cold:  # switching a claim's caches re-runs it
            inputs["compiler caches"] = CompilerCaches.COLD.value
        key = cache_key(inputs, environment)
        loopback = claim.network is Network.LOOPBACK
        job = Job(
            claim.id,
            script,
            claim.script,
            path,
            key,
            inputs,
            settings.timeout,
            job.gallery,
            cold,
            scanner.uses[script],
            loopback,
            caches=Caches(settings.records_root()).compiler(probe.backend, claim.id),
        )
        previous = previous_record(path, warn)
        state = staleness(previous, inputs, environment, job.cache_key)
        reasons = list(state.reasons) + extra_reasons(claim) + (["--force"] if settings.force else [])
        if not reasons:
            plan.current[claim.id] = previous
            continue
        plan.stale[claim.id] = Staleness(tuple(dict.fromkeys(reasons)))
        if previous is not None:
            plan.took[claim.id] = previous.duration_s
            if previous.verdict is not Verdict.ERROR:
                plan.archived.append(previous)
        if probe.unavailable is not None:
            plan.written[claim.id] = unverified_record(
                job, environment, f"backend {probe.backend} is not usable here: {probe.unavailable}"
            )
            continue
        plan.jobs.append(job)
    return plan


def _carry_out(runner: Runner, plan: Plan, probe: Probe, settings: Settings, progress: Progress) -> Outcome:
    for record in plan.archived:
        archive(record, settings)
    for claim_id, record in plan.written.items():
        write_record(record_path(settings, probe.backend, claim_id), record)
    records = {**plan.current, **plan.written}
    reran = {job.claim_id: str(plan.stale[job.claim_id]) for job in plan.jobs}

    def done(job: Job, record: ResultRecord) -> None:
        reason = f": {record.reason}" if record.reason else ""
        progress.done(job.claim_id, f"{record.verdict.value} in {record.duration_s:.1f}s{reason}")

    jobs = longest_first(plan.jobs, plan.took, probe.backend, settings.results_dir)
    progress.begin(len(jobs))
    try:
        ran = runner.run(
            jobs,
            probe.environment,
            on_start=lambda job: progress.started(job.claim_id, reran[job.claim_id]),
            on_done=done,
            on_tick=progress.tick,
            tick_s=HEARTBEAT_S,
        )
    finally:
        progress.end()  # a terminal's bar goes, also when the run stopped
    records.update(ran)
    progress.report(reran, len(plan.current))
    return Outcome(probe, records, plan.stale)
