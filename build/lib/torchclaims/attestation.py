"""GitHub artifact attestations of results files made by the accelerator workflow.

The workflow attests every results file it uploads (actions/attest-build-provenance):
GitHub signs a statement binding the file's sha256 to the repository, commit
and workflow run. ``torchclaims merge --verify-attestation OWNER/REPO`` checks
that signature with ``gh attestation verify`` and, when it holds, writes what
was verified beside the file, in ``attestations/<file name>``. Loading a results
file reads that note back and accepts it only when it names this very file
(same sha256) and agrees with the provenance the file states; anyone can
re-check it with the command the note records.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import InvalidFileError, Problem, UsageError, problems_from_validation
from .fileio import read_json
from .limits import KIB, RecordName
from .provenance import WORKFLOW, Provenance
from .records import now, write_if_changed

ATTESTATION_FORMAT = "torchclaims-attestation"
SIGNER_WORKFLOW = ".github/workflows/accelerators.yml"
_RUN_URL = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/actions/runs/(\d+)(/attempts/\d+)?$")
_SHA256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Attestation(BaseModel):
    """What ``gh attestation verify`` established about one results file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["torchclaims-attestation"] = ATTESTATION_FORMAT
    results_sha256: _SHA256
    repository: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]
    signer_workflow: RecordName
    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]
    run_url: Annotated[str, Field(pattern=_RUN_URL.pattern)]
    runner_environment: RecordName = ""
    verified_at: datetime
    verified_with: RecordName  # the command that checked it

    @property
    def run_id(self) -> str:
        return _RUN_URL.match(self.run_url).group(2)

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repository}/attestations"


def sidecar_path(results_path: Path) -> Path:
    return results_path.parent / "attestations" / results_path.name


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify_with_gh(path: Path, repository: str) -> Attestation:
    """Run ``gh attestation verify`` on ``path``; InvalidFileError when it fails."""
    gh = shutil.which("gh")
    if gh is None:
        raise UsageError("--verify-attestation needs the GitHub CLI (gh) on PATH")
    workflow = f"{repository}/{SIGNER_WORKFLOW}"
    command = ["gh", "attestation", "verify", str(path), "--repo", repository, "--signer-workflow", workflow, "--format", "json"]
    try:
        run = subprocess.run([gh, *command[1:]], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidFileError([Problem(path, "attestation", f"gh attestation verify could not run: {exc}")]) from None
    if run.returncode != 0:
        why = (run.stderr.strip().splitlines() or ["no message"])[-1][:300]
        raise InvalidFileError([Problem(path, "attestation", f"gh attestation verify failed: {why}")])
    digest = file_sha256(path)
    try:
        results = json.loads(run.stdout)
        certificate = next(
            item["verificationResult"]["signature"]["certificate"]
            for item in results
            if any(s.get("digest", {}).get("sha256") == digest for s in item["verificationResult"]["statement"]["subject"])
        )
        source = certificate["sourceRepositoryURI"].removeprefix("https://github.com/")
        attestation = Attestation(
            results_sha256=digest,
            repository=source,
            signer_workflow=certificate.get("buildSignerURI", workflow),
            commit=certificate["sourceRepositoryDigest"],
            run_url=certificate["runInvocationURI"],
            runner_environment=certificate.get("runnerEnvironment", ""),
            verified_at=now(),
            verified_with=" ".join(command[:4] + ["<file>"] + command[5:9]),
        )
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError, ValidationError) as exc:
        raise InvalidFileError([Problem(path, "attestation", f"gh attestation verify gave an answer this version cannot read: {exc}")]) from None
    if attestation.repository.lower() != repository.lower():
        raise InvalidFileError([Problem(path, "attestation", f"attested for {attestation.repository}, not {repository}")])
    return attestation


def write_sidecar(results_path: Path, attestation: Attestation) -> Path:
    path = sidecar_path(results_path)
    write_if_changed(path, json.dumps(attestation.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
    return path


def read_sidecar(results_path: Path, provenance: Provenance) -> tuple[Attestation | None, list[Problem]]:
    """The attestation note of a results file, if there is one and it fits the file."""
    path = sidecar_path(results_path)
    if not path.is_file():
        return None, []
    try:
        attestation = Attestation.model_validate(read_json(path, 64 * KIB))
    except InvalidFileError as exc:
        return None, exc.problems
    except ValidationError as exc:
        return None, problems_from_validation(path, exc)
    problems = disagreements(attestation, results_path, provenance)
    return (None if problems else attestation), problems


def disagreements(attestation: Attestation, results_path: Path, provenance: Provenance) -> list[Problem]:
    """Where an attestation does not fit the results file it is said to be about."""
    problems = []
    if attestation.results_sha256 != file_sha256(results_path):
        problems.append(
            Problem(sidecar_path(results_path), "results_sha256", f"names other content than {results_path.name} (the file changed after it was attested)")
        )
    if provenance.kind != WORKFLOW:
        problems.append(Problem(results_path, "provenance.kind", "the file says it was made by hand, but an attestation names a workflow run"))
    elif (provenance.repository.lower(), provenance.commit, provenance.run_id) != (
        attestation.repository.lower(),
        attestation.commit,
        attestation.run_id,
    ):
        problems.append(
            Problem(
                results_path,
                "provenance",
                f"states {provenance.repository} run {provenance.run_id} at {provenance.commit[:12]}, "
                f"but the attestation names {attestation.repository} run {attestation.run_id} at {attestation.commit[:12]}",
            )
        )
    return problems
