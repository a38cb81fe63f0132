"""The operator sweep's backward columns: each differentiable operator's gradients on the device against the CPU's.

As in tests/test_sweep_operators.py, the CPU stands in for the device, and fake operators tell the two calls
apart by the "made for the device" mark, which the CPU reference's tensors carry and the device's copies do not:
here a custom autograd function whose backward answers like a device that differs from the CPU.
"""

from __future__ import annotations

import functools
import sys
import types

import pytest
import torch

import sweep_workers
from torchclaims.coverage.fallback import NoFallback, XlaCounters
from torchclaims.coverage.op_backward import BACKWARD, FORWARD_FOR_GRAD
from torchclaims.coverage.op_check import check_cell
from torchclaims.coverage.op_list import cells_for
from torchclaims.coverage.op_samples import FOR_DEVICE
from torchclaims.coverage.operators import cell_outcome, sweep_operators
from torchclaims.coverage.pool import Failure

# op_db freezes torch.backends flags for good: each test in its own process (tests/conftest.py)
pytestmark = [pytest.mark.processes, pytest.mark.own_process]
CPU = torch.device("cpu")


@functools.cache
def op(name: str):
    from torch.testing._internal.common_methods_invocations import op_db

    return {entry.name + (f".{entry.variant_test_name}" if entry.variant_test_name else ""): entry for entry in op_db}[
        name
    ]


def run(op, backward=True, probe=None, **kwargs):
    settings = dict(atol=1e-3, rtol=1e-3, compare_with_cpu=True, sync=lambda: None, max_samples=None)
    return check_cell(op, "float32", CPU, probe=probe or NoFallback(), backward=backward, **(settings | kwargs))


def on_device(x) -> bool:
    return not getattr(x, FOR_DEVICE, False)


class Doubling(torch.autograd.Function):
    """y = 2x, whose backward the test scripts per side: ``device_forward`` and ``device_backward`` run where
    the call is the device's."""

    device_forward = device_backward = staticmethod(lambda: None)
    gradient_factor = 1.0  # the device's gradient, relative to the right one

    @staticmethod
    def forward(ctx, x):
        ctx.on_device = on_device(x)
        if ctx.on_device:
            Doubling.device_forward()
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        if ctx.on_device:
            Doubling.device_backward()
            return grad * 2 * Doubling.gradient_factor
        return grad * 2


class FakeOp:
    """An OpInfo-like differentiable operator with two float32 samples (of 6 and 8 elements)."""

    name, variant_test_name, decorators, supports_autograd = "fake", "", [], True

    def __init__(self, forward_fails=lambda x: False):
        self.forward_fails = forward_fails

    @staticmethod
    def sample_inputs_func(op, device, dtype, requires_grad):
        from torch.testing._internal.opinfo.core import SampleInput

        for n in (6, 8):
            yield SampleInput(torch.linspace(-1, 1, n, dtype=dtype, device=device, requires_grad=requires_grad))

    def __call__(self, x):
        if on_device(x) and self.forward_fails(x):
            raise RuntimeError("no lowering for this shape")
        return Doubling.apply(x)


@pytest.fixture
def scripted():
    """Doubling's device side restored after each test."""
    yield Doubling
    Doubling.device_forward = Doubling.device_backward = staticmethod(lambda: None)
    Doubling.gradient_factor = 1.0


def test_a_device_whose_backward_kernel_is_off_by_one_percent_mismatches_in_the_backward_only(scripted):
    assert cell_outcome(run(FakeOp()))[0] == "N"  # the right gradients match
    scripted.gradient_factor = 1.01
    assert cell_outcome(run(FakeOp(), backward=False))[0] == "N"  # the forward result is right
    answer = run(FakeOp())
    code, detail, samples = cell_outcome(answer)
    assert (code, samples) == ("M", "mm")
    assert detail.startswith("2 of 2 samples differ; compare: sample 0: gradients: ")
    assert answer["difference"]["max_rel"] == pytest.approx(0.01, rel=1e-3)  # the known amount, measured
    assert "max rel error 0.01" in detail and "atol 0.001, rtol 0.001" in detail


def test_a_backward_that_falls_back_through_a_counter_is_a_fallback_in_its_own_operator(scripted, monkeypatch):
    """torch_xla's counters as a backward kernel that falls back leaves them: the forward's counter is not the
    backward cell's, and the backward's is not the forward cell's."""
    metrics = types.SimpleNamespace(counters={})
    metrics.clear_counters = lambda: metrics.counters.clear()
    metrics.counter_names = lambda: list(metrics.counters)
    metrics.counter_value = metrics.counters.get
    metrics.executed_fallback_ops = lambda: []
    xla = types.ModuleType("torch_xla")
    xla.debug = types.SimpleNamespace(metrics=metrics)
    for name, module in (("torch_xla", xla), ("torch_xla.debug", xla.debug), ("torch_xla.debug.metrics", metrics)):
        monkeypatch.setitem(sys.modules, name, module)
    scripted.device_forward = staticmethod(lambda: metrics.counters.update({"aten::fake": 1}))
    scripted.device_backward = staticmethod(lambda: metrics.counters.update({"aten::fake_backward": 1}))
    probe = XlaCounters("xla:0")
    assert cell_outcome(run(FakeOp(), probe=probe)) == ("F", "CPU fallback: aten::fake_backward", "ff")
    assert cell_outcome(run(FakeOp(), backward=False, probe=probe)) == ("F", "CPU fallback: aten::fake", "ff")


def test_a_forward_that_fails_on_the_device_leaves_the_backward_not_run_never_native(scripted):
    code, detail, samples = cell_outcome(run(FakeOp(forward_fails=lambda x: True)))
    assert (code, samples) == ("W", "xx")
    assert detail.startswith(f"{FORWARD_FOR_GRAD}: sample 0: RuntimeError: no lowering for this shape")
    partly = FakeOp(forward_fails=lambda x: x.numel() == 8)
    assert cell_outcome(run(partly))[::2] == ("W", "nx")  # one sample's gradients matched: still not native
    scripted.gradient_factor = 1.01
    assert cell_outcome(run(partly))[::2] == ("M", "mx")  # wrong gradients outrank a sample not run


def test_a_worker_killed_in_the_forward_its_gradients_need_is_not_run_and_in_the_backward_raises():
    during = {"sample": 1, "codes": "n", "kinds": ["1/", "1/"], "inputs": "input 8 float32"}
    died = "the worker process was killed by SIGFPE"
    forward = Failure("crash", died, during | {"stage": FORWARD_FOR_GRAD})
    assert cell_outcome(forward) == ("W", f"{FORWARD_FOR_GRAD}: crash: {died} on sample 1 of 2 (input 8 float32)", "nx")
    backward = Failure("crash", died, during | {"stage": BACKWARD})
    assert cell_outcome(backward) == ("R", f"crash: {died} on sample 1 of 2 (input 8 float32)", "ns")


def test_backward_cells_for_autograd_operators_in_float32_excluded_where_the_forward_is():
    gelu = [c.column for c in cells_for(op("nn.functional.gelu"), "xla")]
    assert gelu[:2] == ["float32", "float32 backward"] and "bfloat16 backward" not in gelu
    assert not op("argmax").supports_autograd
    assert all(not c.backward for c in cells_for(op("argmax"), "xla"))
    dropout = {c.column: c for c in cells_for(op("nn.functional.dropout"), "xla")}
    assert dropout["float32 backward"].excluded == dropout["float32"].excluded != ""
    assert dropout["float32 backward"].rtol == dropout["float32"].rtol


@pytest.mark.parametrize(
    "row, kernel",
    [
        ("nn.functional.conv2d", "aten::convolution_backward"),
        ("nn.functional.layer_norm", "aten::native_layer_norm_backward"),
        ("nn.functional.gelu", "aten::gelu_backward"),
        ("nn.functional.interpolate.bilinear", "aten::upsample_bilinear2d_backward"),
    ],
)
def test_the_backward_kernels_a_model_trains_with_are_compared_and_recorded(row, kernel):
    answer = run(op(row), max_samples=3)
    assert set(answer["samples"]) == {"n"}, answer["problems"]
    assert kernel in answer["operators"]


def test_accumulating_index_put_and_scatter_add_compare_their_gradients():
    index_put = run(op("index_put"))
    assert index_put["kinds"][-1].endswith("/a") and set(index_put["samples"]) == {"n"}  # accumulate=True too
    assert "aten::index.Tensor" in index_put["operators"]  # the gradient of the values gathers them
    assert set(run(op("scatter_add"), max_samples=3)["samples"]) == {"n"}


def test_a_sweep_in_workers_fills_the_backward_columns_and_a_backward_crash_costs_only_its_cell():
    sweep = sweep_operators(
        "cpu",
        workers=1,
        dtypes=("float32",),
        only=["nn.functional.gelu", "nn.functional.layer_norm", "argmax"],
        worker=sweep_workers.serve_dying_in_device_gelu_backward,
    )
    table = sweep.table
    assert [c.name for c in table.columns] == ["float32", "float32 backward"]
    forward, backward = table.column("float32"), table.column("float32 backward")
    gelu, layer_norm, argmax = (
        table.rows.index(r) for r in ("nn.functional.gelu", "nn.functional.layer_norm", "argmax")
    )
    assert forward.codes[gelu] == "N"  # the forward never reaches the dying backward
    assert backward.codes[gelu] == "R"
    assert backward.details[gelu].startswith("crash: the worker process was killed by SIGFPE on sample 0 of ")
    assert backward.codes[layer_norm] == "N" and backward.codes[argmax] == "."  # argmax has no gradient
    assert table.backward_operators[layer_norm] == ["aten::native_layer_norm_backward"]
    assert "aten::native_layer_norm_backward" not in table.operators[layer_norm]  # the forward's are apart
    assert "aten::native_layer_norm_backward" not in table.overloads.unknown  # the denominator counts it
