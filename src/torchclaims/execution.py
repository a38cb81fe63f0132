"""Verify a set of claims: decide what is stale, run it, collect every record.

Shared by the command line and the Sphinx build, so a record is the same
whichever way it was produced. Free of Sphinx imports.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .cache import Staleness, cache_key, script_inputs, staleness
from .claims import Claim
from . import limits
from .errors import InvalidFileError, UsageError
from .fileio import decode_utf8, read_bytes
from .records import ResultRecord, Verdict, now, read_record, write_record
from .runner import Job, Probe, Runner, error_record, unverified_record
from ._child import GalleryTarget

DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Settings:
    root: Path  # the project root: claims/, gallery/ live here
    backend: str = "cpu"
    timeout: float = DEFAULT_TIMEOUT
    parallel: int = field(default_factory=lambda: os.cpu_count() or 1)
    records_dir: Path | None = None  # default: <root>/_build/records
    force: bool = False  # re-run even when the cache says the record is current
    require_usable: bool = False  # refuse (UsageError) instead of recording "unverified" for an unusable backend

    def records_root(self) -> Path:
        return self.records_dir or self.root / "_build" / "records"


@dataclass
class Outcome:
    probe: Probe
    records: dict[str, ResultRecord]  # the current record of every claim asked for
    reran: dict[str, Staleness]  # claims that ran in this call, with why


def record_path(settings: Settings, backend: str, claim_id: str) -> Path:
    return settings.records_root() / backend / f"{claim_id}.json"


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
        return read_record(path)
    except InvalidFileError as exc:
        warn(f"ignoring an unreadable earlier record, the claim will re-run: {exc}")
        return None


def unrunnable(script: Path, rel: str) -> str | None:
    """Why a script cannot be run at all (missing, too large, not UTF-8), or None."""
    if not script.is_file():
        return f"script {rel} does not exist"
    try:
        decode_utf8(script, read_bytes(script, limits.LIMITS.script_bytes, "script"))
    except InvalidFileError as exc:
        return f"script {rel} cannot be run: {exc.problems[0].message}"
    return None


def verify(
    claims: list[Claim],
    settings: Settings,
    *,
    gallery_target: Callable[[Claim], GalleryTarget | None] = lambda claim: None,
    extra_reasons: Callable[[Claim], list[str]] = lambda claim: [],
    log: Callable[[str], None] = print,
    warn: Callable[[str], None] = print,
) -> Outcome:
    """Bring the records of ``claims`` up to date on the configured backend."""
    # Backend plugins are imported in each child, not in the fork server: importing
    # torch_xla there marks every forked child as a bad fork for torch.cuda calls.
    with Runner(settings.backend, parallel=settings.parallel) as runner:
        return _verify(runner, claims, settings, gallery_target, extra_reasons, log, warn)


def _verify(runner: Runner, claims, settings: Settings, gallery_target, extra_reasons, log, warn) -> Outcome:
    probe = runner.probe()
    log(f"torchclaims: backend {probe.backend}: {probe.why}")
    if probe.unavailable is not None and settings.require_usable:
        raise UsageError(f"backend {probe.backend} is not usable here: {probe.unavailable}")
    environment = probe.environment
    records: dict[str, ResultRecord] = {}
    stale: dict[str, Staleness] = {}
    jobs: list[Job] = []
    for claim in claims:
        script = settings.root / claim.script
        path = record_path(settings, probe.backend, claim.id)
        job = Job(claim.id, script, claim.script, path, "", {}, settings.timeout, gallery_target(claim))
        cannot = unrunnable(script, claim.script)
        if cannot:
            records[claim.id] = error_record(job, environment, cannot, now(), 0.0)
            write_record(path, records[claim.id])
            continue
        inputs = script_inputs(script, settings.root)
        key = cache_key(inputs, environment)
        job = Job(claim.id, script, claim.script, path, key, inputs, settings.timeout, job.gallery)
        previous = previous_record(path, warn)
        state = staleness(previous, inputs, environment, key)
        reasons = list(state.reasons) + extra_reasons(claim) + (["--force"] if settings.force else [])
        if not reasons:
            records[claim.id] = previous
            continue
        stale[claim.id] = Staleness(tuple(dict.fromkeys(reasons)))
        if previous is not None and previous.verdict is not Verdict.ERROR:
            archive(previous, settings)
        if probe.unavailable is not None:
            record = unverified_record(job, environment, f"backend {probe.backend} is not usable here: {probe.unavailable}")
            write_record(path, record)
            records[claim.id] = record
            continue
        jobs.append(job)

    def started(job: Job) -> None:
        log(f"torchclaims: running {job.claim_id} ({stale[job.claim_id]})")

    def done(job: Job, record: ResultRecord) -> None:
        reason = f": {record.reason}" if record.reason else ""
        log(f"torchclaims: {job.claim_id} -> {record.verdict.value} in {record.duration_s:.1f}s{reason}")

    records.update(runner.run(jobs, environment, on_start=started, on_done=done))
    return Outcome(probe, records, stale)

