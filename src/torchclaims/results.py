"""Results files: every record of one run on one backend, in one portable file.

Teams with hardware run ``torchclaims verify`` and hand back such a file; the
site merges the committed ones (``results/*.json``) with its own build. A file
is validated on read; a broken or foreign one is rejected with a message that
names it, and never affects other files.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import InvalidFileError, Problem
from .records import Environment, ResultRecord, load_versioned_json, now, write_if_changed

RESULTS_FORMAT = "torchclaims-results"
RESULTS_SCHEMA_VERSION = 1


class ResultsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str = RESULTS_FORMAT
    schema_version: int = RESULTS_SCHEMA_VERSION
    created: datetime
    label: str = Field("", description="Free text naming the machine or CI runner")
    environment: Environment
    records: list[ResultRecord]

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
    env = results.environment
    torch = env.torch.split("+")[0]
    stamp = results.created.strftime("%Y%m%dT%H%M%S")
    return f"{env.backend}-torch{torch}-{stamp}.json"


def build_results(records: list[ResultRecord], environment: Environment, label: str = "") -> ResultsFile:
    return ResultsFile(created=now(), label=label, environment=environment, records=sorted(records, key=lambda r: r.claim_id))


def write_results(path: Path, results: ResultsFile) -> None:
    write_if_changed(path, json.dumps(results.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")


def read_results(path: Path) -> ResultsFile:
    """Read and validate one results file; InvalidFileError names the file and fields."""

    def is_results_file(data) -> None:
        if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
            raise InvalidFileError([Problem(path, "format", f"not a torchclaims results file (expected format = {RESULTS_FORMAT!r})")])

    return load_versioned_json(path, ResultsFile, RESULTS_SCHEMA_VERSION, is_results_file)


def superseded_by(results: ResultsFile, directory: Path, keep: Path) -> list[Path]:
    """Other results files in ``directory`` from the same environment (same backend,
    versions, device and variables): a new run of that configuration replaces them,
    while runs of other versions stay and make up the history."""
    same = []
    for path in sorted(directory.glob("*.json")):
        if path == keep:
            continue
        try:
            other = read_results(path)
        except InvalidFileError:
            continue  # not ours to delete; the site reports it
        if other.environment.cache_identity() == results.environment.cache_identity():
            same.append(path)
    return same


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

