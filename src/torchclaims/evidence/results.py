"""Results files: every record of one run on one backend, in one portable file.

Teams with hardware run ``torchclaims verify`` and hand back such a file; the
site merges the committed ones (``results/*.json``) with its own build. A file
is validated on read; a broken or foreign one is rejected with a message that
names it, and never affects other files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from .. import limits
from ..errors import InvalidFileError, Problem
from ..fileio import confined, safe_name, write_if_changed
from ..limits import RecordLabel
from .provenance import Provenance
from .records import Environment, ResultRecord, load_versioned_json, now

RESULTS_FORMAT = "torchclaims-results"
RESULTS_SCHEMA_VERSION = 2
# Version 1 files state no provenance: they are read as submitted by hand.
READABLE_VERSIONS = (1, 2)


class ResultsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str = RESULTS_FORMAT
    schema_version: int = RESULTS_SCHEMA_VERSION
    created: AwareDatetime  # as ResultRecord.started_at
    label: RecordLabel = Field("", description="Free text naming the machine or CI runner")
    provenance: Provenance = Field(default_factory=Provenance, description="How the file was made")
    environment: Environment
    records: list[ResultRecord] = Field(max_length=limits.MAX_RECORDS)

    @model_validator(mode="after")
    def _consistent(self) -> ResultsFile:
        if self.format != RESULTS_FORMAT:
            raise ValueError(f"format must be {RESULTS_FORMAT!r}")
        others = sorted({r.environment.backend for r in self.records} - {self.environment.backend})
        if others:
            raise ValueError(f"records from backend(s) {others} in a file for {self.environment.backend!r}")
        ids = [r.claim_id for r in self.records]
        if len(ids) != len(set(ids)):
            raise ValueError("a claim appears twice; a results file holds one record per claim")
        return self

    @property
    def backend(self) -> str:
        return self.environment.backend


def default_name(results: ResultsFile) -> str:
    """``<backend>-torch<version>-<time>.json``; the parts come from the file's
    data, so anything but letters, digits, '.', '_', '+' and '-' is replaced."""
    env = results.environment
    torch = env.torch.split("+")[0]
    stamp = results.created.strftime("%Y%m%dT%H%M%S")
    return f"{safe_name(env.backend, 40)}-torch{safe_name(torch, 40)}-{stamp}.json"


def destination(directory: Path, results: ResultsFile) -> Path:
    """Where a results file goes in ``directory``: its default name, never outside."""
    return confined(directory, default_name(results))


def build_results(
    records: list[ResultRecord], environment: Environment, label: str = "", provenance: Provenance | None = None
) -> ResultsFile:
    return ResultsFile(
        created=now(),
        label=label,
        provenance=provenance or Provenance(),
        environment=environment,
        records=sorted(records, key=lambda r: r.claim_id),
    )


def write_results(path: Path, results: ResultsFile) -> None:
    current = results.model_copy(update={"schema_version": RESULTS_SCHEMA_VERSION})
    write_if_changed(path, json.dumps(current.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")


def read_results(path: Path) -> ResultsFile:
    """Read and validate one results file; InvalidFileError names the file and fields."""

    def is_results_file(data) -> None:
        if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
            raise InvalidFileError(
                [Problem(path, "format", f"not a torchclaims results file (expected format = {RESULTS_FORMAT!r})")]
            )

    return load_versioned_json(path, ResultsFile, READABLE_VERSIONS, limits.LIMITS.results_file_bytes, is_results_file)


def same_run_configuration(a: ResultsFile, b: ResultsFile) -> bool:
    """Same environment (backend, versions, device, variables; the kernel's build
    may differ), made the same way (provenance and label): such files may be
    merged into one."""
    return a.environment.same_configuration(b.environment) and (a.provenance, a.label) == (b.provenance, b.label)


def superseded_by(results: ResultsFile, directory: Path, keep: Path) -> list[tuple[Path, ResultsFile]]:
    """Other results files in ``directory`` of the same run configuration: a new
    run merges their records and replaces them, while runs of other versions (or
    made another way) stay and make up the history."""
    same = []
    for path in sorted(directory.glob("*.json")):
        if path.resolve() == keep.resolve():
            continue
        try:
            other = read_results(path)
        except InvalidFileError:
            continue  # not ours to delete; the site reports it
        if same_run_configuration(other, results):
            same.append((path, other))
    return same


def merge_by_claim(
    new: ResultsFile, new_path: Path, older: list[tuple[Path, ResultsFile]], claims: set[str]
) -> tuple[ResultsFile, list[str]]:
    """``new`` plus, for every claim in ``claims`` it does not hold, the newest
    record of the ``older`` files (their figures copied beside ``new_path``);
    records of claims that no longer exist are dropped. Returns the merged file
    and the ids of the claims kept from the older files."""
    records = {r.claim_id: r for r in new.records}
    kept: dict[str, tuple[Path, ResultRecord]] = {}
    for path, results in older:
        for record in results.records:
            if record.claim_id in records or record.claim_id not in claims:
                continue
            if record.claim_id not in kept or kept[record.claim_id][1].started_at < record.started_at:
                kept[record.claim_id] = (path, record)
    for claim_id, (path, record) in kept.items():
        records[claim_id] = _move_figures(record, path.parent, new_path)
    merged = new.model_copy(update={"records": sorted(records.values(), key=lambda r: r.claim_id)})
    return merged, sorted(kept)


def _move_figures(record: ResultRecord, old_dir: Path, new_path: Path) -> ResultRecord:
    paths = []
    for figure in record.figures:
        source = old_dir / figure
        relative = f"figures/{new_path.stem}/{record.claim_id}/{Path(figure).name}"
        copy = new_path.parent / relative
        if source.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            if source.resolve() != copy.resolve():
                shutil.copyfile(source, copy)
            paths.append(relative)
    return record.model_copy(update={"figures": paths})


def export_figures(records: list[ResultRecord], records_dir: Path, results_path: Path) -> list[ResultRecord]:
    """Copy the records' figures beside a results file: figures/<file stem>/<claim>/...

    Returns the records with figure paths relative to the results file's folder.
    """
    exported = []
    for record in records:
        paths = []
        for figure in record.figures:
            relative = f"figures/{results_path.stem}/{figure}"
            destination = results_path.parent / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(records_dir / figure, destination)
            paths.append(relative)
        exported.append(record.model_copy(update={"figures": paths}))
    return exported


def figures_dir(results_path: Path) -> Path:
    return results_path.parent / "figures" / results_path.stem
