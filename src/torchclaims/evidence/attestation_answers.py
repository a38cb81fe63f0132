"""Attestations verified in one step and judged in another, so the site build holds no token.

``torchclaims attest OWNER/REPO --output FILE`` runs where GH_TOKEN is set: it
verifies every results file with ``gh attestation verify``
(:class:`~.attestation.Verifier`) and writes gh's answers to FILE, outside
the checkout. The site build, without the token, names FILE in
``TORCHCLAIMS_ATTESTATIONS`` and :class:`AnswersVerifier` decides from it as
the Verifier decides from gh: an answer counts only for the results file whose
sha256 it names, for the repository the build names
(``TORCHCLAIMS_VERIFY_ATTESTATIONS``), and when the file's provenance agrees
with it. FILE is untrusted input: an entry that does not validate is reported
and attests nothing, and a FILE inside the project is refused, as a note under
``results/`` is: anyone can commit one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from .. import limits
from ..errors import InvalidFileError, Problem, UsageError, problems_from_validation
from ..fileio import file_sha256, read_json, replace_file
from .attestation import Attestation, Verifier, disagreements, repository_from, verifier_from
from .provenance import WORKFLOW, Provenance
from .results import read_results

ANSWERS_FORMAT = "torchclaims-attestations"
ANSWERS_VAR = "TORCHCLAIMS_ATTESTATIONS"
REPOSITORY_VAR = "TORCHCLAIMS_VERIFY_ATTESTATIONS"


class AnswersFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["torchclaims-attestations"]
    attestations: list[Any]  # each entry validated alone: a bad one spoils no other


def verify_all(results_dir: Path, repository: str) -> tuple[list[Attestation], list[Problem]]:
    """gh's verified answers for the results files in ``results_dir``, and why the others have none."""
    verifier = Verifier(repository)
    answers, problems = [], []
    for path in sorted(results_dir.glob("*.json")):
        try:
            results = read_results(path)
        except InvalidFileError as exc:
            problems.extend(exc.problems)
            continue
        attestation, wrong = verifier.check(path, results.provenance)
        problems.extend(wrong)
        if attestation is not None:
            answers.append(attestation)
    return answers, problems


def write_answers(path: Path, answers: list[Attestation]) -> None:
    document = {"format": ANSWERS_FORMAT, "attestations": [a.model_dump(mode="json") for a in answers]}
    replace_file(path, (json.dumps(document, indent=1) + "\n").encode())


def inside(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


@dataclass
class AnswersVerifier:
    """Decides from answers a verification step wrote what the Verifier would decide from gh."""

    repository: str
    source: Path
    answers: dict[str, Attestation] = field(default_factory=dict)  # results file sha256 -> gh's answer
    problems: list[Problem] = field(default_factory=list)  # with the answers file itself

    def check(self, path: Path, provenance: Provenance) -> tuple[Attestation | None, list[Problem]]:
        if provenance.kind != WORKFLOW:
            return None, []
        try:
            attestation = self.answers.get(file_sha256(path))
        except OSError as exc:
            return None, [Problem(path, "attestation", f"cannot be read to compare with {self.source}: {exc}")]
        if attestation is None:
            return None, [Problem(path, "attestation", f"{self.source} holds no verified attestation of these bytes")]
        if attestation.repository.lower() != self.repository.lower():
            return None, [Problem(path, "attestation", f"attested for {attestation.repository}, not {self.repository}")]
        problems = disagreements(attestation, path, provenance)
        return (None if problems else attestation), problems


def read_answers(path: Path, repository: str, root: Path) -> AnswersVerifier:
    """The answers in ``path``; whatever cannot be trusted is in the verifier's problems and attests nothing."""
    verifier = AnswersVerifier(repository, path)
    if inside(path, root):
        verifier.problems.append(
            Problem(path, "", f"ignored: it lies inside the project ({root}); a file anyone can commit cannot attest")
        )
        return verifier
    try:
        document = AnswersFile.model_validate(read_json(path, limits.LIMITS.attestations_file_bytes, "answers file"))
    except InvalidFileError as exc:
        verifier.problems.extend(exc.problems)
        return verifier
    except ValidationError as exc:
        verifier.problems.extend(problems_from_validation(path, exc))
        return verifier
    for index, entry in enumerate(document.attestations):
        try:
            attestation = Attestation.model_validate(entry)
        except ValidationError as exc:
            for problem in problems_from_validation(path, exc):
                verifier.problems.append(Problem(path, f"attestations.{index}.{problem.field}", problem.message))
            continue
        verifier.answers[attestation.results_sha256] = attestation
    return verifier


def build_verifier(repository: str | None, answers: str | None, root: Path) -> Verifier | AnswersVerifier | None:
    """How a build or ``show`` decides what is attested: from the answers file ``answers``
    names, with gh when none is named, or not at all when no repository is named."""
    answers = (answers or "").strip()
    if not answers:
        return verifier_from(repository, REPOSITORY_VAR)
    repository = repository_from(repository, REPOSITORY_VAR)
    if not repository:
        raise UsageError(f"{ANSWERS_VAR} needs {REPOSITORY_VAR} to name the repository (OWNER/REPO) it attests")
    return read_answers(Path(answers), repository, root)
