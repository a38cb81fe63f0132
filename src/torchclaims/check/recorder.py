"""The ATen operators one step of a model dispatches on the CPU, with their dtypes.

A ``TorchDispatchMode`` (torch's documented interface for seeing every ATen
call below autograd) notes each call's operator (``aten::name.overload``), the
dtype it works in and whether it ran in the forward pass or in the backward
pass of the loss. Composite operators (``torch.fft.rfft``, ``linear``) are
seen as what they decompose into on the CPU, exactly as the coverage sweep's
rows see them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

FORWARD, BACKWARD = "forward", "backward"


@dataclass
class UsedOperator:
    """One ATen operator overload the step dispatched, in one dtype."""

    name: str  # aten::name.overload, or aten::name for the default overload
    dtype: str  # "float32"; "" when no tensor took part
    phases: set[str] = field(default_factory=set)
    calls: int = 0

    @property
    def packet(self) -> str:
        """The operator without its overload: aten::add.Tensor -> aten::add."""
        namespace, _, rest = self.name.partition("::")
        return f"{namespace}::{rest.split('.')[0]}"

    def as_dict(self) -> dict:
        return {"operator": self.name, "dtype": self.dtype, "phases": sorted(self.phases), "calls": self.calls}


def _dtype(args, kwargs, out) -> str:
    """The dtype an operator works in: its first tensor input's, else its first output's."""
    for value in tree_leaves((args, kwargs)) + tree_leaves(out):
        if isinstance(value, torch.Tensor):
            return str(value.dtype).removeprefix("torch.")
    return ""


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
        return out

    def operators(self) -> list[UsedOperator]:
        return sorted(self.used.values(), key=lambda u: (u.name, u.dtype))


def record_step(step) -> list[UsedOperator]:
    """Run ``step`` (a :class:`~.target.Step`) once on the CPU; every operator it dispatched."""
    recorder = DispatchRecorder()
    with recorder:
        output = step.forward(step.inputs)
        if step.loss is not None:
            loss = step.loss(output)
            recorder.current = BACKWARD
            loss.backward()
    return recorder.operators()
