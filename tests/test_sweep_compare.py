"""The operator sweep's comparison with the CPU, against stand-in devices whose answer is known.

As in tests/test_sweep_operators.py, the device side is the CPU too: a scripted
operator tells the device call (on a copy of the sample) from the CPU reference
(on the sample as made, whose tensors carry the "made for the device" mark)
and answers like a device that differs from the CPU in a known way.
"""

from __future__ import annotations

import pytest
import torch

from torchclaims.coverage.op_check import check_cell
from torchclaims.coverage.op_samples import FOR_DEVICE
from torchclaims.coverage.operators import cell_outcome

# Importing OpInfo's SampleInput (torch.testing._internal) freezes the torch.backends
# flags for good, so each test imports it in its own process (tests/conftest.py).
pytestmark = [pytest.mark.processes, pytest.mark.own_process]
CPU = torch.device("cpu")
BF16 = dict(atol=1e-3, rtol=0.016)  # what op_list gives a bfloat16 cell: torch.testing's rtol for bfloat16


class ScriptedOp:
    """An OpInfo-like operator named ``name``: the CPU computes ``cpu``, the device ``device``."""

    variant_test_name, decorators = "", []

    def __init__(self, name, samples, cpu, device):
        self.name, self.samples, self.cpu, self.device = name, samples, cpu, device

    def supported_dtypes(self, device_type):
        return {torch.float32, torch.bfloat16, torch.int64}

    @staticmethod
    def sample_inputs_func(op, device, dtype, requires_grad):
        from torch.testing._internal.opinfo.core import SampleInput

        for make, args, kwargs in op.samples:
            yield SampleInput(make(dtype, device), args=args, kwargs=kwargs)

    def __call__(self, x, *args, **kwargs):
        side = self.cpu if getattr(x, FOR_DEVICE, False) else self.device
        return side(x, *args, **kwargs)


def run(op, dtype="float32", atol=1e-3, rtol=1e-3):
    settings = dict(compare_with_cpu=True, probe=_NoFallback(), sync=lambda: None, max_samples=None)
    return check_cell(op, dtype, CPU, atol=atol, rtol=rtol, **settings)


class _NoFallback:
    from contextlib import contextmanager

    @contextmanager
    def watch(self):
        yield []


def ties(dtype, device):
    return torch.tensor([[1, 3, 1, 2], [5, 4, 5, 4]], dtype=dtype, device=device)


def other_tie(x, k, dim):
    """kthvalue as a device that picks the other of two equal elements."""
    values, indices = torch.kthvalue(x, k, dim)
    flipped = torch.where(
        x.gather(dim, (2 - indices).clamp(0).unsqueeze(dim)).squeeze(dim) == values, 2 - indices, indices
    )
    return torch.return_types.kthvalue((values, flipped))


def test_an_index_among_equal_values_matches_and_one_pointing_at_another_value_does_not():
    op = ScriptedOp("kthvalue", [(ties, (1, 1), {})], cpu=torch.kthvalue, device=other_tie)
    device_values, device_indices = other_tie(ties(torch.int64, "cpu"), 1, 1)
    assert device_indices.tolist() != torch.kthvalue(ties(torch.int64, "cpu"), 1, 1).indices.tolist()
    assert run(op, "int64")["samples"] == "n"  # another index, the same value: PyTorch's tests accept it

    def wrong_index(x, k, dim):
        values, indices = torch.kthvalue(x, k, dim)
        return torch.return_types.kthvalue((values, (indices + 1) % x.shape[dim]))

    answer = run(ScriptedOp("kthvalue", [(ties, (1, 1), {})], cpu=torch.kthvalue, device=wrong_index), "int64")
    assert answer["samples"] == "m"
    assert answer["problems"]["m"].startswith("compare: sample 0: output 1: 2 of 2 elements differ")


def cancelling(dtype, device):
    """Terms whose sum cancels: rounding each partial sum to bfloat16 loses what the exact sum keeps."""
    torch.manual_seed(0)
    return (torch.randn(6, 64, device=device) * 8).to(dtype)


def summed_in_dtype(x):  # the CPU: rounds every partial sum to the dtype
    total = torch.zeros(x.shape[0], dtype=x.dtype)
    for column in x.unbind(1):
        total = total + column
    return total


def summed_exactly(x):  # the device: sums in float64, rounds once
    return x.double().sum(1).to(x.dtype)


def test_a_bfloat16_value_rounded_once_from_the_exact_sum_matches_the_cpu_however_far_its_sum_drifted():
    x = cancelling(torch.bfloat16, "cpu")
    drift = (summed_in_dtype(x).double() - summed_exactly(x).double()).abs()
    allowed = BF16["atol"] + BF16["rtol"] * summed_in_dtype(x).double().abs()
    assert (drift > allowed).any(), "the stand-in must differ beyond the bfloat16 tolerance"
    op = ScriptedOp("sum_like", [(cancelling, (), {})], cpu=summed_in_dtype, device=summed_exactly)
    answer = run(op, "bfloat16", **BF16)
    assert answer["samples"] == "n"  # the device is the more accurate side
    assert answer["difference"]["near_float64"] >= 1 and answer["difference"]["max_abs"] > 0
    code, detail, _ = cell_outcome(answer)
    assert code == "N" and "within it of the float64 result" in detail

    within = ScriptedOp(
        "scale", [(cancelling, (), {})], cpu=lambda x: x * 1.01, device=lambda x: (x.float() * 1.01).to(x.dtype)
    )
    assert run(within, "bfloat16", **BF16)["samples"] == "n"  # one bfloat16 rounding apart: within its tolerance


def test_a_device_merely_nearer_float64_than_the_cpu_but_not_within_the_tolerance_of_it_is_a_mismatch():
    def halfway(x):  # halfway between the CPU's drifted sum and the exact one: nearer, still wrong
        return ((summed_in_dtype(x).double() + x.double().sum(1)) / 2).to(x.dtype)

    x = cancelling(torch.bfloat16, "cpu")
    exact = x.double().sum(1)
    off = (halfway(x).double() - exact).abs() > BF16["atol"] + BF16["rtol"] * exact.abs()
    assert off.any(), "the stand-in must stay beyond the tolerance of the float64 result somewhere"
    op = ScriptedOp("sum_like", [(cancelling, (), {})], cpu=summed_in_dtype, device=halfway)
    answer = run(op, "bfloat16", **BF16)
    assert answer["samples"] == "m" and "and of the float64 result" in answer["problems"]["m"]


def test_a_wrong_value_is_a_mismatch_with_the_size_of_its_difference():
    def arange(dtype, device):
        return torch.arange(1, 5, dtype=dtype, device=device)

    def off(x):
        out = x * 2
        out[3] += 0.5  # 8 -> 8.5
        return out

    op = ScriptedOp("scale", [(arange, (), {})], cpu=lambda x: x * 2, device=off)
    answer = run(op)
    assert answer["samples"] == "m"
    assert answer["difference"]["max_abs"] == pytest.approx(0.5)
    assert answer["difference"]["max_rel"] == pytest.approx(0.5 / 8)
    assert answer["difference"]["worst_ratio"] == pytest.approx(0.5 / (1e-3 + 1e-3 * 8))
    problem = answer["problems"]["m"]
    assert "1 of 4 elements differ" in problem and "max abs error 0.5, max rel error 0.0625" in problem
    assert "(atol 0.001, rtol 0.001)" in problem


def test_nan_on_both_sides_is_equal_and_nan_on_one_side_is_not():
    def with_nan(dtype, device):
        return torch.tensor([1.0, float("nan"), 3.0], dtype=dtype, device=device)

    same = ScriptedOp("copy", [(with_nan, (), {})], cpu=lambda x: x.clone(), device=lambda x: x.clone())
    assert run(same)["samples"] == "n"
    one_side = ScriptedOp("copy", [(with_nan, (), {})], cpu=lambda x: x.clone(), device=torch.nan_to_num)
    assert run(one_side)["samples"] == "m"


def test_each_problem_names_the_stage_it_arose_at(monkeypatch):
    from torchclaims.coverage import op_check

    def simple(dtype, device):
        return torch.ones(3, dtype=dtype, device=device)

    def raises(*args, **kwargs):
        raise RuntimeError("no")

    def problem(cpu, device, code):
        return run(ScriptedOp("a", [(simple, (), {})], cpu, device))["problems"][code]

    assert problem(torch.clone, raises, "r").startswith("run on the device: sample 0: RuntimeError: no")
    assert problem(raises, torch.clone, "c").startswith("CPU reference: sample 0: RuntimeError: no")
    assert problem(torch.clone, lambda x: x + 1, "m").startswith("compare: sample 0: 3 of 3 elements differ")
    monkeypatch.setattr(op_check, "for_device", raises)  # the sample cannot be moved to the device
    assert problem(torch.clone, torch.clone, "r").startswith("build the sample: sample 0: RuntimeError: no")


def test_the_reference_copy_of_a_sample_keeps_its_values_and_the_layout_of_its_views():
    from torch.testing._internal.opinfo.core import SampleInput

    from torchclaims.coverage.op_samples import twin

    base = torch.arange(24.0).reshape(4, 6)
    complex_base = torch.randn(3, 3, dtype=torch.complex64)
    tensors = [base.t()[1:], complex_base.conj(), complex_base.real, base.view(torch.int32)]
    for tensor in tensors:
        setattr(tensor, FOR_DEVICE, True)
    copied = twin(SampleInput(tensors[0], args=tuple(tensors[1:])))
    for original, copy in zip(tensors, [copied.input, *copied.args], strict=True):
        assert torch.equal(copy.resolve_conj(), original.resolve_conj()) and getattr(copy, FOR_DEVICE, False)
        assert copy.untyped_storage().data_ptr() != original.untyped_storage().data_ptr()
    view = copied.input  # a view keeps its strides and offset (ravel, say, dispatches what it did)
    assert (view.stride(), view.storage_offset()) == (tensors[0].stride(), tensors[0].storage_offset())
