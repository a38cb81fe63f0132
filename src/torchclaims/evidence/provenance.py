"""Where a verdict came from, and how much a reader may lean on it.

A results file states how it was made: by the project's accelerator workflow
(repository, workflow, run, commit, runner), by ``torchclaims sweep`` (its
label), or by hand, with a free-text label. The statement alone proves
nothing, so a verdict's :class:`Source` ranks it:

1. this build's own records (the site measured them itself);
2. a workflow run whose GitHub artifact attestation was verified by this
   process (see torchclaims.evidence.attestation);
3. everything else: not reproduced, including a file that declares a workflow
   run but whose attestation was not verified here.

A lower rank never outranks a higher one for the same matrix column. Besides
the rank, a source says what the repository itself knows of the file: the
commit that added it, the one that changed it last and their authors
(:func:`file_histories`), facts a reader
can check with ``git log``, and the command its label says made it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import UsageError
from ..limits import NAME_CHARS, RecordName
from ..text_safety import quoted

if TYPE_CHECKING:
    from .attestation import Attestation

WORKFLOW = "workflow"
BY_HAND = "by-hand"
# The label `torchclaims sweep` gives its files (sweep_plan.LABEL_PREFIX; a test keeps the two equal).
SWEEP_LABEL_PREFIX = "sweep:"
# GitHub Actions sets these in every job; a workflow run is described by them.
GITHUB_VARIABLES = (
    "GITHUB_REPOSITORY",
    "GITHUB_WORKFLOW_REF",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_ATTEMPT",
    "GITHUB_SHA",
    "RUNNER_NAME",
)


class Provenance(BaseModel):
    """How a results file was made, as its maker states it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["workflow", "by-hand"] = BY_HAND
    repository: Annotated[str, Field(pattern=r"^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)?$", max_length=NAME_CHARS)] = ""
    workflow: RecordName = ""  # path of the workflow file in the repository
    run_id: Annotated[str, Field(pattern=r"^\d{0,20}$")] = ""
    run_attempt: Annotated[str, Field(pattern=r"^\d{0,6}$")] = ""
    commit: Annotated[str, Field(pattern=r"^([0-9a-f]{40}|[0-9a-f]{64})?$")] = ""
    runner: RecordName = ""

    @property
    def run_url(self) -> str:
        if not (self.repository and self.run_id):
            return ""
        attempt = f"/attempts/{self.run_attempt}" if self.run_attempt else ""
        return f"https://github.com/{self.repository}/actions/runs/{self.run_id}{attempt}"

    def describe(self) -> str:
        if self.kind != WORKFLOW:
            return "submitted by hand"
        commit = f", commit {self.commit[:12]}" if self.commit else ""
        runner = f", runner {self.runner}" if self.runner else ""
        return f"workflow {self.workflow or '?'} of {self.repository or '?'}, run {self.run_id or '?'}{commit}{runner}"


def from_github_actions(environ: Mapping[str, str] = os.environ) -> Provenance:
    """The provenance of a run inside a GitHub Actions job (``verify --workflow-run``)."""
    missing = [name for name in GITHUB_VARIABLES if not environ.get(name)]
    if missing:
        raise UsageError(
            f"--workflow-run needs the GitHub Actions variables {', '.join(missing)}; run it inside a workflow job"
        )
    repository = environ["GITHUB_REPOSITORY"]
    # GITHUB_WORKFLOW_REF: owner/repo/.github/workflows/file.yml@refs/...
    workflow = re.sub(rf"^{re.escape(repository)}/", "", environ["GITHUB_WORKFLOW_REF"]).split("@", 1)[0]
    return Provenance(
        kind=WORKFLOW,
        repository=repository,
        workflow=workflow,
        run_id=environ["GITHUB_RUN_ID"],
        run_attempt=environ["GITHUB_RUN_ATTEMPT"],
        commit=environ["GITHUB_SHA"],
        runner=environ["RUNNER_NAME"],
    )


class Trust(IntEnum):
    """How far a verdict's source can be relied on; lower ranks first."""

    BUILD = 0  # measured by this build
    ATTESTED = 1  # the project's workflow, with a verified artifact attestation
    BY_HAND = 2  # anything else: not reproduced by the project


@dataclass(frozen=True)
class Commit:
    """One commit, as git tells it."""

    sha: str
    author: str
    date: str  # YYYY-MM-DD

    def describe(self) -> str:
        return f"commit {self.sha[:12]} by {self.author} on {self.date}"


@dataclass(frozen=True)
class FileHistory:
    """What git knows of one results file: who added it, who changed it last, and
    whether the file differs from its last commit."""

    last: Commit
    added: Commit | None = None  # None: the addition lies beyond a shallow clone's history
    uncommitted: bool = False

    def describe(self) -> str:
        parts = [f"added in {self.added.describe()}" if self.added else "its addition is not in this clone's history"]
        if self.last != self.added:
            parts.append(f"last changed in {self.last.describe()}")
        if self.uncommitted:
            parts.append("changed since, not committed")
        return ", ".join(parts)


def file_histories(directory: Path) -> dict[str, FileHistory]:
    """file name -> its git history, for the files git tracks directly in ``directory``
    (one ``git log`` for all of them; empty outside a git checkout)."""
    log = git_output(
        directory, "log", "--no-renames", "--format=%x1e%H%x1f%an%x1f%as", "--name-status", "--relative", "--", "."
    )
    if log is None:
        return {}
    boundary = shallow_boundary(directory)
    last: dict[str, Commit] = {}
    added: dict[str, Commit] = {}
    for block in log.split("\x1e")[1:]:  # newest first
        head, _, changes = block.partition("\n")
        sha, author, date = (head.split("\x1f") + ["", ""])[:3]
        if sha in boundary:
            continue  # a shallow clone's oldest commit shows every file as added: what it did is unknown here
        commit = Commit(sha, author[:NAME_CHARS], date)
        for line in changes.splitlines():
            status, _, name = line.partition("\t")
            if not name or "/" in name:
                continue
            last.setdefault(name, commit)
            if status == "A":
                added.setdefault(name, commit)  # a file added twice keeps its last addition
    dirty = set((git_output(directory, "diff", "--name-only", "--relative", "HEAD", "--", ".") or "").splitlines())
    return {name: FileHistory(commit, added.get(name), name in dirty) for name, commit in last.items()}


def git_output(directory: Path, *args: str) -> str | None:
    """What ``git args`` prints in ``directory``; None without git, outside a checkout, or on failure."""
    if shutil.which("git") is None or not directory.is_dir():
        return None
    try:
        run = subprocess.run(
            ["git", *args], cwd=directory, capture_output=True, text=True, errors="replace", timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return run.stdout if run.returncode == 0 else None


def shallow_boundary(directory: Path) -> set[str]:
    """The commits where a shallow clone's history is cut (none in a full clone)."""
    path = git_output(directory, "rev-parse", "--path-format=absolute", "--git-path", "shallow")
    try:
        return set(Path(path.strip()).read_text().split()) if path else set()
    except OSError:
        return set()  # no such file: not a shallow clone


def made_by(label: str) -> str:
    """The command a file's label says made it ('' when the label names none)."""
    return "torchclaims sweep" if label.startswith(SWEEP_LABEL_PREFIX) else ""


@dataclass(frozen=True)
class Source:
    """Where one entry of the results store came from, as pages show it."""

    trust: Trust
    origin: str  # "this build", "an earlier build", "this machine" or a results file name
    label: str = ""
    provenance: Provenance | None = None
    attestation_url: str = ""  # where GitHub shows the attestation
    attested_run: str = ""  # the run the attestation names
    committed: FileHistory | None = None  # what git says of the file, when it is tracked
    attestation: Attestation | None = None  # what this build verified: its evidence is published

    @property
    def mark(self) -> str:
        """Short text beside every verdict badge."""
        if self.trust is Trust.BY_HAND and self.committed and made_by(self.label):
            return "sweep run, not reproduced"
        return {
            Trust.BUILD: self.origin,
            Trust.ATTESTED: "project workflow, attested",
            Trust.BY_HAND: "submitted by hand, not reproduced",
        }[self.trust]

    @property
    def css_class(self) -> str:
        return {Trust.BUILD: "tc-source-build", Trust.ATTESTED: "tc-source-attested", Trust.BY_HAND: "tc-source-hand"}[
            self.trust
        ]

    def describe(self) -> str:
        """One sentence for an evidence block, starting with the origin."""
        if self.trust is Trust.BUILD:
            return self.origin
        label = f" (labelled {quoted(self.label)})" if self.label else ""  # the submitter's words, not the site's
        git = f"; {self.committed.describe()}" if self.committed else "; no commit adding it is known in this checkout"
        if self.trust is Trust.ATTESTED:
            return (
                f"{self.origin}: {self.provenance.describe()}; "
                f"GitHub artifact attestation verified by this build{label}{git}"
            )
        declared = ""
        if self.provenance and self.provenance.kind == WORKFLOW:
            declared = f"; it declares {self.provenance.describe()}, with no attestation verified by this build"
        command = made_by(self.label)
        how = f"made by {command}, as its label {quoted(self.label)} says" if command else f"submitted by hand{label}"
        return f"{self.origin}: {how}; not reproduced by the project{git}{declared}"


def build_source(origin: str) -> Source:
    return Source(Trust.BUILD, origin)
