"""The order claims start in: longest first, so parallel workers finish together.

With two workers, a long claim started last keeps one worker busy after the
other has run out of work. Starting the claims in decreasing order of how long
they took before (the build's own earlier record, else a committed results
file's record of the same claim, the configured backend's first) keeps that
tail short. A claim with no earlier duration anywhere starts first: it may be
long, and nothing says otherwise.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidFileError
from ..evidence.results import read_results
from .runner import Job


def committed_durations(results_dir: Path | None, backend: str) -> dict[str, float]:
    """claim id -> seconds, from the results files (records of ``backend`` win over others)."""
    found: dict[str, tuple[bool, float]] = {}
    for path in sorted(results_dir.glob("*.json")) if results_dir is not None and results_dir.is_dir() else []:
        try:
            results = read_results(path)
        except InvalidFileError:
            continue  # the results store reports it
        for record in results.records:
            mine = record.environment.backend == backend
            if record.claim_id not in found or mine >= found[record.claim_id][0]:
                found[record.claim_id] = (mine, record.duration_s)
    return {claim_id: seconds for claim_id, (_, seconds) in found.items()}


def longest_first(jobs: list[Job], took: dict[str, float], backend: str, results_dir: Path | None) -> list[Job]:
    """``jobs`` in the order to start them; ``took`` holds the earlier runs' durations."""
    if len(jobs) < 2:
        return list(jobs)
    known = dict(took)
    if any(job.claim_id not in known for job in jobs):
        known = {**committed_durations(results_dir, backend), **known}
    return sorted(jobs, key=lambda job: -known.get(job.claim_id, float("inf")))
