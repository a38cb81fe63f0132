"""Every target backend in every report: what was measured there, what only its vendor says, what is unknown.

A team asks about the backend it means to move to, whether or not this
project measured it. For each target backend (:data:`TARGET_BACKENDS`, and any
other a ``--target-backend`` names) a report states the releases whose tables
or defect claims it looked the model up in, how many of the model's operator
× dtype pairs have a measured answer on some release of it (the denominator:
every pair the step dispatched) and how many none does, and the attributed claims about it
(the vendor's or another party's word, with the source), which carry no
verdict. A backend named by ``--target-backend`` that nothing measured makes
the report *unverified*: nothing is known there, which is not a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..claims import Claim, ClaimKind
from ..site_addresses import Links
from .report import NOT_COVERED, ColumnReport

TARGET_BACKENDS = ("cuda", "rocm", "neuron", "tpu", "xla", "mps", "xpu")


@dataclass
class VendorWord:
    """An attributed claim about a backend: someone's word, no verdict."""

    claim: str
    title: str
    publisher: str
    source: str  # the first source's address ("" for an unconfirmed one without)
    url: str  # the claim on the site


@dataclass
class BackendStanding:
    backend: str
    measured: list[str]  # the column labels (backend × release) the model was looked up in
    answered: int  # the model's operator × dtype pairs some release of the backend has a measured answer for
    unknown: int  # the pairs no release of it answers
    pairs: int  # the denominator: every pair the step dispatched
    vendor: list[VendorWord] = field(default_factory=list)
    asked: bool = False  # named by --target-backend

    def line(self) -> str:
        """What is measured and what is unknown, in one line."""
        if not self.measured:
            return f"not measured: no table or defect claim measured {self.backend}; all {self.pairs} pairs unknown"
        return (
            f"measured on {', '.join(self.measured)}; {self.answered} of {self.pairs} pairs have a measured answer "
            f"on some release of it, {self.unknown} unknown on every release"
        )


def _vendor_word(claims: dict[str, Claim], backend: str, links: Links) -> list[VendorWord]:
    return [
        VendorWord(
            claim.id,
            claim.title,
            claim.sources[0].publisher,
            str(claim.sources[0].url or ""),
            links.claim(claim),
        )
        for claim in sorted(claims.values(), key=lambda c: c.id)
        if claim.kind is ClaimKind.ATTRIBUTED and backend in claim.about
    ]


def standings(
    columns: list[ColumnReport], claims: dict[str, Claim], pairs: int, asked: set[str], links: Links
) -> list[BackendStanding]:
    """One standing per target backend, in :data:`TARGET_BACKENDS` order, then the other backends asked for."""
    names = list(TARGET_BACKENDS) + sorted(asked - set(TARGET_BACKENDS))
    found = []
    for backend in names:
        mine = [c for c in columns if c.backend == backend]
        answered = {(f.operator, f.dtype) for c in mine for f in c.operators if f.status != NOT_COVERED}
        found.append(
            BackendStanding(
                backend,
                [c.label for c in mine],
                len(answered),
                pairs - len(answered),
                pairs,
                _vendor_word(claims, backend, links),
                backend in asked,
            )
        )
    return found
