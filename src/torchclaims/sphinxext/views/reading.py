"""What the evidence of one claim means for one accelerator, and what a team must do about it.

An accelerator page (sphinxext/accelerators.py) reads each claim about its
backend from the runs a Standing holds (backend_summary.py): which layer of the
stack each run exercised (the device itself, the vendor's package without its
device, torch_xla's lowering on PJRT's CPU client, a generic PyTorch API on the
CPU reference, another accelerator), which of them speak for the accelerator,
and so what a team must do: it works as written, it is known to differ, it is
undecided until the hardware runs it, or it is only the claimants' word.

Which runs speak, most direct first:
1. a run on the accelerator's own hardware;
2. a run of the accelerator's own stack on a stand-in device (XLA on the CPU
   for xla): only the device differs;
3. otherwise every stand-in whose backend the claim is about (its scope): when
   they agree they speak together, as stand-ins; when they disagree none does,
   since the accelerator is none of them, and only its hardware decides.
A run on a backend outside the claim's scope never speaks. Free of Sphinx imports.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ...backends import vendor_packages_without_device
from ...evidence.records import Verdict
from ...evidence.scope import and_words, reader_name
from .backend_summary import Standing
from .grid import Cell

REFERENCE = "cpu"  # the backend every other is compared with
DECIDED = (Verdict.HOLDS.value, Verdict.REFUTED.value)
WORDS = {Verdict.HOLDS.value: "held", Verdict.REFUTED.value: "was refuted"}


class Layer(Enum):
    """The part of the stack a run exercised."""

    DEVICE = "the device itself"
    XLA_ON_CPU = "torch_xla's lowering on PJRT's CPU client"
    VENDOR_PACKAGE = "a vendor's package without its device"
    CPU_REFERENCE = "a generic PyTorch API on the CPU reference"
    OTHER_DEVICE = "another accelerator's device"


def layer_of(cell: Cell, backend: str) -> Layer:
    """Which layer of the stack the run of ``cell`` exercised, as ``backend``'s page names it."""
    env = cell.entry.record.environment
    if cell.stand_in:  # the one kind grid.stand_in knows: XLA on the CPU
        return Layer.XLA_ON_CPU
    if vendor_packages_without_device(env.backend, env.packages):
        return Layer.VENDOR_PACKAGE
    if cell.backend == REFERENCE:
        return Layer.CPU_REFERENCE
    return Layer.DEVICE if cell.backend == backend else Layer.OTHER_DEVICE


def own_stack(cell: Cell, backend: str) -> bool:
    """The run exercised ``backend``'s own stack on a stand-in device (XLA on the CPU for xla). A host with the
    vendor's package but not its device is no such run: without the device the package takes another path."""
    return cell.backend == backend and bool(cell.stand_in)


class Action(Enum):
    """What a team moving code to the accelerator must do about a claim, in the order pages list them."""

    WORKS = "Works as written"
    DIFFERS = "Known to differ: change the code"
    UNDECIDED = "Undecided: needs the hardware"
    WORD_ONLY = "Only the claimants' word: attributed, no public method to check"


ACTION_OF = {Verdict.HOLDS.value: Action.WORKS, Verdict.REFUTED.value: Action.DIFFERS}


@dataclass(frozen=True)
class Reading:
    """One claim read for one accelerator."""

    standing: Standing
    backend: str
    action: Action
    speakers: tuple[Cell, ...]  # the runs the action rests on (none when undecided or attributed)
    why: str  # why these runs speak for the accelerator, or why none does

    @property
    def on_hardware(self) -> bool:
        return any(layer_of(c, self.backend) is Layer.DEVICE for c in self.speakers)

    def layers(self) -> list[tuple[Cell, Layer]]:
        """Each run of the claim with the layer it exercised, hardware first."""
        cells = ([self.standing.here] if self.standing.here else []) + list(self.standing.stand_ins)
        return [(c, layer_of(c, self.backend)) for c in cells]


def _decided(cells) -> list[Cell]:
    return [c for c in cells if c.kind in DECIDED]


def _where(cells) -> str:
    return and_words([f"{c.where} ({c.kind})" for c in cells])


def read(standing: Standing, backend: str) -> Reading:
    """The reading of one claim about ``backend`` (the rules in the module's docstring)."""
    claim, name = standing.claim, reader_name(backend)
    if not claim.executable:
        return Reading(standing, backend, Action.WORD_ONLY, (), "an attributed claim carries no verdict")
    if standing.here is not None:
        why = f"it ran on {backend} hardware"
        return Reading(standing, backend, ACTION_OF.get(standing.here.kind, Action.UNDECIDED), (standing.here,), why)
    own = _decided(c for c in standing.stand_ins if own_stack(c, backend))
    if own:
        cell = own[0]
        why = f"{cell.where} runs the {backend} stack itself ({layer_of(cell, backend).value}); only the device differs"
        return Reading(standing, backend, ACTION_OF[cell.kind], (cell,), why)
    in_scope = _decided(c for c in standing.stand_ins if c.target)
    outside = _decided(c for c in standing.stand_ins if not c.target)
    kinds = {c.kind for c in in_scope}
    if len(kinds) == 1:
        agreed = WORDS[in_scope[0].kind]
        where = and_words([c.where for c in in_scope])
        each = "there" if len(in_scope) == 1 else "on each"
        why = f"the claim is about {where} too: it {agreed} {each}"
        return Reading(standing, backend, ACTION_OF[kinds.pop()], tuple(in_scope), why)
    if in_scope:
        why = (
            f"the stand-ins the claim is about disagree ({_where(in_scope)}) and {name} is none of them, "
            "so none speaks for it"
        )
    elif outside:
        why = f"only runs outside the claim's scope ({_where(outside)}), which say nothing about {name}"
    elif standing.stand_ins:
        why = "no run reached a verdict either way"
    else:
        why = "no run yet, on any backend"
    return Reading(standing, backend, Action.UNDECIDED, (), why)


def decided_by(backend: str, claim_id: str) -> tuple[str, str]:
    """What would decide the claim on ``backend``: its hardware, and the command that runs the claim there."""
    return reader_name(backend), f"torchclaims verify --backend {backend} {claim_id} --output results/"


def action_title(action: Action, readings: list[Reading], backend: str) -> str:
    """'Works as written on a stand-in (5)', 'Works as written (2 on cuda hardware, 1 on a stand-in)'."""
    if action in (Action.UNDECIDED, Action.WORD_ONLY):
        title = action.value.replace("the hardware", f"{backend} hardware")
        return f"{title} ({len(readings)})"
    ran = sum(1 for r in readings if r.on_hardware)
    if not ran:
        return f"{action.value} on a stand-in ({len(readings)})"
    if ran == len(readings):
        return f"{action.value} on {backend} hardware ({ran})"
    return f"{action.value} ({ran} on {backend} hardware, {len(readings) - ran} on a stand-in)"
