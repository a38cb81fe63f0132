"""GitHub artifact attestations of results files made by the accelerator workflow.

The workflow attests every results file it uploads (actions/attest-build-provenance):
GitHub signs a statement binding the file's sha256 to the repository, commit
and workflow run. Only a verification that runs here can make a verdict
"attested": :class:`Verifier` runs ``gh attestation verify`` on the file
itself, in this process (``merge --verify-attestation`` before a file is
merged, ``torchclaims attest`` before a site build, and the site build when
``TORCHCLAIMS_VERIFY_ATTESTATIONS`` names the repository and no answers file is
given), and keeps gh's answer as the evidence, published beside the file.
:mod:`.attestation_answers` carries those answers from the step that holds the
token to the build, which does not. Nothing read from the repository can
stand in for them: a file that repeats a digest proves nothing, so a note under
``results/attestations/`` is reported and ignored.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InvalidFileError, Problem, UsageError
from ..fileio import file_sha256
from ..limits import KIB, RecordName
from .provenance import WORKFLOW, Provenance
from .records import now

GH_TIMEOUT_S = 300  # one gh command (it downloads the attestation bundle)

ATTESTATION_FORMAT = "torchclaims-attestation"
SIGNER_WORKFLOW = ".github/workflows/accelerators.yml"
_RUN_URL = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/actions/runs/(\d+)(/attempts/\d+)?$")
EVIDENCE_CHARS = 256 * KIB
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
    evidence: Annotated[str, Field(max_length=EVIDENCE_CHARS)] = ""  # what gh answered, kept as it said it

    @property
    def run_id(self) -> str:
        return _RUN_URL.match(self.run_url).group(2)

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repository}/attestations"


def verify_with_gh(path: Path, repository: str) -> Attestation:
    """Run ``gh attestation verify`` on ``path``; InvalidFileError when it fails."""
    gh = shutil.which("gh")
    if gh is None:
        raise UsageError("--verify-attestation needs the GitHub CLI (gh) on PATH")
    workflow = f"{repository}/{SIGNER_WORKFLOW}"
    command = [
        "gh",
        "attestation",
        "verify",
        str(path),
        "--repo",
        repository,
        "--signer-workflow",
        workflow,
        "--format",
        "json",
    ]
    try:
        run = subprocess.run([gh, *command[1:]], capture_output=True, text=True, timeout=GH_TIMEOUT_S)
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
            if any(
                s.get("digest", {}).get("sha256") == digest for s in item["verificationResult"]["statement"]["subject"]
            )
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
            evidence=run.stdout[:EVIDENCE_CHARS],
        )
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError, ValidationError) as exc:
        raise InvalidFileError(
            [Problem(path, "attestation", f"gh attestation verify gave an answer this version cannot read: {exc}")]
        ) from None
    if attestation.repository.lower() != repository.lower():
        raise InvalidFileError(
            [Problem(path, "attestation", f"attested for {attestation.repository}, not {repository}")]
        )
    return attestation


NOTES_DIR = "attestations"  # where earlier versions kept notes beside results files; never read as evidence


def stray_notes(results_dir: Path) -> list[Problem]:
    """One line per file under ``results/attestations/``: none of them is evidence."""
    folder = results_dir / NOTES_DIR
    return [
        Problem(
            path,
            "",
            "ignored: a file in the repository cannot attest a results file; "
            "attestations are verified when the site is built (TORCHCLAIMS_VERIFY_ATTESTATIONS)",
        )
        for path in (sorted(folder.iterdir()) if folder.is_dir() else [])
    ]


@dataclass
class Verifier:
    """Verifies the attestations of results files against ``repository``, here and now."""

    repository: str
    problems = ()  # nothing read up front: gh is asked about each file

    def check(self, path: Path, provenance: Provenance) -> tuple[Attestation | None, list[Problem]]:
        """The verified attestation of a file that declares a workflow run, or why there is none."""
        if provenance.kind != WORKFLOW:
            return None, []
        try:
            attestation = verify_with_gh(path, self.repository)
        except InvalidFileError as exc:
            return None, exc.problems
        problems = disagreements(attestation, path, provenance)
        return (None if problems else attestation), problems


def repository_from(setting: str | None, name: str) -> str:
    """The repository a setting names ('OWNER/REPO'), or '' when it is empty."""
    setting = (setting or "").strip()
    if setting and not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", setting):
        raise UsageError(f"{name} must name a repository as OWNER/REPO, not {setting!r}")
    return setting


def verifier_from(setting: str | None, name: str = "TORCHCLAIMS_VERIFY_ATTESTATIONS") -> Verifier | None:
    """The verifier a setting names ('OWNER/REPO'), or None when it is empty."""
    repository = repository_from(setting, name)
    if not repository:
        return None
    if shutil.which("gh") is None:
        raise UsageError(f"{name} needs the GitHub CLI (gh) on PATH to verify attestations")
    return Verifier(repository)


def disagreements(attestation: Attestation, results_path: Path, provenance: Provenance) -> list[Problem]:
    """Where an attestation does not fit the results file it is said to be about."""
    problems = []
    if attestation.results_sha256 != file_sha256(results_path):
        problems.append(
            Problem(
                results_path, "attestation", "names other content than this file (it changed while it was verified)"
            )
        )
    if provenance.kind != WORKFLOW:
        problems.append(
            Problem(
                results_path,
                "provenance.kind",
                "the file says it was made by hand, but an attestation names a workflow run",
            )
        )
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
                f"but the attestation names {attestation.repository} "
                f"run {attestation.run_id} at {attestation.commit[:12]}",
            )
        )
    return problems
