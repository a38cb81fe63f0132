"""Every results file the site shows, as JSON and CSV a reader can download.

A committed results file is published byte for byte (what was merged, checked
and perhaps attested), with a CSV beside it of the records the site shows (those
the load checks admitted, torchclaims.evidence.admission); this build's
records and each earlier build's record are published the same way (and a
coverage table, by the coverage-table directive, one line per cell). The CSV has
one row per measurement (a check without measurements, or a record without
checks, still has its row), so a spreadsheet can filter by any column. Text a
stranger wrote never reaches a spreadsheet as a formula (:func:`csv_cell`, the
one place a value becomes a cell); file names come from :func:`fileio.safe_name`.
Where this build verified a file's attestation, gh's answer is published beside
it as the evidence. Free of Sphinx imports.
"""

from __future__ import annotations

import csv
import io
import shutil
from dataclasses import dataclass
from pathlib import Path

from ...evidence.coverage_table import SweepTable
from ...evidence.records import ResultRecord, record_json
from ...evidence.results import ResultsFile, write_results
from ...evidence.store import EARLIER_BUILD, THIS_BUILD, Entry, Store, version_label
from ...fileio import safe_name, write_if_changed

FOLDER = "downloads"
THIS_BUILD_STEM = "torchclaims-results"
CSV_COLUMNS = (
    "claim_id",
    "verdict",
    "note",
    "reason",
    "backend",
    "device",
    "device_name",
    "version",
    "torch",
    "started_at",
    "duration_s",
    "script",
    "script_sha256",
    "check",
    "outcome",
    "detail",
    "measurement",
    "value",
    "unit",
    "tolerance",
)


@dataclass(frozen=True)
class Download:
    """Where one results file (or one earlier record) is published, relative to the site root."""

    stem: str  # "results/xla-torch2.9.0-20261129T181838"

    @property
    def json(self) -> str:
        return f"{FOLDER}/{self.stem}.json"

    @property
    def csv(self) -> str:
        return f"{FOLDER}/{self.stem}.csv"

    @property
    def attestation(self) -> str:
        """What ``gh attestation verify`` answered when this build verified the file."""
        return f"{FOLDER}/{self.stem}.attestation.json"


def download_for(entry: Entry) -> Download:
    """The published file that holds ``entry``'s record."""
    if entry.origin == THIS_BUILD:
        return Download(THIS_BUILD_STEM)
    if entry.origin == EARLIER_BUILD:
        record = entry.record
        stamp = record.started_at.strftime("%Y%m%dT%H%M%S")
        return Download(f"earlier-builds/{safe_name(record.environment.backend)}-{record.claim_id}-{stamp}")
    return Download(f"results/{safe_name(Path(entry.origin).stem)}")


def csv_cell(value) -> str:
    """A CSV field: numbers as numbers; text starting like a formula is quoted as text."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = str(value)
        return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
    return repr(value)


def table_csv(table: SweepTable) -> str:
    """A coverage table in long form: one line per listed cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([table.item, "column", "outcome", "samples", "detail"])
    for cells in table.cells():
        writer.writerow([csv_cell(value) for value in cells[:3]] + [csv_cell(cells[4]), csv_cell(cells[3])])
    return out.getvalue()


def records_csv(records: list[ResultRecord]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for record in records:
        env = record.environment
        base = [
            record.claim_id,
            record.verdict.value,
            record.note,
            record.reason,
            env.backend,
            env.device,
            env.device_name,
            version_label(env),
            env.torch,
            record.started_at.isoformat(),
            record.duration_s,
            record.script.path,
            record.script.sha256,
        ]
        rows = []
        for check in record.checks:
            head = [check.name, check.outcome.value, check.detail]
            rows += [head + [m.name, m.value, m.unit, m.tolerance] for m in check.measurements] or [head + [""] * 4]
        for row in rows or [[""] * 7]:
            writer.writerow([csv_cell(v) for v in base + row])
    return out.getvalue()


def _copy_if_changed(source: Path, target: Path) -> None:
    """Copy a file unless the target holds its bytes already (the published copy then stays as it is)."""
    if (
        target.is_file()
        and target.stat().st_size == source.stat().st_size
        and target.read_bytes() == source.read_bytes()
    ):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def write_downloads(outdir: Path, store: Store, build: ResultsFile | None, results_dir: Path | None) -> list[Download]:
    """Publish every results file the store holds entries of; returns what was written."""
    folder = outdir / FOLDER
    written: dict[str, Download] = {}
    evidence: set[str] = set()
    for history in store.entries.values():
        for entry in history:
            download = download_for(entry)
            if download.stem in written:
                continue
            if entry.origin == THIS_BUILD:
                if build is None:
                    continue
                write_results(outdir / download.json, build)
                records = build.records
            elif entry.origin == EARLIER_BUILD:
                write_if_changed(outdir / download.json, record_json(entry.record))
                records = [entry.record]
            else:
                _copy_if_changed(
                    results_dir / entry.origin, outdir / download.json
                )  # as submitted (an attestation names its bytes)
                if entry.source.attestation is not None:  # the evidence of the verification this build ran
                    write_if_changed(
                        outdir / download.attestation, entry.source.attestation.model_dump_json(indent=1) + "\n"
                    )
                    evidence.add(download.attestation)
                # The table holds what the site shows: the records the load checks admitted.
                records = [e.record for shown in store.entries.values() for e in shown if e.origin == entry.origin]
            write_if_changed(outdir / download.csv, records_csv(records))
            written[download.stem] = download
    for stale in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if (
            stale.is_file()
            and stale.relative_to(folder).with_suffix("").as_posix() not in written
            and stale.relative_to(outdir).as_posix() not in evidence
        ):
            stale.unlink()  # a file the site no longer shows
    return sorted(written.values(), key=lambda d: d.stem)
