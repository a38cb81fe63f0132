"""Errors shown to users. Each names the file (and field) it is about."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class TorchclaimsError(Exception):
    """Base class for errors whose message is meant for the user."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one file, with what was expected."""

    path: Path
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        field = f" [{self.field}]" if self.field else ""
        return f"{where}{field}: {self.message}"


class InvalidFileError(TorchclaimsError):
    """A claim record, result record or results file that failed validation."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class UsageError(TorchclaimsError):
    """A bad command line or setting (unknown backend, unknown claim id...)."""


def problems_from_validation(path: Path, error) -> list[Problem]:
    """Turn a pydantic ValidationError into one Problem per failing field."""
    problems = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "(record)"
        problems.append(Problem(path, field, item["msg"]))
    return problems
