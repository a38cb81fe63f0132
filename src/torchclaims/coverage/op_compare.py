"""Whether a device result matches the CPU's, judged the way PyTorch's own tests judge it.

Three rules beyond an element-wise ``isclose`` at the cell's tolerance
(:mod:`.op_list`), each what PyTorch's tests already accept:

* **Indices of ties.** Where the documentation leaves the index of equal
  values to the implementation (``kthvalue``, ``median``, ``nanmedian``,
  ``mode``, ``topk``, ``sort``/``argsort`` unless stable, ``max``/``min``
  with a dimension), the indices are not compared as numbers: each side's
  indices are replaced by the input's values they point at (PyTorch's
  test_sort_and_select checks ``x.gather(dim, indices)`` against the values).
  A device that picks another of two equal elements matches; one that points
  at a different value does not.
* **NaN.** NaN on both sides at the same place is equal, as ``assert_close``
  with ``equal_nan`` has it.
* **The more accurate side.** Where a floating result differs beyond the
  tolerance, the sample is computed once more on the CPU in float64
  (complex128), and an element within the tolerance of that result is not
  held against the device, however far the CPU's element is from it:
  accumulation in another order or at another precision (bfloat16 sums,
  cumulative sums) can make the device the more accurate side. PyTorch's
  ``TestCommon.test_python_ref`` accepts a result in that case ("the
  reference was more accurate than the torch operator") when it is merely
  nearer the float64 result than the other; this asks the device to be right
  by it within the tolerance, since for an ill-conditioned operator (the
  pseudo-inverse of a singular matrix) float64 may take another branch, and
  nearer would mean nothing.

Every comparison reports the size of the difference: the largest absolute
and relative error over the compared elements, and the largest ratio of an
error to what the tolerance allowed there (above 1 beyond it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.utils._pytree import tree_flatten

# op_db name -> (position of ``dim`` among the sample's args, its default)
TIE_INDICES = {
    "kthvalue": (1, -1),
    "topk": (1, -1),
    "median": (0, None),
    "nanmedian": (0, None),
    "mode": (0, -1),
    "sort": (0, -1),
    "argsort": (0, -1),
    "max": (0, None),
    "min": (0, None),
}


@dataclass
class Comparison:
    """The outcome of one sample's comparison and the size of its difference."""

    problem: str | None = None  # None: they match
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst_ratio: float = 0.0  # error over the tolerance allowed there, largest over the elements
    near_float64: int = 0  # elements beyond the tolerance of the CPU's but within it of the float64 result

    def size(self, atol: float, rtol: float) -> dict:
        """The size of the difference with the tolerance it was judged at (a plain dict: it crosses a pipe)."""
        fields = ("max_abs", "max_rel", "worst_ratio", "near_float64")
        return {name: getattr(self, name) for name in fields} | {"atol": atol, "rtol": rtol}


def describe(size: dict) -> str:
    """A :meth:`Comparison.size` in one phrase."""
    text = (
        f"max abs error {size['max_abs']:.3g}, max rel error {size['max_rel']:.3g}, "
        f"{size['worst_ratio']:.3g}x the tolerance (atol {size['atol']:g}, rtol {size['rtol']:g})"
    )
    if size["near_float64"]:
        text += f"; {size['near_float64']} elements beyond it are within it of the float64 result"
    return text


def compare(op, sample, actual, expected, atol: float, rtol: float, precise=None) -> Comparison:
    """Compare the device's ``actual`` with the CPU's ``expected`` for ``sample``.

    ``precise`` computes the sample in float64 on the CPU (None when it cannot).
    """
    actual, expected = _values_at_indices(op, sample, actual), _values_at_indices(op, sample, expected)
    at_indices = None if precise is None else lambda: _values_at_indices(op, sample, precise())
    return compare_values(actual, expected, atol, rtol, at_indices)


def compare_values(actual, expected, atol: float, rtol: float, precise=None) -> Comparison:
    """Compare two results leaf by leaf as :func:`compare` does, with no index of ties to resolve (a gradient's
    leaves); ``precise`` gives the float64 result (None when it cannot)."""
    actual_leaves, actual_spec = tree_flatten(actual)
    expected_leaves, expected_spec = tree_flatten(expected)
    if actual_spec != expected_spec:
        return Comparison(f"the output's structure differs: {actual_spec} against the CPU's {expected_spec}")
    result = Comparison()
    wrong = []  # (leaf index, mask of elements beyond the tolerance)
    for index, (a, e) in enumerate(zip(actual_leaves, expected_leaves, strict=True)):
        problem, beyond = _leaf(a, e, atol, rtol, result)
        if problem:
            result.problem = result.problem or f"output {index}: {problem}"
        elif beyond is not None:
            wrong.append((index, beyond))
    if result.problem or not wrong:
        return result
    reference = None
    if precise is not None and all(
        actual_leaves[i].dtype.is_floating_point or actual_leaves[i].is_complex() for i, _ in wrong
    ):
        reference = _precise_leaves(precise, expected_spec)
    differing = []
    for index, beyond in wrong:
        if reference is not None:
            near = _within(actual_leaves[index], reference[index], atol, rtol) & beyond
            result.near_float64 += int(near.sum())
            beyond = beyond & ~near
        if beyond.any():
            where = f"output {index}: " if len(actual_leaves) > 1 else ""
            differing.append(f"{where}{int(beyond.sum())} of {beyond.numel()} elements differ")
    if differing:
        also = ", and of the float64 result" if reference is not None else ""
        result.problem = ", ".join(differing) + " beyond the tolerance" + also
    return result


def _leaf(actual, expected, atol, rtol, result: Comparison) -> tuple[str | None, torch.Tensor | None]:
    """(what is wrong with the pair, else None; the mask of elements beyond the tolerance, else None)."""
    if not isinstance(actual, torch.Tensor) or not isinstance(expected, torch.Tensor):
        if isinstance(actual, torch.Tensor) or isinstance(expected, torch.Tensor):
            return f"{type(actual).__name__} against the CPU's {type(expected).__name__}", None
        return _plain(actual, expected, atol, rtol), None
    if actual.shape != expected.shape:
        return f"shape {tuple(actual.shape)} against the CPU's {tuple(expected.shape)}", None
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} against the CPU's {expected.dtype}", None
    if actual.layout != torch.strided or expected.layout != torch.strided:
        actual, expected = actual.to_dense(), expected.to_dense()
    if actual.dtype == torch.bool or not (actual.dtype.is_floating_point or actual.is_complex()):
        beyond = actual != expected
        if beyond.any():
            error = (actual.double() - expected.double()).abs() if actual.dtype != torch.bool else beyond.double()
            _sizes(result, error, expected.double().abs(), atol, rtol)
        return None, (beyond if beyond.any() else None)
    a, e = (
        actual.to(torch.complex128 if actual.is_complex() else torch.float64),
        expected.to(torch.complex128 if expected.is_complex() else torch.float64),
    )
    close = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    same = (a == e) | (a.isnan() & e.isnan())
    error = torch.where(same, torch.zeros((), dtype=torch.float64), (a - e).abs())
    _sizes(result, error, e.abs(), atol, rtol)
    return None, (~close if not close.all() else None)


def _sizes(result: Comparison, error, scale, atol, rtol) -> None:
    if not error.numel():
        return
    error = torch.nan_to_num(error, nan=math.inf)  # NaN against a number: no finite error measures it
    relative = torch.where(error == 0, torch.zeros((), dtype=torch.float64), error / scale)
    allowed = atol + rtol * torch.nan_to_num(scale, nan=0.0)
    ratio = torch.where(error == 0, torch.zeros((), dtype=torch.float64), error / allowed)
    result.max_abs = max(result.max_abs, error.max().item())
    result.max_rel = max(result.max_rel, relative.max().item())
    result.worst_ratio = max(result.worst_ratio, ratio.max().item())


def _plain(actual, expected, atol, rtol) -> str | None:
    """Numbers within the tolerance (NaN equal), anything else by equality."""
    numbers = (int, float, complex)
    if isinstance(actual, numbers) and isinstance(expected, numbers) and not isinstance(actual, bool):
        if actual == expected or (actual != actual and expected != expected):
            return None
        return None if abs(actual - expected) <= atol + rtol * abs(expected) else f"{actual!r} != {expected!r}"
    try:
        return None if bool(actual == expected) else f"{actual!r} != {expected!r}"
    except Exception as exc:
        return f"not comparable: {type(exc).__name__}"


def _within(actual, precise, atol, rtol) -> torch.Tensor:
    """Where the device's element is within the tolerance of the float64 result (NaN equal to NaN)."""
    return torch.isclose(actual.to(precise.dtype), precise, rtol=rtol, atol=atol, equal_nan=True)


def _precise_leaves(precise, spec) -> list | None:
    """The float64 result's leaves; None when it cannot be had."""
    try:
        leaves, precise_spec = tree_flatten(precise())
    except Exception:
        return None
    if precise_spec != spec:
        return None
    if not all(isinstance(leaf, torch.Tensor) for leaf in leaves):
        return None
    return [leaf.to(torch.complex128 if leaf.is_complex() else torch.float64) for leaf in leaves]


def _values_at_indices(op, sample, output):
    """``output`` with implementation-defined indices replaced by the input's values at them."""
    if op.name not in TIE_INDICES or _stable(op, sample):
        return output
    position, default = TIE_INDICES[op.name]
    dim = sample.kwargs.get("dim", sample.args[position] if len(sample.args) > position else default)
    if dim is None:
        return output  # a whole-tensor reduction: one value, no index
    source = sample.input
    if op.name == "argsort":
        return _gather(source, output, dim)
    if not isinstance(output, (list, tuple)) or len(output) != 2:
        return output
    values, indices = output
    return [values, _gather(source, indices, dim)]


def _stable(op, sample) -> bool:
    """A stable sort defines the order of ties: its indices are compared as they are."""
    if op.name not in ("sort", "argsort"):
        return False
    return bool(sample.kwargs.get("stable", False))


def _gather(source: torch.Tensor, indices, dim: int):
    if not isinstance(indices, torch.Tensor) or indices.dtype != torch.int64:
        return indices
    source = source.detach().to("cpu")
    if source.dim() == 0:
        return source.reshape(()).expand(indices.shape).clone()
    if indices.dim() < source.dim():  # keepdim=False
        indices = indices.unsqueeze(dim)
        return torch.take_along_dim(source, indices, dim).squeeze(dim)
    return torch.take_along_dim(source, indices, dim)
