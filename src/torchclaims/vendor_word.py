"""What a vendor publishes about its own backend, release by release: stated facts, never verdicts.

``vendor_word/<backend>.toml`` holds one file per backend: who publishes it and,
per statement, the operator or API it is about, the status the vendor gives it
(native, host-only, CPU fallback, unsupported...), a short verbatim quote, the
address, the release and the date. The accelerator page shows each statement
beside what our own records measured (sphinxext/views/vendor_word.py); a statement
decides nothing here, it is the vendor's word, attributed. A broken file is
reported with its field and left out; it never takes another down.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from . import limits
from .claims import ATEN_OPERATOR, SOURCE_DATE, Quote, known_backends
from .errors import InvalidFileError, Problem, problems_from_validation
from .fileio import decode_utf8, leaves, read_bytes


class Status(str, Enum):  # noqa: UP042 - StrEnum would change str(member) and f"{member}" to the value
    """The support a vendor states, in its own categories."""

    NATIVE = "native"  # runs on the device
    SUPPORTED = "supported"  # supported, with no word on where it runs
    HOST_ONLY = "host-only"  # runs in Python on the host, no tensor computation
    CPU_FALLBACK = "cpu-fallback"  # the operator runs on the CPU, its result copied back
    PARTIAL = "partial"  # accepted, only in part
    UNSUPPORTED = "unsupported"


class Subject(str, Enum):  # noqa: UP042 - StrEnum would change str(member) and f"{member}" to the value
    OPERATOR = "operator"  # an ATen operator: compared with our operator tables
    API = "api"  # a PyTorch API or parameter: compared with the claims that measure it


class Statement(BaseModel):
    """One thing the vendor states, where and when."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: Subject
    name: Annotated[str, Field(min_length=1, max_length=limits.NAME_CHARS), limits.ONE_LINE]
    status: Status
    quote: Quote
    url: Annotated[str, Field(pattern=r"^https://\S+$", max_length=limits.URL_CHARS)]
    release: Annotated[str, Field(min_length=1, max_length=limits.NAME_CHARS), limits.ONE_LINE]
    date: Annotated[str, Field(pattern=SOURCE_DATE, description="YYYY, YYYY-MM or YYYY-MM-DD")]
    measured_by: list[Annotated[str, Field(max_length=limits.NAME_CHARS)]] = Field(
        default_factory=list, description="api: the claims whose records measure what the statement is about"
    )
    compare_with: list[str] = Field(
        default_factory=list,
        description="operator: the backends whose operator tables measure the layer the statement is about "
        "(default: the file's backend); say why in a comment",
    )
    note: str = Field("", max_length=limits.NOTE_CHARS)

    @field_validator("compare_with")
    @classmethod
    def _known_backends(cls, backends: list[str]) -> list[str]:
        return known_backends(backends)

    @field_validator("name")
    @classmethod
    def _operator_named_as_aten(cls, name: str, info) -> str:
        if info.data.get("subject") is Subject.OPERATOR and not re.fullmatch(ATEN_OPERATOR, name):
            raise ValueError(f"an operator is named as a dispatch mode names it (aten::embedding), not {name!r}")
        return name

    @field_validator("measured_by")
    @classmethod
    def _claims_of_an_api(cls, claim_ids: list[str], info) -> list[str]:
        if claim_ids and info.data.get("subject") is Subject.OPERATOR:
            raise ValueError("an operator is compared with our operator tables: leave measured_by out")
        return claim_ids


class VendorWord(BaseModel):
    """Everything one vendor states about one backend."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str
    publisher: Annotated[str, Field(min_length=1, max_length=limits.NAME_CHARS), limits.ONE_LINE]
    statements: list[Statement] = Field(min_length=1, max_length=500)

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, backend: str) -> str:
        return known_backends([backend])[0]


@dataclass
class VendorWords:
    """Every vendor file that loaded, by backend, and what was wrong with the others."""

    by_backend: dict[str, VendorWord] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def load_vendor_word(path: Path) -> VendorWord:
    """Load and validate one file; raise InvalidFileError listing every problem with its field."""
    text = decode_utf8(path, read_bytes(path, limits.LIMITS.claim_file_bytes, "vendor statements"))
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise InvalidFileError([Problem(path, "", f"not valid TOML: {exc}")]) from None
    try:
        word = VendorWord.model_validate(data)
    except ValidationError as exc:
        raise InvalidFileError(problems_from_validation(path, exc)) from None
    if word.backend != path.stem:
        raise InvalidFileError([Problem(path, "backend", f"{word.backend!r} must equal the file name {path.stem!r}")])
    return word


def load_vendor_words(folder: Path) -> VendorWords:
    """Every ``<backend>.toml`` in ``folder``; a broken file is reported, never fatal."""
    found = VendorWords()
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        outside = leaves(path, folder.absolute().parent)
        if outside:
            found.problems.append(Problem(path, "", outside))
            continue
        try:
            word = load_vendor_word(path)
        except InvalidFileError as exc:
            found.problems.extend(exc.problems)
            continue
        found.by_backend[word.backend] = word
    return found
