"""What a sample's arguments are: a few characters for the table, a few words for a crash.

A cell's outcome is its worst sample's, and a sample is not a model's call:
``torchclaims check`` can only say whether a bad sample bears on a model's
calls when the table records what the sample was. :func:`kinds` gives each
sample a short token: the rank of each tensor input in order (one digit, ``+``
above 9), then, after ``/``, a letter for each notable kind of argument
(``ARGUMENT_KINDS`` of :mod:`torchclaims.evidence.coverage_table`): ``0/`` is
nothing but a 0-dim tensor, ``22/ak`` two 2-D tensors with ``accumulate=True``
and ``keepdim=True``. Tokens are bounded (at most ``MAX_TENSORS`` ranks), so a
cell's tokens stay small.

:func:`describe` says the same in words, with shapes and dtypes, for the
detail of a cell whose worker died on the sample (the process leaves nothing
else behind).
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_leaves

from ..evidence.coverage_table import MAX_TENSORS, clip

DESCRIPTION = 160  # characters of a sample described in words
FLAGS = {"keepdim": "k", "accumulate": "a"}


def _tensors(sample) -> list[torch.Tensor]:
    return [v for v in tree_leaves((sample.input, sample.args, sample.kwargs)) if isinstance(v, torch.Tensor)]


def _negative(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value < 0


def kinds(sample) -> str:
    """The sample's token: tensor ranks, then ``/`` and its kind letters (see the module docstring)."""
    tensors = _tensors(sample)
    ranks = "".join(str(t.dim()) if t.dim() < 10 else "+" for t in tensors[:MAX_TENSORS])
    if len(tensors) > MAX_TENSORS:
        ranks += "+"
    letters = set()
    if any(t.is_complex() for t in tensors):
        letters.add("c")
    if any(t.numel() == 0 for t in tensors):
        letters.add("e")
    plain = [v for v in tree_leaves((sample.input, sample.args, sample.kwargs)) if not isinstance(v, torch.Tensor)]
    if any(_negative(v) for v in plain):
        letters.add("n")
    letters |= {letter for name, letter in FLAGS.items() if sample.kwargs.get(name) is True}
    return f"{ranks}/{''.join(sorted(letters))}"


def _tensor(value: torch.Tensor) -> str:
    shape = "x".join(map(str, value.shape)) if value.dim() else "0-dim"
    return f"{shape} {str(value.dtype).removeprefix('torch.')}"


def _value(value) -> str:
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value[:4]) + (", ..." if len(value) > 4 else "") + "]"
    return clip(repr(value), 24)


def describe(sample) -> str:
    """The sample's inputs in words: ``input 2x3 float32; args (-1,); kwargs keepdim=True``."""
    parts = [f"input {_value(sample.input)}"]
    if sample.args:
        parts.append("args (" + ", ".join(_value(a) for a in sample.args) + ")")
    if sample.kwargs:
        parts.append("kwargs " + ", ".join(f"{k}={_value(v)}" for k, v in sample.kwargs.items()))
    return clip("; ".join(parts), DESCRIPTION)
