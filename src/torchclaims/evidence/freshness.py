"""Whether a verdict is outdated: its script changed since, or it is older than the age limit.

A record made with other package versions is not outdated: it is another
configuration, a point in the version history, and pages show it as such (the
matrix column names the version). Records in committed results files made by
an older version of a script that still exists are outdated: ``nox -s sweep``
re-runs those claims before they land.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..errors import InvalidFileError
from ..project import IN_GALLERY
from .records import ResultRecord
from .results import read_results


def stale_reason(
    record: ResultRecord, script_sha: str | None, max_age_days: float, today: datetime | None = None
) -> str:
    """Why a verdict may no longer describe the current script ('' if it still does)."""
    today = today or datetime.now(UTC)
    reasons = []
    age = today - record.started_at
    if age > timedelta(days=max_age_days):
        reasons.append(f"verified {age.days} days ago (limit {max_age_days:g})")
    if script_sha and record.script.sha256 and record.script.sha256 != script_sha:
        reasons.append("the verification script changed since")
    return "; ".join(reasons)


def outdated_results(root: Path, results_dir: Path) -> dict[str, list[str]]:
    """Results file name -> ids of the claims whose record was made by an older
    version of a script that still exists under ``root`` (the script itself, or
    a gallery helper it imported). Unreadable files are left to the results
    store, which reports them."""
    outdated: dict[str, list[str]] = {}
    digests: dict[str, str | None] = {}

    def current(relative: str) -> str | None:
        if relative not in digests:
            path = root / relative
            digests[relative] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        return digests[relative]

    for path in sorted(results_dir.glob("*.json")) if results_dir.is_dir() else []:
        try:
            results = read_results(path)
        except InvalidFileError:
            continue
        for record in results.records:
            used = {name: sha for name, sha in record.inputs.items() if name.startswith(IN_GALLERY)}
            used[record.script.path] = record.script.sha256
            if any(current(name) not in (None, sha) for name, sha in used.items()):
                outdated.setdefault(path.name, []).append(record.claim_id)
    return outdated
