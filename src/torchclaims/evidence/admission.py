"""What a results file must pass before any of its records reaches a page.

Schema validation (torchclaims.evidence.results) says a file is well formed; this module
says whether what it states can be true: every verdict follows from its checks
and every check that holds from its measurements (torchclaims.evidence.judging), the
environment fits the backend it names, no date lies in the future, and each
record belongs to a known claim and ran a known version of its script. Every
identifier that later names a file, a page or a column is checked against its
grammar here, once (PEP 440 for package versions, PEP 508 for distribution
names), so no reader has to filter it. A record that fails is left out, and
each failure is one line naming the file and the field. ``merge`` refuses a
file with any such line; the site, ``show`` and ``diff`` keep the other records.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..backends import all_backends
from ..claims import Claim
from ..errors import Problem
from ..fileio import leaves
from .judging import CLOCK_SKEW, in_future, judgement_problems
from .records import Environment, ResultRecord
from .results import ResultsFile
from .script_history import ScriptHistory

UNAVAILABLE = "(unavailable)"  # what the fingerprint records for an unusable backend
DISTRIBUTION = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")  # a distribution name (PEP 508)
TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")  # runtimes ("hip" = "6.2.41133-dd7f95766"), Python
VERSION = re.compile(r"^[0-9][0-9A-Za-z._+!-]{0,99}$")  # a version as PEP 440 writes it (its normal form's characters)
DEVICE = re.compile(r"^[a-z][a-z0-9_]{0,39}(:[0-9]{1,4})?$")  # "cuda:0", "xla:0", "cpu"


@dataclass
class Admitted:
    """What came of checking one results file."""

    records: list[ResultRecord]  # those that passed
    problems: list[Problem]  # one per failure, file-level ones included
    rejected: dict[str, list[Problem]]  # claim id -> why its record was left out


def is_version(text: str) -> bool:
    """Whether ``text`` is a version as PEP 440 writes it (local labels such as '+cu128' included)."""
    try:
        Version(text)
    except InvalidVersion:
        return False
    return (
        VERSION.match(text) is not None
    )  # PEP 440 also allows surrounding spaces and a leading 'v'; a file name does not


def identifier_problems(env: Environment) -> list[tuple[str, str]]:
    """(field, message) for each identifier of ``env`` that breaks its grammar."""
    found = []
    for name, value in (("torch", env.torch), ("torchclaims", env.torchclaims)):
        if not is_version(value):
            found.append((name, f"{value!r} is not a version (PEP 440)"))
    if not TOKEN.match(env.python):  # platform.python_version() of a development build ends in '+', outside PEP 440
        found.append(("python", f"{env.python!r}: letters, digits and '._+-' only"))
    for name, value in env.packages.items():
        if not DISTRIBUTION.match(name):
            found.append(("packages", f"{name!r} is not a distribution name (PEP 508)"))
        elif not is_version(value):
            found.append((f"packages.{name}", f"{value!r} is not a version (PEP 440)"))
    for name, value in env.accelerator_runtime.items():
        if not (TOKEN.match(name) and TOKEN.match(value)):
            found.append(("accelerator_runtime", f"{name!r} = {value!r}: letters, digits and '._+-' only"))
    if env.device != UNAVAILABLE and not DEVICE.match(env.device):
        found.append(("device", f"{env.device!r} is not a device string such as 'cuda:0'"))
    return [(f"environment.{name}", message) for name, message in found]


def environment_problems(env: Environment) -> list[tuple[str, str]]:
    """(field, message) for each way ``env`` does not fit the backend it names."""
    malformed = identifier_problems(env)
    if malformed:
        return malformed  # the checks below read these fields
    backend = all_backends().get(env.backend)
    if backend is None:
        return [("environment.backend", f"unknown backend {env.backend!r}")]
    if UNAVAILABLE in (env.device, env.device_name):
        return [
            (
                "environment.device",
                f"backend {env.backend} was not usable where this ran, so nothing was verified on it",
            )
        ]
    found = []
    device_type = env.device.split(":", 1)[0]
    if device_type != backend.device_type:
        found.append(
            (
                "environment.device",
                f"{env.device!r} is not a {backend.device_type} device, which backend {env.backend} uses",
            )
        )
    runtimes = set(env.accelerator_runtime)
    if backend.runtime and backend.runtime not in runtimes:
        build = "a CPU-only" if not runtimes & {"cuda", "hip"} else "another"
        found.append(
            (
                "environment.accelerator_runtime",
                f"backend {env.backend} needs a torch build for {backend.runtime}; torch {env.torch} is {build} build",
            )
        )
    if backend.runtime and _local(env.torch) == "cpu":
        found.append(
            (
                "environment.torch",
                f"torch {env.torch} is a CPU-only build; backend {env.backend} needs one for {backend.runtime}",
            )
        )
    if env.backend == "cuda" and "hip" in runtimes:
        found.append(("environment.accelerator_runtime", "a ROCm (HIP) build of torch runs backend rocm, not cuda"))
    if backend.primary_package != "torch" and backend.primary_package not in env.packages:
        found.append(
            (
                "environment.packages",
                f"backend {env.backend} runs through {backend.primary_package}, which is not recorded",
            )
        )
    if _release(env.packages.get("torch", env.torch)) != _release(env.torch):  # the package version has no +local tag
        found.append(
            ("environment.packages.torch", f"{env.packages['torch']} differs from environment.torch {env.torch}")
        )
    if backend.name != "cpu" and env.device_name.strip().lower() in ("", "unknown", "cpu"):
        found.append(("environment.device_name", f"{env.device_name!r} does not name a {env.backend} device"))
    return found


def _release(version: str) -> str:
    return version.split("+", 1)[0]


def _local(version: str) -> str:
    """The local label of a version: 'cpu' for '2.13.0+cpu'."""
    return version.partition("+")[2].lower()


@dataclass
class Admission:
    """The checks of one load (a build, ``show``, ``merge``, ``diff``)."""

    claims: Mapping[str, Claim] | None = None  # None: claim ids and script versions are not checked
    scripts: ScriptHistory | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def for_project(cls, root: Path, claims: Mapping[str, Claim]) -> Admission:
        return cls(claims=claims, scripts=ScriptHistory(root))

    def check(self, path: Path, results: ResultsFile) -> Admitted:
        """The records that pass, and one problem per failure."""
        problems = [Problem(path, name, message) for name, message in environment_problems(results.environment)]
        if results.created > self.now + CLOCK_SKEW:
            problems.append(Problem(path, "created", in_future(results.created)))
        if problems:  # the file as a whole cannot be right: none of its records is shown
            return Admitted([], problems, {record.claim_id: problems for record in results.records})
        admitted = Admitted([], [], {})
        for index, record in enumerate(results.records):
            found = [
                Problem(path, f"records.{index}.{name}", f"claim {record.claim_id}: {message}")
                for name, message in self._record_problems(record, results, path.parent)
            ]
            if found:
                admitted.problems.extend(found)
                admitted.rejected[record.claim_id] = found
            else:
                admitted.records.append(record)
        return admitted

    def _record_problems(self, record: ResultRecord, results: ResultsFile, folder: Path) -> list[tuple[str, str]]:
        found = judgement_problems(record)
        for index, figure in enumerate(record.figures):  # a page publishes the figure: it must lie in the file's folder
            outside = leaves(folder / figure, folder)
            if outside:
                found.append((f"figures.{index}", f"{figure} {outside}"))
        if not record.environment.same_configuration(results.environment):
            moved = ", ".join(record.environment.differences(results.environment))
            found.append(("environment", f"differs from the file's environment ({moved})"))
        if record.started_at > self.now + CLOCK_SKEW:
            found.append(("started_at", in_future(record.started_at)))
        elif record.started_at > results.created + CLOCK_SKEW:
            found.append(("started_at", f"{record.started_at:%Y-%m-%d %H:%M} UTC is after the file was created"))
        if self.claims is not None:
            found.extend(self._claim_problems(record))
        return found

    def _claim_problems(self, record: ResultRecord) -> list[tuple[str, str]]:
        claim = self.claims.get(record.claim_id)
        if claim is None:
            return [("claim_id", "no such claim in claims/ (renamed or removed?)")]
        if not claim.executable:
            return [("claim_id", "the claim is attributed: it carries no verdict")]
        if record.script.path != claim.script:  # any other file's history would vouch for nothing
            return [("script.path", f"{record.script.path!r} is not the claim's script, {claim.script}")]
        if self.scripts is None:
            return []
        known = self.scripts.versions(claim.script)
        if record.script.sha256 in known:
            return []
        where = "its git history" if self.scripts.git else "the current file (no git history here)"
        shallow = "; this clone is shallow, so older versions are unknown here" if self.scripts.shallow else ""
        return [
            (
                "script.sha256",
                f"{record.script.sha256[:12] or '(empty)'} matches no version of {claim.script} "
                f"({len(known)} known from {where}){shallow}",
            )
        ]
