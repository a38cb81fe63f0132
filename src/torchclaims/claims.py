"""Claim records: the typed model and the loader for ``claims/*.toml``.

A claim record is data. It keeps the source's claim (who makes it, about which
backends, in their own words: the sources' verbatim quotes) apart from the
proposition this project checks, and says how the two relate. Loading never
stops at the first bad file; every problem is collected so a contributor sees
them all at once.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from . import limits
from .backends import BACKEND_NAMES
from .errors import InvalidFileError, Problem, problems_from_validation
from .fileio import decode_utf8, leaves, read_bytes
from .project import IN_GALLERY
from .topics import TOPICS

CLAIM_ID = r"^[a-z0-9]+(-[a-z0-9]+)*$"
SOURCE_DATE = r"^\d{4}(-\d{2}(-\d{2})?)?$"
ATEN_OPERATOR = r"^aten::[A-Za-z0-9_]+$"  # an operator's name without its overload: aten::pixel_shuffle
MAX_QUOTE_WORDS = 40


def known_backends(backends: list[str]) -> list[str]:
    unknown = [name for name in backends if name not in BACKEND_NAMES]
    if unknown:
        raise ValueError(f"unknown backend(s) {unknown}; expected names from {', '.join(BACKEND_NAMES)}")
    if len(set(backends)) != len(backends):
        raise ValueError("a backend is listed twice")
    return backends


MOVED_CLAIMANTS = (
    "claimed_by is no longer a field of the record: name each source's claimant and what its claim is about in "
    'that source (claimant = "AWS", about = ["neuron"]); the sources of an own finding name none'
)

PROJECT = "torchclaims"  # the maker of every proposition that is not a source's own claim


class ClaimKind(str, Enum):  # noqa: UP042 - StrEnum would change str(member) and f"{member}" to the value
    EXECUTABLE = "executable"  # a gallery script verifies it
    ATTRIBUTED = "attributed"  # testimony or a figure with no public method: no verdict


class Relation(str, Enum):  # noqa: UP042 - StrEnum would change str(member) and f"{member}" to the value
    """How the proposition this project checks stands to the sources' claim."""

    IS = "is"  # the claim itself, in checkable words: its claimants state it
    NARROWS = "narrows"  # a part or a special case of the claim (one model, one operation...)
    PRECONDITION = "precondition"  # something the claim relies on, not the claim itself
    OWN_FINDING = "own-finding"  # no source claims it: this project found it; the sources are evidence

    @property
    def wording(self) -> str:
        return _WORDING[self]


_WORDING = {  # how a page introduces the proposition
    Relation.IS: "We check their claim as stated, in checkable words",
    Relation.NARROWS: "We check a narrower proposition of our own, a part or a special case of the claim",
    Relation.PRECONDITION: "We check a precondition of the claim (our proposition), not the claim itself",
    Relation.OWN_FINDING: "We check our own finding; no source makes this claim",
}


class CompilerCaches(str, Enum):  # noqa: UP042 - StrEnum would change str(member) and f"{member}" to the value
    """Whether a claim's run may find compiled kernels that earlier runs left (torchclaims.run.compiler_caches)."""

    SHARED = "shared"  # the claim's own, kept between its runs: the verdict does not depend on them
    COLD = "cold"  # empty for each run: the claim times compiling or counts compilations


class Network(str, Enum):  # noqa: UP042 - StrEnum would change str(member) and f"{member}" to the value
    """What network a claim's script may use (torchclaims.run.sandbox)."""

    NONE = "none"
    LOOPBACK = "loopback"  # a process group of its own processes on 127.0.0.1


class Trigger(str, Enum):  # noqa: UP042 - StrEnum would change str(member) and f"{member}" to the value
    """A kind of argument a defect needs: `torchclaims check` records which of them each call of a model has
    (torchclaims.check.recorder), and flags a defect claim only where some call meets its trigger."""

    ZERO_DIM_INPUT = "zero-dim-input"  # a tensor input with no dimension (a scalar tensor)
    COMPLEX_INPUT = "complex-input"  # a tensor input of a complex dtype
    EMPTY_INPUT = "empty-input"  # a tensor input with no element (a dimension of size 0)
    NEGATIVE_SLICE_START = "negative-slice-start"  # aten::slice with a start below 0
    SLICE_START_BEFORE_FRONT = "slice-start-before-front"  # aten::slice with a start below -size of its dimension

    @property
    def meaning(self) -> str:
        return TRIGGER_MEANINGS[self]


TRIGGER_MEANINGS = {
    Trigger.ZERO_DIM_INPUT: "a 0-dim input",
    Trigger.COMPLEX_INPUT: "a complex input",
    Trigger.EMPTY_INPUT: "an empty input (a dimension of size 0)",
    Trigger.NEGATIVE_SLICE_START: "a slice with a negative start",
    Trigger.SLICE_START_BEFORE_FRONT: "a slice whose negative start is before the front of its dimension",
}


def _short_quote(quote: str) -> str:
    if len(quote.split()) >= MAX_QUOTE_WORDS:
        raise ValueError(f"a quote must be under {MAX_QUOTE_WORDS} words; cut it to the key sentence")
    return quote


# A verbatim excerpt of a source (a claim's, a vendor's statement's): short enough to quote fairly.
Quote = Annotated[
    str,
    Field(min_length=1, max_length=limits.QUOTE_CHARS, description="Verbatim excerpt, under 40 words"),
    AfterValidator(_short_quote),
]


class Source(BaseModel):
    """Where the claim was made, with a short verbatim quote."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: Annotated[
        str | None,
        Field(
            pattern=r"^https?://\S+$",
            max_length=limits.URL_CHARS,
            description="Address of the primary source; may be left out only for an unconfirmed source "
            "whose note says where the quote was seen",
        ),
    ] = None
    quote: Quote
    publisher: Annotated[
        str, Field(min_length=1, max_length=limits.NAME_CHARS, description="Who published the source"), limits.ONE_LINE
    ]
    date: Annotated[str, Field(pattern=SOURCE_DATE, description="YYYY, YYYY-MM or YYYY-MM-DD")]
    confirmed: StrictBool = Field(True, description="False when the quote could not be seen in the primary source")
    note: str = Field(
        "", max_length=limits.NOTE_CHARS, description="Context, e.g. how this source disagrees with another"
    )
    claimant: Annotated[limits.OneLine | None, Field(min_length=1, max_length=limits.NAME_CHARS)] = Field(
        None,
        description="Who makes the claim in this source, in their own words; left out when the source is evidence only "
        "(source code, a page quoted for a fact, every source of an own finding)",
    )
    about: list[str] = Field(
        default_factory=list,
        description="The backends this source's claim speaks about; required with claimant, and only with it",
    )

    @field_validator("about")
    @classmethod
    def _known_backends(cls, backends: list[str]) -> list[str]:
        return known_backends(backends)

    @model_validator(mode="after")
    def _claimant_with_scope(self) -> Source:
        # What a source is about is what its claimant claims about: a verdict is in a
        # claim's scope only where some claimant speaks (torchclaims.evidence.scope).
        if self.claimant is not None and not self.about:
            raise ValueError(
                'a source with a claimant must say which backends its claim is about: about = ["neuron", ...]'
            )
        if self.claimant is None and self.about:
            raise ValueError(
                "about says what a claimant's claim covers: name the claimant, "
                "or leave about out for an evidence-only source"
            )
        return self

    @model_validator(mode="after")
    def _address_or_where_seen(self) -> Source:
        # A quote known only from coverage with no public address is kept, but
        # never passed off as confirmed: the note must say where it was seen.
        if self.url is None and (self.confirmed or not self.note):
            raise ValueError(
                "a source needs a url; only an unconfirmed source (confirmed = false) may leave it out, "
                "with a note saying where the quote was seen"
            )
        return self


class Workaround(BaseModel):
    """What a team does where the claim does not hold on its backend, and who says that it works: one of the
    claim's sources (cites), a source of its own, or another claim whose records measure it (measured_by)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    what: Annotated[
        str,
        Field(
            min_length=10,
            max_length=limits.NOTE_CHARS,
            description="The flag, the code change or the release where it works, in the words of its source",
        ),
        limits.NEUTRAL,
    ]
    cites: Annotated[
        str | None,
        Field(max_length=limits.URL_CHARS, description="The url of the claim's source that states the workaround"),
    ] = None
    source: Source | None = Field(None, description="A source of its own, whose quote states the workaround")
    measured_by: Annotated[
        str | None,
        Field(pattern=CLAIM_ID, description="Another claim, whose records show whether the workaround works"),
    ] = None

    @field_validator("source")
    @classmethod
    def _evidence_only(cls, source: Source | None) -> Source | None:
        if source is not None and source.claimant is not None:
            raise ValueError("a workaround's source is where it is stated, not a claim: leave claimant and about out")
        return source

    @model_validator(mode="after")
    def _attributed_once(self) -> Workaround:
        given = [name for name in WORKAROUND_ORIGINS if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "say who states the workaround, in one way: cites (one of the claim's sources' url), "
                f"[workaround.source] (a source of its own) or measured_by (another claim); got {given or 'none'}"
            )
        return self


WORKAROUND_ORIGINS = ("cites", "source", "measured_by")


# Settings of how a claim's script runs, and why an attributed claim (no script) cannot have them.
RUNS_NOTHING = {
    "no_breaking_test": "has no checks to break",
    "compiler_caches": "runs nothing, so it has no compiler caches to keep cold",
    "network": "runs nothing, so it needs no network",
}


class Claim(BaseModel):
    """One claim about running PyTorch code on an accelerator."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(pattern=CLAIM_ID, description="kebab-case; equals the file name")]
    title: Annotated[str, Field(min_length=3, max_length=120), limits.ONE_LINE]
    proposition: Annotated[
        str,
        Field(
            min_length=10,
            max_length=limits.STATEMENT_CHARS,
            description="What this project checks (or, for an attributed claim, restates)",
        ),
        limits.NEUTRAL,
    ]
    kind: ClaimKind
    topic: str = Field(description="One of: " + ", ".join(TOPICS))
    about: list[str] = Field(
        min_length=1,
        description="Backends the proposition is about; each must be one some source's claim speaks about, "
        "unless it is an own finding",
    )
    relation: Relation = Field(description="How the proposition stands to the sources' claim")
    sources: list[Source] = Field(min_length=1)
    script: str | None = Field(
        None, validate_default=True, description="gallery/<name>.py verifying an executable claim"
    )
    caveats: list[Annotated[str, Field(max_length=limits.NOTE_CHARS)]] = Field(default_factory=list)
    see_also: list[str] = Field(default_factory=list)
    aten_operators: list[Annotated[str, Field(pattern=ATEN_OPERATOR)]] = Field(
        default_factory=list,
        max_length=32,
        description="A defect claim: the ATen operators it concerns, as a dispatch mode names them on the CPU "
        "(aten::pixel_shuffle); `torchclaims check` flags a model that dispatches one where the claim is refuted",
    )
    trigger: list[Trigger] = Field(
        default_factory=list,
        description="A defect claim: the argument kinds that show the defect (one is enough); `torchclaims check` "
        "flags only a model some call of which has one. Leave out when any call may: " + ", ".join(Trigger),
    )
    no_breaking_test: dict[str, Annotated[str, Field(min_length=1, max_length=limits.NOTE_CHARS)]] = Field(
        default_factory=dict,
        max_length=64,
        description="For each check of an executable claim that no test in tests/test_breaking_checks.py refutes "
        "against a broken stand-in: words naming the check (a part of its name; an f-string's field matches any "
        "text), and why no stand-in here can break it",
    )
    compiler_caches: CompilerCaches = Field(
        CompilerCaches.SHARED,
        description="cold: the script times compiling or counts compilations, so each run starts "
        "from empty compiler caches",
    )

    network: Network = Field(
        Network.NONE,
        description="loopback: the script starts processes that talk over 127.0.0.1 (a process group); "
        "no other network either way",
    )
    workaround: Workaround | None = Field(
        None, description="What a team does where the claim does not hold on its backend, and who says it works"
    )

    @field_validator("topic")
    @classmethod
    def _known_topic(cls, topic: str) -> str:
        if topic not in TOPICS:
            raise ValueError(f"unknown topic {topic!r}; expected one of {', '.join(TOPICS)}")
        return topic

    @field_validator("about")
    @classmethod
    def _known_backends(cls, backends: list[str]) -> list[str]:
        return known_backends(backends)

    @field_validator("relation")
    @classmethod
    def _attributed_restates(cls, relation: Relation, info: ValidationInfo) -> Relation:
        if info.data.get("kind") is ClaimKind.ATTRIBUTED and relation is not Relation.IS:
            raise ValueError('an attributed claim restates what its sources say: relation must be "is"')
        return relation

    @field_validator("sources")
    @classmethod
    def _claimants_match_relation(cls, sources: list[Source], info: ValidationInfo) -> list[Source]:
        relation = info.data.get("relation")  # absent when invalid itself
        claimants = [s.claimant for s in sources if s.claimant is not None]
        if relation is Relation.OWN_FINDING and claimants:
            raise ValueError(
                "an own finding has no claimant: its sources are evidence, so leave claimant and about out of each"
            )
        if relation not in (None, Relation.OWN_FINDING) and not claimants:
            raise ValueError(
                "no source names a claimant, so no source makes this claim: "
                "name the claimant (and what its claim is about) "
                'in the source that makes it, or use relation = "own-finding"'
            )
        if PROJECT in claimants:
            raise ValueError(
                f"a source's claimant is {PROJECT!r}: this project's own findings use relation = \"own-finding\""
            )
        return sources

    @field_validator("script")
    @classmethod
    def _script_matches_kind(cls, script: str | None, info: ValidationInfo) -> str | None:
        kind = info.data.get("kind")  # absent when kind itself is invalid
        if kind is ClaimKind.EXECUTABLE and script is None:
            raise ValueError('an executable claim needs `script = "gallery/<name>.py"`')
        if kind is ClaimKind.ATTRIBUTED and script is not None:
            raise ValueError("an attributed claim carries no verdict, so it must not name a script")
        if script is not None and not re.fullmatch(re.escape(IN_GALLERY) + r"[a-z0-9_]+\.py", script):
            raise ValueError("expected a path like gallery/<snake_case_name>.py")
        return script

    @field_validator("no_breaking_test", mode="before")
    @classmethod
    def _a_reason_per_check(cls, value):
        if isinstance(value, str):  # records written before reasons were given check by check
            raise ValueError(
                "give one reason per check: a table [no_breaking_test] whose keys are words naming a check "
                'of the script and whose values say why no stand-in can break it ("<words>" = "<why>")'
            )
        return value

    @field_validator("no_breaking_test", "compiler_caches", "network")
    @classmethod
    def _run_settings_need_a_script(cls, value, info: ValidationInfo):
        unset = cls.model_fields[info.field_name].get_default(call_default_factory=True)
        if value != unset and info.data.get("kind") is ClaimKind.ATTRIBUTED:
            raise ValueError(f"an attributed claim {RUNS_NOTHING[info.field_name]}")
        return value

    @field_validator("trigger")
    @classmethod
    def _trigger_of_named_operators(cls, trigger: list[Trigger], info: ValidationInfo) -> list[Trigger]:
        if trigger and not info.data.get("aten_operators"):
            raise ValueError("a trigger says which calls of the claim's operators meet it: list them in aten_operators")
        if len(set(trigger)) != len(trigger):
            raise ValueError("an argument kind is listed twice")
        return trigger

    @field_validator("workaround")
    @classmethod
    def _workaround_attributed_here(cls, workaround: Workaround | None, info: ValidationInfo) -> Workaround | None:
        if workaround is None:
            return None
        urls = {s.url for s in info.data.get("sources", [])}
        if workaround.cites is not None and workaround.cites not in urls:
            raise ValueError(
                f"cites {workaround.cites!r}, which is not the url of any of the claim's sources: cite one of "
                "them, or give the workaround a [workaround.source] of its own"
            )
        if workaround.measured_by is not None and workaround.measured_by == info.data.get("id"):
            raise ValueError(
                "measured_by names the claim itself, whose records show where it fails: "
                "name another claim, whose records show the workaround working"
            )
        return workaround

    @property
    def executable(self) -> bool:
        return self.kind is ClaimKind.EXECUTABLE

    @property
    def claimants(self) -> dict[str, list[str]]:
        """Each claimant (in source order) and the backends its sources' claims are about."""
        found: dict[str, list[str]] = {}
        for source in self.sources:
            if source.claimant is not None:
                scope = found.setdefault(source.claimant, [])
                scope.extend(b for b in source.about if b not in scope)
        return found

    @property
    def claimed_by(self) -> list[str]:
        """Who makes the claim in the sources; [PROJECT] for an own finding."""
        return list(self.claimants) or [PROJECT]

    @property
    def claimed_about(self) -> list[str]:
        """The backends some source's claim speaks about (every backend of ``about`` for an own finding)."""
        if self.relation is Relation.OWN_FINDING:
            return list(self.about)
        spoken = {b for scope in self.claimants.values() for b in scope}
        return [b for b in BACKEND_NAMES if b in spoken]

    @property
    def proposition_by(self) -> list[str]:
        """Who makes the proposition: the claimants when it is their claim, else this project."""
        return self.claimed_by if self.relation is Relation.IS else [PROJECT]

    def covers(self, backend: str) -> bool:
        """Whether a verdict on ``backend`` is within the claim's scope: the proposition is about
        it and, unless it is an own finding, some source's claim speaks about it."""
        return backend in self.about and backend in self.claimed_about


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
    text = decode_utf8(path, read_bytes(path, limits.LIMITS.claim_file_bytes, "claim record"))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidFileError([Problem(path, "", f"not valid TOML: {exc}")]) from None
    except RecursionError:
        raise InvalidFileError([Problem(path, "", "not valid TOML: arrays or tables nest too deeply")]) from None
    problems = []
    if "claimed_by" in data:  # records written before each source named its claimant
        del data["claimed_by"]
        problems.append(Problem(path, "claimed_by", MOVED_CLAIMANTS))
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
    root = claims_dir.absolute().parent
    for path in sorted(claims_dir.glob("*.toml")):
        outside = leaves(path, root)
        if outside:
            result.problems.append(Problem(path, "", outside))
            result.broken.add(path.stem)
            continue
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
