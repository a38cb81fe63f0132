"""The operator sweep, with operators whose outcome is known.

On this machine only the CPU exists, so the device side of a comparison is
the CPU too (``compare_with_cpu=True`` forces the comparison). Fake operators
stand in for device behaviour: the CPU reference runs on the sample as it was
made (its tensors carry the "made for the device" mark), the device call on a
copy of it, so an operator can tell the two calls apart and answer like a
device that differs from the CPU.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager

import pytest
import torch

import sweep_workers
from torchclaims.coverage.fallback import DispatcherFallbacks, NoFallback, XlaCounters
from torchclaims.coverage.op_check import check_cell
from torchclaims.coverage.op_list import cells_for
from torchclaims.coverage.op_samples import FOR_DEVICE, for_device, make_samples
from torchclaims.coverage.operators import cell_kinds, cell_outcome, once_outcome, sweep_operators
from torchclaims.coverage.pool import Failure

# Importing op_db (torch.testing._internal.common_utils) freezes the torch.backends
# flags for good, so each test imports it in its own process (tests/conftest.py).
pytestmark = [pytest.mark.processes, pytest.mark.own_process]
CPU = torch.device("cpu")
NO_FALLBACK = NoFallback()  # the default probe of run(); it holds no state


@functools.cache
def op(name: str):
    from torch.testing._internal.common_methods_invocations import op_db

    return {entry.name + (f".{entry.variant_test_name}" if entry.variant_test_name else ""): entry for entry in op_db}[
        name
    ]


def run(op, dtype="float32", probe=NO_FALLBACK, **kwargs):
    settings = dict(atol=1e-3, rtol=1e-3, compare_with_cpu=True, probe=probe, sync=lambda: None, max_samples=None)
    return check_cell(op, dtype, CPU, **(settings | kwargs))


class FakeOp:
    """An OpInfo-like operator with two float32 samples and a scripted device side."""

    name, variant_test_name, decorators = "fake", "", []

    def __init__(self, device_side):
        self.device_side = device_side

    def supported_dtypes(self, device_type):
        return {torch.float32}

    @staticmethod
    def sample_inputs_func(op, device, dtype, requires_grad):
        from torch.testing._internal.opinfo.core import SampleInput

        for n in (3, 4):
            yield SampleInput(torch.arange(n, dtype=dtype, device=device))

    def __call__(self, x):
        return x * 2 if getattr(x, FOR_DEVICE, False) else self.device_side(x)


def test_matching_operator_is_native_on_every_sample():
    answer = run(op("add"))
    assert answer["samples"] and set(answer["samples"]) == {"n"}
    assert cell_outcome(answer)[0] == "N"


def test_tensor_split_index_tensors_stay_on_the_cpu_as_test_compare_cpu_leaves_them():
    samples = make_samples(op("tensor_split"), torch.float32, None)
    with_tensor_indices = [s for s in samples if isinstance(s.args[0], torch.Tensor)]
    assert with_tensor_indices, "op_db's tensor_split samples have index tensors"
    for sample in with_tensor_indices:
        moved = for_device(sample, torch.device("meta"), "tensor_split")
        assert moved.input.device.type == "meta"  # made for the device: moved
        assert moved.args[0].device.type == "cpu"  # made without a device: stays, as PyTorch requires
    assert set(run(op("tensor_split"))["samples"]) == {"n"}


def test_index_puts_boolean_mask_goes_to_the_device_where_a_models_mask_is():
    """op_db makes index_put's mask without a device; on torch_xla the device's own mask path is the one that falls
    back (through aten::nonzero), so the sweep runs that path rather than the CPU mask test_compare_cpu passes."""
    samples = make_samples(op("index_put"), torch.float32, None)
    masked = [s for s in samples if s.args[0][0].dtype == torch.bool]
    assert masked and not any(getattr(s.args[0][0], FOR_DEVICE, False) for s in masked)  # made without a device
    for sample in masked:
        assert for_device(sample, torch.device("meta"), "index_put").args[0][0].device.type == "meta"
    assert set(run(op("index_put"))["samples"]) == {"n"}


def test_as_strided_gets_the_storage_behind_a_partial_view():
    partial_views = op("as_strided.partial_views")
    sample = make_samples(partial_views, torch.float32, 1)[0]
    assert sample.input._base is not None and sample.input.storage_offset() > 0
    moved = for_device(sample, torch.device("meta"), partial_views.name)
    assert moved.input.storage_offset() == sample.input.storage_offset()
    assert moved.input.untyped_storage().nbytes() == sample.input.untyped_storage().nbytes()
    assert set(run(partial_views)["samples"]) == {"n"}  # same storage on both sides: the results agree
    # op_db marks the comparison as an expected failure, so the sweep excludes it (as PyTorch does)
    assert all(c.excluded == "op_db expects test_compare_cpu to fail here" for c in cells_for(partial_views, "xla"))


def test_dropout_like_random_samples_run_but_are_not_compared():
    answer = run(op("nn.functional.alpha_dropout"))
    codes = answer["samples"]
    assert "d" in codes, "training-mode samples draw random numbers"
    assert "n" in codes, "samples with p=0 or training=False are compared"
    code, detail, _ = cell_outcome(answer)
    assert code == "N" and f"{codes.count('d')} samples drew random numbers" in detail


def test_metadata_skips_and_tolerance_overrides_are_honoured():
    (dropout,) = [c for c in cells_for(op("nn.functional.dropout"), "xla") if c.column == "float32"]
    assert dropout.excluded.startswith("op_db skips test_compare_cpu")
    bf16 = [c for c in cells_for(op("add"), "xla") if c.dtype == "bfloat16"][0]
    assert bf16.rtol == pytest.approx(0.016)  # torch.testing's bfloat16 default is looser than 1e-3


def test_every_sample_runs_after_a_mismatch_and_the_worst_decides():
    answer = run(FakeOp(lambda x: x * 2 + (x.numel() == 4)))  # the second sample is off by one
    assert answer["samples"] == "nm"
    code, detail, samples = cell_outcome(answer)
    assert code == "M" and detail.startswith("1 of 2 samples differ; compare: sample 1:")
    assert "atol 0.001" in detail


def test_raises_and_no_kernel_and_cpu_fallback():
    def fails(x):
        raise RuntimeError("lowering failed\nmore")

    def missing(x):
        raise NotImplementedError("Could not run 'aten::fake' with arguments from the 'XLA' backend")

    assert cell_outcome(run(FakeOp(fails)))[:2] == ("R", "run on the device: sample 0: RuntimeError: lowering failed")
    assert cell_outcome(run(FakeOp(missing)))[0] == "K"

    class Falls:
        @contextmanager
        def watch(self):
            yield ["aten::histc"]

    code, detail, samples = cell_outcome(run(FakeOp(lambda x: x * 2), probe=Falls()))
    assert (code, detail, samples) == ("F", "CPU fallback: aten::histc", "ff")


def test_cpu_reference_failure_is_no_reference_not_a_device_outcome():
    class CpuBreaks(FakeOp):
        def __call__(self, x):
            if getattr(x, FOR_DEVICE, False):
                raise ValueError("cpu says no")
            return x * 2

    code, detail, samples = cell_outcome(run(CpuBreaks(None)))
    assert (code, samples) == ("C", "cc") and "ValueError: cpu says no" in detail


def test_dispatcher_probe_names_operators_sent_to_the_backend_fallback():
    x = torch.ones(3)
    with DispatcherFallbacks("CPU").watch() as seen:
        torch.histc(x)
    assert seen == []  # the CPU has its own histc kernel
    with DispatcherFallbacks("ZeroTensor").watch() as seen:  # a key whose histc entry is a backend fallback
        torch.histc(x)
    assert seen == ["aten::histc"]


def test_crash_hang_harness_error_and_time_guard_outcomes():
    assert cell_outcome(Failure("crash", "killed by SIGFPE")) == ("R", "crash: killed by SIGFPE", "s")
    assert cell_outcome({"error": "harness: KeyError: x"})[0] == "E"
    assert cell_outcome(None) == ("T", "", "")


ROLL_DIED = Failure(
    "crash",
    "the worker process was killed by SIGFPE",
    {"sample": 1, "codes": "n", "kinds": ["1/", "1/n", "2/"], "inputs": "input 0 float32; args (-1,)"},
)


def test_a_crash_names_its_signal_and_the_sample_it_died_on_with_that_samples_inputs():
    code, detail, samples = cell_outcome(ROLL_DIED)
    assert code == "R" and samples == "ns."  # what ran before, the sample it died on, what never ran
    assert detail == ("crash: the worker process was killed by SIGFPE on sample 1 of 3 (input 0 float32; args (-1,))")
    assert cell_kinds(ROLL_DIED) == "1/ 1/n 2/"


def test_a_row_op_db_excludes_shows_what_running_it_once_showed_and_a_crash_there_is_a_crash_cell():
    (excluded,) = [c.excluded for c in cells_for(op("roll"), "xla") if c.column == "float32"]
    assert excluded == "op_db: onlyNativeDeviceTypes (not run on xla)"  # torch_xla 2.9.0 dies on it all the same
    code, detail = once_outcome(excluded, ROLL_DIED)
    assert code == "R"
    assert detail.startswith(excluded + "; ran once: crash: the worker process was killed by SIGFPE on sample 1")
    raised = {"samples": "r", "problems": {"r": "run on the device: sample 0: RuntimeError: no"}, "fallbacks": []}
    assert once_outcome(excluded, raised) == (
        "X",
        excluded + "; ran once, values not compared: raises: run on the device: sample 0: RuntimeError: no",
    )
    fell_back = {"samples": "f", "problems": {}, "fallbacks": ["aten::nonzero"]}
    assert once_outcome(excluded, fell_back) == (
        "X",
        excluded + "; ran once, values not compared: ran: CPU fallback: aten::nonzero",
    )
    assert once_outcome(excluded, None) == ("X", excluded)  # not reached: op_db's reason alone


def test_a_sweep_runs_each_excluded_cell_once_and_a_worker_killed_there_makes_a_crash_cell():
    sweep = sweep_operators(
        "cpu",
        workers=1,
        dtypes=("float32",),
        only=["add", "nn.functional.dropout", "as_strided.partial_views"],
        worker=sweep_workers.serve_dying_on_device_dropout,
    )
    float32 = sweep.table.column("float32")
    cell = {row: (float32.codes[i], float32.details.get(i, "")) for i, row in enumerate(sweep.table.rows)}
    code, detail = cell["nn.functional.dropout"]
    assert code == "R"
    assert detail.startswith("op_db skips test_compare_cpu")
    assert "; ran once: crash: the worker process was killed by SIGFPE on sample 0 of 1 (input " in detail
    code, detail = cell["as_strided.partial_views"]
    assert code == "X" and detail == (
        "op_db expects test_compare_cpu to fail here; ran once, values not compared: ran on the device"
    )
    assert cell["add"][0] == "N"
    assert sweep.replaced and "SIGFPE" in sweep.replaced[0]


def test_each_cell_records_the_argument_kinds_of_its_samples():
    answer = run(op("cumsum"))
    assert len(answer["kinds"]) == len(answer["samples"])
    assert any(token.startswith("0/") for token in answer["kinds"])  # op_db's cumsum has a 0-dim sample
    assert run(op("sum"), max_samples=3)["kinds"] == ["0/", "0/k", "0/n"]  # keepdim=True, then a negative dim
    index_put = run(op("index_put"))["kinds"]
    assert index_put == ["212/", "211/", "212/a", "211/a"]  # input, indices, values; then accumulate=True


class FakeXlaMetrics:
    """torch_xla.debug.metrics as torch_xla keeps it after an index_put whose boolean mask went through nonzero:
    a counter named after the operator that fell back, whatever executed_fallback_ops() lists."""

    def __init__(self, counters, listed=()):
        self.counters, self.listed = dict(counters), list(listed)

    def clear_counters(self):
        self.counters = {name: 0 for name in self.counters}

    def counter_names(self):
        return list(self.counters)

    def counter_value(self, name):
        return self.counters.get(name)

    def executed_fallback_ops(self):
        return [name for name in self.listed if self.counters.get(name)]


def test_xla_fallbacks_come_from_the_counters_of_every_operator_the_call_reached(monkeypatch):
    import sys
    import types

    metrics = FakeXlaMetrics({"aten::nonzero": 0, "aten::_local_scalar_dense": 0, "xla::index_put_": 0})
    xla = types.ModuleType("torch_xla")
    debug = types.ModuleType("torch_xla.debug")
    debug.metrics = metrics
    xla.debug = debug
    monkeypatch.setitem(sys.modules, "torch_xla", xla)
    monkeypatch.setitem(sys.modules, "torch_xla.debug", debug)
    monkeypatch.setitem(sys.modules, "torch_xla.debug.metrics", metrics)
    probe = XlaCounters("xla:0")
    with probe.watch() as seen:
        metrics.counters.update({"aten::nonzero": 1, "aten::_local_scalar_dense": 2, "xla::index_put_": 1})
    assert seen == ["aten::nonzero"]  # lowered ops (xla::) and reads to the host do not count
    code, detail, _ = cell_outcome(run(op("index_put"), probe=SeesNonzero(), max_samples=2))
    assert (code, detail) == ("F", "CPU fallback: aten::nonzero")


class SeesNonzero:
    """A probe whose counters show aten::nonzero fallen back during every call."""

    @contextmanager
    def watch(self):
        yield ["aten::nonzero"]


def test_sweep_lists_every_op_db_entry_and_marks_the_rest_not_reached_after_the_guard():
    sweep = sweep_operators("cpu", guard_s=0, only=["add", "nn.functional.dropout", "as_strided.partial_views"])
    table = sweep.table
    assert table.rows == ["add", "as_strided.partial_views", "nn.functional.dropout"] or set(table.rows) == {
        "add",
        "as_strided.partial_views",
        "nn.functional.dropout",
    }
    add = table.rows.index("add")
    assert table.column("float32").codes[add] == "T"
    assert "time guard of 0 s" in table.column("float32").details[add]
    assert {table.column("float32").codes[table.rows.index(r)] for r in table.rows if r != "add"} == {"X"}


SDPA = "nn.functional.scaled_dot_product_attention"


def test_sdpa_is_compared_although_op_db_skips_it_for_dropouts_randomness_which_the_sweep_detects():
    (cell,) = [c for c in cells_for(op(SDPA), "xla") if c.column == "float32"]
    assert not cell.excluded and "non-deterministic when dropout_p > 0" in cell.note
    answer = run(op(SDPA), kernels=True)
    assert set(answer["samples"]) <= {"n", "d"} and "n" in answer["samples"]  # dropout samples: not compared
    # the kernels the device call dispatched: on the CPU stand-in, the CPU's own
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in answer["kernels"]
    assert "aten::_to_copy" not in answer["kernels"]  # the copy of the result back to the CPU is not SDPA's
    assert "kernels" not in run(op("add"), max_samples=1) or not run(op("add"), max_samples=1)["kernels"]


def test_sweep_in_workers_gives_the_known_outcomes_on_the_cpu():
    rows = ["add", "tensor_split", "nn.functional.alpha_dropout", SDPA]
    sweep = sweep_operators("cpu", workers=2, only=rows)
    float32 = sweep.table.column("float32")
    codes = {row: float32.codes[i] for i, row in enumerate(sweep.table.rows)}
    assert codes == {"add": "N", "tensor_split": "N", "nn.functional.alpha_dropout": "N", SDPA: "N"}
    sdpa = sweep.table.rows.index(SDPA)
    assert float32.details[sdpa].startswith("op_db skips it in test_compare_cpu as non-deterministic")
    assert list(sweep.table.kernels) == [sdpa]  # the one row whose device kernels are watched
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in sweep.table.kernels[sdpa]
    assert sweep.table.overloads.measured >= 3 and sweep.table.overloads.relevant > 1000
    assert sweep.samples_run > 20 and sweep.worker_starts == 2
    # each row names the ATen operators its samples dispatched, for torchclaims check's exact matching
    operators = {sweep.table.rows[i]: names for i, names in sweep.table.operators.items()}
    assert operators["add"] == ["aten::add.Tensor"]
    assert "aten::slice.Tensor" in operators["tensor_split"]  # what tensor_split decomposes into on the CPU


def test_on_mps_the_tolerances_of_pytorchs_own_mps_comparison_with_the_cpu_count_too():
    """op_db gives bfloat16 addbmm atol 0.2, rtol 0.6 for test_mps.py's TestConsistency.test_output_match."""
    (mps,) = [c for c in cells_for(op("addbmm"), "mps") if c.dtype == "bfloat16"]
    (cuda,) = [c for c in cells_for(op("addbmm"), "cuda") if c.dtype == "bfloat16"]
    assert (mps.atol, mps.rtol) == (pytest.approx(0.2), pytest.approx(0.6)) and not mps.excluded
    assert (cuda.atol, cuda.rtol) == (pytest.approx(1e-3), pytest.approx(0.016))  # test_compare_cpu's and bf16's


def test_the_cpu_reference_is_not_computed_under_a_dispatch_mode():
    """Under a TorchDispatchMode the CPU's complex pinverse gives other values (torch 2.13): the reference
    comes from a plain call, so the CPU compared with itself matches exactly."""
    answer = run(op("pinverse"), "complex64", max_samples=1)
    assert answer["samples"] == "n" and "difference" not in answer
    assert "aten::linalg_pinv.atol_rtol_tensor" in answer["operators"] or answer["operators"]
