"""Result records: what one verification of one claim on one backend established.

A record is the only thing a page may show a verdict from. It is written
atomically (temporary file, then rename) and only when its content changed, so
Sphinx's dependency tracking sees a new mtime exactly when the evidence moved.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from .. import limits
from ..errors import InvalidFileError, Problem, problems_from_validation
from ..fileio import file_sha256, read_json, write_if_changed
from ..limits import BackendName, ClaimId, RecordName, RecordText
from .coverage_table import SweepTable

RECORD_SCHEMA_VERSION = 1


class Verdict(str, Enum):  # noqa: UP042 - StrEnum would change str(member) and f"{member}" to the value
    """Outcome of a check, and of a claim: never more hopeful than the evidence."""

    HOLDS = "holds"  # the checks ran on this backend and the proposition held
    REFUTED = "refuted"  # the checks ran and the proposition did not hold
    UNVERIFIED = "unverified"  # could not be checked here; the reason says why
    ERROR = "error"  # the verification itself broke: no evidence either way


# When checks disagree, the claim takes the first outcome in this order that any
# check has. A refutation is evidence about the claim and an error is not, so a
# broken check never hides a refuting one; verdict_note says what else happened.
_PRECEDENCE = (Verdict.REFUTED, Verdict.ERROR, Verdict.UNVERIFIED, Verdict.HOLDS)


def combine(outcomes: list[Verdict]) -> Verdict:
    """The claim's verdict from its checks' outcomes.

    refuted if any check refuted; else error if any errored; else unverified if
    any could not be checked; holds only if there are checks and all of them held.
    """
    if not outcomes:
        return Verdict.ERROR
    return next(v for v in _PRECEDENCE if v in outcomes)


_NOTED = {Verdict.ERROR: "errored", Verdict.UNVERIFIED: "unverified"}


def verdict_note(outcomes: list[Verdict]) -> str:
    """The checks the verdict alone does not show: those that errored or could not
    be checked while another outcome decided the claim ("1 check errored")."""
    verdict = combine(outcomes)
    parts = []
    for outcome, word in _NOTED.items():
        count = sum(o is outcome for o in outcomes)
        if count and outcome is not verdict:
            parts.append(f"{count} check{'s' if count > 1 else ''} {word}")
    return ", ".join(parts)


# A duration is a finite number of seconds: a NaN would reach a page as "nan s".
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Measurement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: RecordName
    value: float | int | RecordText | bool | None
    unit: RecordName = ""
    tolerance: RecordName = ""  # how the value was judged, e.g. "<= 1e-05" or "== 0"


class CheckResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: RecordName
    outcome: Verdict
    detail: RecordText = ""
    measurements: list[Measurement] = Field(default_factory=list, max_length=limits.MAX_MEASUREMENTS)
    duration_s: Seconds = 0.0


class Environment(BaseModel):
    """The environment fingerprint: what a reader needs to reproduce a verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: BackendName
    device: RecordName  # e.g. "cuda:0" or "xla:0"
    device_name: RecordName
    torch: RecordName
    packages: dict[RecordName, RecordName] = Field(
        default_factory=dict, max_length=limits.MAX_MAP_ENTRIES
    )  # distribution -> version
    accelerator_runtime: dict[RecordName, RecordName] = Field(
        default_factory=dict, max_length=limits.MAX_MAP_ENTRIES
    )  # cuda, hip, cudnn...
    python: RecordName
    os: RecordName
    machine: RecordName
    env_vars: dict[RecordName, RecordText] = Field(default_factory=dict, max_length=limits.MAX_MAP_ENTRIES)
    torchclaims: RecordName

    def cache_identity(self) -> dict:
        """The fields that, when they change, invalidate earlier verdicts."""
        return self.model_dump()

    def same_configuration(self, other: Environment) -> bool:
        """Equal in every field but the kernel's build suffix: two machines of one
        kind report 'Linux 6.18.44-fc-v669' and 'Linux 6.18.44-fc-v1045' for one
        kernel release, and records made on both may share a results file (each
        record keeps its own fingerprint)."""
        return set(self.differences(other)) <= {"os"} and _kernel(self.os) == _kernel(other.os)

    def differences(self, other: Environment) -> dict[str, tuple[str, str]]:
        """Flat map of what differs between two fingerprints: name -> (self, other)."""
        mine, theirs = _flatten(self.model_dump()), _flatten(other.model_dump())
        return {
            key: (mine.get(key, "(absent)"), theirs.get(key, "(absent)"))
            for key in sorted(set(mine) | set(theirs))
            if mine.get(key) != theirs.get(key)
        }


def _kernel(os_name: str) -> str:
    """'Linux 6.18.44-fc-v669' -> 'Linux 6.18.44': the system and kernel release, without the build."""
    return os_name.split("-", 1)[0]


def _flatten(data: dict, prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = str(value)
    return flat


class ScriptInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: RecordName  # relative to the project root
    sha256: Annotated[str, Field(pattern=r"^([0-9a-f]{64})?$")]  # empty when the script could not be read

    @classmethod
    def of(cls, script: Path, path: str) -> ScriptInfo:
        """The script at ``script``, named ``path`` in the record."""
        try:
            return cls(path=path, sha256=file_sha256(script))
        except OSError:
            return cls(path=path, sha256="")


class ResultRecord(BaseModel):
    """One verification of one claim on one backend."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = RECORD_SCHEMA_VERSION
    claim_id: ClaimId
    verdict: Verdict
    reason: RecordText = ""  # why unverified or error; the cause is named here
    checks: list[CheckResult] = Field(default_factory=list, max_length=limits.MAX_CHECKS)
    conditions: dict[RecordName, RecordText] = Field(
        default_factory=dict, max_length=limits.MAX_MAP_ENTRIES
    )  # model, inputs, method...
    started_at: AwareDatetime  # compared with other times: a date without a zone is refused, never a crash
    duration_s: Seconds
    script: ScriptInfo
    cache_key: RecordName = ""  # stamped by the runner; see torchclaims.run.cache
    inputs: dict[RecordName, RecordName] = Field(
        default_factory=dict, max_length=limits.MAX_MAP_ENTRIES
    )  # project file -> sha256
    environment: Environment
    log_tail: Annotated[str, limits.cut(limits.Limits.log_tail_bytes)] = (
        ""  # the end of the child's output, kept for errors
    )
    # PNG files of the script's figures, relative to the record (or results) file;
    # only plain runs keep them: on the site, the gallery page shows the build's own.
    figures: list[
        Annotated[
            str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*(/[A-Za-z0-9][A-Za-z0-9_.\-]*)*\.png$", max_length=300)
        ]
    ] = Field(default_factory=list, max_length=limits.MAX_FIGURES)
    # Coverage sweeps keep their whole table here (see torchclaims.evidence.coverage_table).
    tables: list[SweepTable] = Field(default_factory=list, max_length=4)
    # How the script was confined (torchclaims.run.sandbox), as its supervisor learnt it
    # before the script ran; "" in records of runs made before the sandbox existed.
    sandbox: RecordText = ""

    @property
    def unconfined(self) -> bool:
        """The script ran without the sandbox: the record says why, or says
        nothing of it (a run made before the sandbox existed)."""
        return not self.sandbox or self.sandbox.startswith("ran without sandbox")

    @property
    def note(self) -> str:
        """What the verdict alone does not show (see verdict_note); '' when nothing."""
        return verdict_note([c.outcome for c in self.checks]) if self.checks else ""

    @property
    def date(self) -> str:
        return self.started_at.astimezone(UTC).strftime("%Y-%m-%d")


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def record_json(record: ResultRecord) -> str:
    return json.dumps(record.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def record_key(record: ResultRecord) -> str:
    """The record's content, independent of the order of its maps: compact, so
    json's C encoder writes it (an indented dump of a coverage table takes 10x longer)."""
    return json.dumps(record.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def write_record(path: Path, record: ResultRecord) -> bool:
    return write_if_changed(path, record_json(record))


def load_versioned_json(
    path: Path, model: type[BaseModel], versions: tuple[int, ...], max_bytes: int, check=lambda data: None
):
    """Read a JSON file within the limits, check its schema version, validate it against ``model``.

    Every failure is an InvalidFileError naming the file (and the field);
    ``check`` may raise one first, e.g. for a file that is not of this kind.
    """
    data = read_json(path, max_bytes)
    check(data)
    if isinstance(data, dict) and data.get("schema_version") not in versions:
        found = data.get("schema_version")
        expected = " or ".join(str(v) for v in versions)
        raise InvalidFileError(
            [Problem(path, "schema_version", f"version {found!r} is not supported (expected {expected})")]
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidFileError(problems_from_validation(path, exc)) from None


def read_record(path: Path) -> ResultRecord:
    """Read and validate a record; InvalidFileError names the file and fields."""
    return load_versioned_json(path, ResultRecord, (RECORD_SCHEMA_VERSION,), limits.LIMITS.record_file_bytes)
