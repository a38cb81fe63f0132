"""The ATen operators one step of a model dispatches on the CPU, with their dtypes.

A ``TorchDispatchMode`` (torch's documented interface for seeing every ATen
call below autograd) notes each call's operator (``aten::name.overload``), the
dtype it works in and the dtypes of its outputs (a cast's target), whether it
ran in the forward pass or in the backward pass of the loss, the ranks of its
inputs and the argument kinds a defect
claim's trigger names (:class:`~torchclaims.claims.Trigger`), so that a defect
that needs, say, a slice start before the front flags only a model whose calls
have one. Composite operators (``torch.fft.rfft``, ``linear``) are
seen as what they decompose into on the CPU, exactly as the coverage sweep's
rows see them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from ..claims import Trigger
from .model_errors import model_code
from .names import packet

FORWARD, BACKWARD = "forward", "backward"


@dataclass
class UsedOperator:
    """One ATen operator overload the step dispatched, in one dtype."""

    name: str  # aten::name.overload, or aten::name for the default overload
    dtype: str  # "float32"; "" when no tensor took part
    phases: set[str] = field(default_factory=set)
    calls: int = 0
    ranks: set[int] = field(default_factory=set)  # of its tensor inputs, over every call
    kinds: set[Trigger] = field(default_factory=set)  # the argument kinds some call had
    out_dtypes: set[str] = field(default_factory=set)  # of its tensor outputs: a cast's target (names.CAST_TARGETS)

    def ranks_in_words(self) -> str:
        """``2-D and 3-D inputs``: the ranks of the calls' tensor inputs."""
        return (" and ".join(f"{r}-D" for r in sorted(self.ranks)) or "no tensor") + " inputs"

    def calls_in_words(self) -> str:
        """``2-D and 3-D inputs``, and the argument kinds the calls had: what a trigger is held against."""
        kinds = ", ".join(k.meaning for k in sorted(self.kinds)) or "none of the kinds a trigger names"
        return f"{self.ranks_in_words()}; {kinds}"

    @property
    def packet(self) -> str:
        """The operator without its overload: aten::add.Tensor -> aten::add."""
        return packet(self.name)

    def as_dict(self) -> dict:
        return {
            "operator": self.name,
            "dtype": self.dtype,
            "phases": sorted(self.phases),
            "calls": self.calls,
            "ranks": sorted(self.ranks),
            "kinds": sorted(k.value for k in self.kinds),
            "out_dtypes": sorted(self.out_dtypes),
        }


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _dtype(args, kwargs, out) -> str:
    """The dtype an operator works in: its first tensor input's, else its first output's."""
    for value in tree_leaves((args, kwargs)) + tree_leaves(out):
        if isinstance(value, torch.Tensor):
            return _name(value.dtype)
    return ""


def _slice_kinds(args) -> set[Trigger]:
    """aten::slice(self, dim=0, start=None, end=None, step=1), as its schema orders them."""
    if len(args) < 3 or not isinstance(args[2], int) or args[2] >= 0:
        return set()
    dim = args[1] if isinstance(args[1], int) else 0
    size = args[0].shape[dim] if args[0].dim() else 0
    return {Trigger.NEGATIVE_SLICE_START} | ({Trigger.SLICE_START_BEFORE_FRONT} if args[2] < -size else set())


def call_kinds(name: str, tensors: list[torch.Tensor], args) -> set[Trigger]:
    """The argument kinds of one call (see :class:`~torchclaims.claims.Trigger`)."""
    kinds = set()
    if any(t.dim() == 0 for t in tensors):
        kinds.add(Trigger.ZERO_DIM_INPUT)
    if any(t.is_complex() for t in tensors):
        kinds.add(Trigger.COMPLEX_INPUT)
    if any(t.numel() == 0 for t in tensors):
        kinds.add(Trigger.EMPTY_INPUT)
    if name.startswith("aten::slice."):
        kinds |= _slice_kinds(args)
    return kinds


class DispatchRecorder(TorchDispatchMode):
    """``with recorder.phase(FORWARD): ...`` notes every ATen call in ``used``."""

    def __init__(self):
        super().__init__()
        self.used: dict[tuple[str, str], UsedOperator] = {}
        self.current = FORWARD

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        key = (func.name(), _dtype(args, kwargs, out))
        entry = self.used.setdefault(key, UsedOperator(*key))
        entry.phases.add(self.current)
        entry.calls += 1
        tensors = [v for v in tree_leaves((args, kwargs)) if isinstance(v, torch.Tensor)]
        entry.ranks.update(t.dim() for t in tensors)
        entry.kinds |= call_kinds(key[0], tensors, args)
        entry.out_dtypes.update(_name(v.dtype) for v in tree_leaves(out) if isinstance(v, torch.Tensor))
        return out

    def operators(self) -> list[UsedOperator]:
        return sorted(self.used.values(), key=lambda u: (u.name, u.dtype))


def record_step(step) -> list[UsedOperator]:
    """Run ``step`` (a :class:`~.target.Step`) once on the CPU; every operator it dispatched."""
    recorder = DispatchRecorder()
    with recorder:
        with model_code("the model's forward pass"):
            output = step.forward(step.inputs)
        if step.loss is not None:
            with model_code("the loss function"):
                loss = step.loss(output)
            recorder.current = BACKWARD
            with model_code("the backward pass of the loss"):
                loss.backward()
    return recorder.operators()
