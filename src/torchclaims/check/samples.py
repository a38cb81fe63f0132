"""Which samples of a coverage cell can stand for the model's own calls.

A cell's outcome is its worst sample's, and OpInfo's samples are not the
model's calls: a reduction that raises only for a 0-dim sample says nothing
about a model whose tensors are 2-D. The operator table keeps, per cell, the
code of every sample (``SweepColumn.samples``), the argument kinds of every
sample (``SweepColumn.arguments``: the ranks of its tensor inputs and letters
for a complex input and the like, :mod:`torchclaims.coverage.op_arguments`),
a detail quoting the first problem of each kind with its sample's index
(``sample 2: RuntimeError: Value out of range (expected to be in range of
[0, -1], but got 0)``), and the operators that ran through the CPU fallback.
A bad sample's argument kinds (:class:`~torchclaims.claims.Trigger`: a 0-dim
input, a complex input, an empty input) come from its recorded token; tables recorded before
tokens were kept reveal them only through the quoted problem:

* a dimension checked against the range ``[-r, r-1]`` (or ``[0, r-1]``) with
  ``r-1 = -1``: the sample's input had rank 0 (:data:`ZERO_DIM_RANGE`);
* the cell's CPU fallback names its operators: a sample that fell back did so
  in those, so for any other operator it ran on the device.

A bad sample (mismatch, raised, no kernel) with an argument kind that none of
the model's calls of the operator has is set aside: *not affected*. Every
other sample stands: one whose kinds the model's calls all have is said to
be *affected*, and a bad one whose inputs nothing reveals is said to be
undecided, never assumed to match or not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..claims import Trigger
from .names import out_of_place, packet
from .recorder import UsedOperator
from .report import FALLBACK, NATIVE, RAISES, STATUSES, WRONG

# A sample code's meaning, by the label the table's sample_legend gives it (coverage.operators.SAMPLE_CODES)
SAMPLE_STATUS = {
    "matched": NATIVE,
    "matched via CPU fallback": FALLBACK,
    "mismatch": WRONG,
    "raised": RAISES,
    "no kernel": RAISES,
    "killed or hung the worker": RAISES,
}
BAD = (WRONG, RAISES)
PROBLEM = re.compile(r"sample (\d+): ([^;]*)")  # one quoted problem of the detail, up to the next part
# A dim wrapped against a rank-0 tensor: torch_xla writes [0, -1], PyTorch's own checks [-0, -1] or [0, -1].
ZERO_DIM_RANGE = re.compile(r"in range of \[-?0, -1\]")
FALLEN_BACK = re.compile(r"CPU fallback: ([^;]*)")
CLIPPED = "..."  # the end of a detail cut at its length limit (coverage_table.clip)


@dataclass
class Reading:
    """A cell as it bears on the model's calls: the status of the samples that stand, and why."""

    status: str  # the worst status of the samples that stand; "" when none judges
    note: str  # what was set aside, what the model's calls meet, what could not be told


def revealed_kinds(detail: str) -> dict[int, frozenset[Trigger]]:
    """Sample index -> the argument kinds its quoted problem shows it had (for tables without tokens)."""
    return {
        int(index): frozenset({Trigger.ZERO_DIM_INPUT})
        for index, text in PROBLEM.findall(detail)
        if ZERO_DIM_RANGE.search(text)
    }


# The letters of a recorded token that name an argument kind the recorder also finds in a model's calls
# (coverage_table.ARGUMENT_KINDS); the others (keepdim, accumulate, a negative dim) are OpInfo's arguments,
# which a model's ATen calls do not show alike, so they never set a sample aside.
TOKEN_LETTERS = {"c": Trigger.COMPLEX_INPUT, "e": Trigger.EMPTY_INPUT}


def token_kinds(token: str) -> frozenset[Trigger]:
    """The argument kinds of a recorded token (ranks ``/`` letters): a rank 0 is a 0-dim input, then
    :data:`TOKEN_LETTERS`."""
    ranks, _, letters = token.partition("/")
    found = {Trigger.ZERO_DIM_INPUT} if "0" in ranks else set()
    return frozenset(found | {kind for letter, kind in TOKEN_LETTERS.items() if letter in letters})


def recorded_kinds(arguments: str, samples: str) -> dict[int, frozenset[Trigger]]:
    """Sample index -> its kinds, from the cell's tokens (none when they do not pair with the sample codes)."""
    tokens = arguments.split()
    if len(tokens) != len(samples):
        return {}
    return {index: token_kinds(token) for index, token in enumerate(tokens)}


def fallen_back(detail: str) -> set[str] | None:
    """The operators the cell ran through the CPU fallback; None when the detail names none or was clipped."""
    match = FALLEN_BACK.search(detail)
    if match is None or detail.endswith(CLIPPED):
        return None
    return {name.strip() for name in match.group(1).split(",") if name.strip()}


def _fell_back_here(operator: UsedOperator, fallbacks: set[str] | None) -> bool:
    """Whether the cell's fallback may have been in this operator (True when the table cannot tell)."""
    if fallbacks is None:
        return True
    names = {operator.name, out_of_place(operator.name)}
    return bool(fallbacks & (names | {packet(n) for n in names}))


def _indices(found: list[int]) -> str:
    return ("sample " if len(found) == 1 else "samples ") + ", ".join(map(str, found))


def read_cell(
    samples: str, detail: str, legend: dict[str, str], operator: UsedOperator, arguments: str = ""
) -> Reading | None:
    """The cell's samples held against the model's calls of ``operator``; None when the table kept no
    sample codes for the cell (its own outcome then decides, as before sweeps kept them). ``arguments``
    are the cell's recorded argument tokens ("" in tables recorded before they were kept)."""
    if not samples:
        return None
    kinds = recorded_kinds(arguments, samples) or revealed_kinds(detail)
    fallbacks = fallen_back(detail)
    standing, aside, met, undecided, elsewhere = [], [], [], [], []
    for index, code in enumerate(samples):
        status = SAMPLE_STATUS.get(legend.get(code, ""), "")
        if status == FALLBACK and not _fell_back_here(operator, fallbacks):
            status = NATIVE
            elsewhere.append(index)
        if status in BAD:
            had = kinds.get(index)
            if had is not None and had - operator.kinds:
                aside.append((index, had - operator.kinds))
                continue
            (undecided if had is None else met).append(index)
        if status:
            standing.append(status)
    status = min(standing, key=STATUSES.index) if standing else ""
    notes = []
    if aside:
        shown = sorted({kind.meaning for _, lacking in aside for kind in lacking})
        notes.append(
            f"{_indices([i for i, _ in aside])} of {len(samples)} had {' or '.join(shown)}; "
            f"your calls: {operator.ranks_in_words()}: not affected"
        )
    if elsewhere:
        notes.append(f"the CPU fallback of {_indices(elsewhere)} was in {', '.join(sorted(fallbacks or ()))}")
    if met:
        shown = sorted({kind.meaning for i in met for kind in kinds[i]})
        had = " or ".join(shown) + ", as your calls do" if shown else "no argument kind your calls lack"
        notes.append(f"{_indices(met)} of {len(samples)} had {had}: affected")
    if undecided:
        notes.append(
            f"{_indices(undecided)} of {len(samples)} went wrong with inputs the table does not record: "
            "could not tell whether yours match"
        )
    return Reading(status, "; ".join(notes))
