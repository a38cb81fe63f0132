"""Claim records: the typed model and the loader for ``claims/*.toml``.

A claim record is data: what is claimed, by whom, where it was said, and which
gallery script verifies it. Loading never stops at the first bad file; every
problem is collected so a contributor sees them all at once.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from .backends import BACKEND_NAMES
from .errors import InvalidFileError, Problem, problems_from_validation
from .topics import TOPICS

CLAIM_ID = r"^[a-z0-9]+(-[a-z0-9]+)*$"
SOURCE_DATE = r"^\d{4}(-\d{2}(-\d{2})?)?$"
MAX_QUOTE_WORDS = 40


class ClaimKind(str, Enum):
    EXECUTABLE = "executable"  # a gallery script verifies it
    ATTRIBUTED = "attributed"  # testimony or a figure with no public method: no verdict


class Source(BaseModel):
    """Where the claim was made, with a short verbatim quote."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: Annotated[str, Field(pattern=r"^https?://\S+$", description="Address of the primary source")]
    quote: Annotated[str, Field(min_length=1, description="Verbatim excerpt, under 40 words")]
    publisher: Annotated[str, Field(min_length=1, description="Who published the source")]
    date: Annotated[str, Field(pattern=SOURCE_DATE, description="YYYY, YYYY-MM or YYYY-MM-DD")]
    confirmed: bool = Field(
        True, description="False when the quote could not be seen in the primary source"
    )
    note: str = Field("", description="Context, e.g. how this source disagrees with another")

    @field_validator("quote")
    @classmethod
    def _short_quote(cls, quote: str) -> str:
        if len(quote.split()) >= MAX_QUOTE_WORDS:
            raise ValueError(f"a quote must be under {MAX_QUOTE_WORDS} words; cut it to the key sentence")
        return quote


class Claim(BaseModel):
    """One claim about running PyTorch code on an accelerator."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(pattern=CLAIM_ID, description="kebab-case; equals the file name")]
    title: Annotated[str, Field(min_length=3, max_length=120)]
    statement: Annotated[str, Field(min_length=10, description="The checkable proposition")]
    kind: ClaimKind
    topic: str = Field(description="One of: " + ", ".join(TOPICS))
    backends: list[str] = Field(min_length=1, description="Backends the claim speaks about")
    made_by: Annotated[str, Field(min_length=1, description="Who makes the claim")]
    sources: list[Source] = Field(min_length=1)
    script: str | None = Field(None, validate_default=True, description="gallery/<name>.py verifying an executable claim")
    caveats: list[str] = Field(default_factory=list)
    see_also: list[str] = Field(default_factory=list)

    @field_validator("topic")
    @classmethod
    def _known_topic(cls, topic: str) -> str:
        if topic not in TOPICS:
            raise ValueError(f"unknown topic {topic!r}; expected one of {', '.join(TOPICS)}")
        return topic

    @field_validator("backends")
    @classmethod
    def _known_backends(cls, backends: list[str]) -> list[str]:
        unknown = [name for name in backends if name not in BACKEND_NAMES]
        if unknown:
            raise ValueError(f"unknown backend(s) {unknown}; expected names from {', '.join(BACKEND_NAMES)}")
        return backends

    @field_validator("script")
    @classmethod
    def _script_matches_kind(cls, script: str | None, info: ValidationInfo) -> str | None:
        kind = info.data.get("kind")  # absent when kind itself is invalid
        if kind is ClaimKind.EXECUTABLE and script is None:
            raise ValueError("an executable claim needs `script = \"gallery/<name>.py\"`")
        if kind is ClaimKind.ATTRIBUTED and script is not None:
            raise ValueError("an attributed claim carries no verdict, so it must not name a script")
        if script is not None and not re.fullmatch(r"gallery/[a-z0-9_]+\.py", script):
            raise ValueError("expected a path like gallery/<snake_case_name>.py")
        return script

    @property
    def executable(self) -> bool:
        return self.kind is ClaimKind.EXECUTABLE


@dataclass
class ClaimSet:
    """Every claim that loaded, and every problem met on the way."""

    claims: dict[str, Claim] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)  # ids (file names) of records that failed to load

    def by_topic(self) -> dict[str, list[Claim]]:
        grouped: dict[str, list[Claim]] = {topic: [] for topic in TOPICS}
        for claim in sorted(self.claims.values(), key=lambda c: c.id):
            grouped[claim.topic].append(claim)
        return grouped

    def executable(self) -> list[Claim]:
        return [c for c in sorted(self.claims.values(), key=lambda c: c.id) if c.executable]


def load_claim(path: Path) -> Claim:
    """Load and validate one record; raise InvalidFileError listing every problem."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidFileError([Problem(path, "", f"not valid TOML: {exc}")]) from None
    except OSError as exc:
        raise InvalidFileError([Problem(path, "", f"cannot be read: {exc.strerror}")]) from None
    problems = []
    if data.get("id") != path.stem:
        problems.append(Problem(path, "id", f"id {data.get('id')!r} must equal the file name {path.stem!r}"))
    try:
        claim = Claim.model_validate(data)
    except ValidationError as exc:
        problems = problems_from_validation(path, exc) + problems
    if problems:
        raise InvalidFileError(problems)
    return claim


def load_claims(claims_dir: Path) -> ClaimSet:
    """Load every ``*.toml`` record; a broken record is reported, never fatal."""
    result = ClaimSet()
    for path in sorted(claims_dir.glob("*.toml")):
        try:
            claim = load_claim(path)
        except InvalidFileError as exc:
            result.problems.extend(exc.problems)
            result.broken.add(path.stem)
            continue
        result.claims[claim.id] = claim
        result.paths[claim.id] = path
    return result


def claim_json_schema() -> dict:
    """The JSON Schema editors use to validate claim records while typing."""
    schema = Claim.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "torchclaims claim record"
    return schema
