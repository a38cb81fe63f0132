"""One operator × dtype on the device against the CPU, sample by sample.

This is PyTorch's ``TestCommon.test_compare_cpu`` made to record instead of
stop: every sample runs (a raise or a mismatch does not hide the samples
after it), and each gets a code:

``n`` ran on the device and matched the CPU; ``f`` matched, but an operator ran
through the CPU fallback; ``m`` differs from the CPU beyond the tolerance;
``r`` raised on the device; ``k`` raised ``NotImplementedError`` (no kernel);
``d`` drew random numbers, so it ran but its values were not compared; ``c``
the CPU reference itself raised; ``.`` not run (the device was left unusable
by an earlier sample).

For each sample the device call comes first (inside the fallback probe, up to
and including the copy of the result to the CPU), then the CPU reference on
the untouched CPU sample (a plain call on an exact copy of it; the operators
it dispatches and whether it draws random numbers come from a watched call on
the sample itself); outputs
go through the sample's own ``output_process_fn_grad`` (which makes, say, an
SVD's signs comparable) and are compared by :func:`.op_compare.compare` (the
cell's tolerance, values rather than the indices of ties, NaN equal, an
element right by the float64 result within the tolerance accepted). On the
reference backend itself (``compare=False``) only the watched call runs. The
answer also names every ATen operator the CPU reference calls dispatched
(``operators``), the stage each problem arose at (building the sample,
running it on the device, the CPU reference, comparing), the size of the
largest difference over the compared samples (``difference``) and each
sample's argument kinds (``kinds``, :mod:`.op_arguments`). Before each
sample, ``report`` (when given) hears which sample is about to run, the codes
so far and what its inputs are: a device runtime that kills the process
leaves nothing else to tell the sweep what it died on. With ``kernels``, each
sample that ran on the device runs there once more under a dispatch mode, and
the answer names the ATen operators the device dispatched (``kernels``: the
backend's own kernel names, say ``_scaled_dot_product_flash_attention`` on
CUDA where the CPU dispatches ``..._for_cpu``).

The same loop runs a cell's backward pass (``backward=True``): each sample's
gradients instead of its result, by :class:`.op_backward.BackwardPass`, with
one more code, ``x``: not run, the forward call it needs failed on the device.
"""

from __future__ import annotations

import gc
import time

import torch

from ..evidence.coverage_table import clip
from .op_arguments import describe as describe_inputs
from .op_arguments import kinds
from .op_compare import Comparison, compare, describe
from .op_samples import DrawsRandom, call, for_device, in_float64, make_samples, to_cpu, twin

PROBLEM = 160  # characters kept of an exception or a mismatch description
# The stage a sample failed at, named first in its problem.
BUILD, DEVICE, REFERENCE, COMPARE = "build the sample", "run on the device", "CPU reference", "compare"


def first_line(exc: BaseException) -> str:
    """The exception's class and first line (and the next, when the first only introduces it)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = " ".join(lines[:2]) if len(lines) > 1 and lines[0].endswith(":") else (lines[0] if lines else "")
    return clip(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, PROBLEM)


def device_usable(sync, probe) -> str | None:
    """After a failure: collect what the failed call left behind, then synchronise.

    A failed call can leave device tensors in reference cycles (the traceback's
    frames), or a failed graph queued on a lazy device; a later synchronisation
    would execute it and fail again, blaming the next sample. So the garbage is
    collected, and if synchronising still fails the queued work is discarded.
    None when the device is usable afterwards, else why not.
    """
    gc.collect()
    try:
        sync()
        return None
    except Exception:
        probe.discard_pending()
    try:
        sync()
    except Exception as exc:
        return f"synchronising after the failure raised {first_line(exc)}"
    return None


class SamplePass:
    """How :func:`check_cell` runs one sample on the device and judges it against the CPU: ``first_stage``, the
    stage the device call starts in, and ``on_device``, ``device_kernels``, ``cpu_operators``,
    ``failure_code`` and ``judge``."""

    first_stage = DEVICE

    def __init__(self, op, probe, sync, atol: float, rtol: float, compare_with_cpu: bool):
        self.op, self.probe, self.sync = op, probe, sync
        self.atol, self.rtol, self.compare_with_cpu = atol, rtol, compare_with_cpu


class ForwardPass(SamplePass):
    """The forward call of a sample on the device, and its CPU reference: test_compare_cpu's one pass."""

    def on_device(self, moved, entered) -> tuple:
        """(the result on the CPU, the operators that ran through the CPU fallback)."""
        with self.probe.watch() as seen:
            actual = to_cpu(call(self.op, moved))
            self.sync()
        return actual, seen

    def device_kernels(self, moved) -> set[str]:
        # unwatched: the copy back is not the operator's, but a lazy device runs the call there
        return dispatched(lambda: call(self.op, moved), then=to_cpu)

    def cpu_operators(self, sample) -> set[str]:
        return dispatched(lambda: call(self.op, sample))

    def failure_code(self, stage: str, exc: Exception) -> str:
        return "k" if isinstance(exc, NotImplementedError) else "r"

    def judge(self, sample, actual, fallbacks, problems: dict, index: int, operators: set):
        return _judge(
            self.op, sample, actual, fallbacks, self.atol, self.rtol, self.compare_with_cpu, problems, index, operators
        )


def check_cell(
    op,
    dtype: str,
    device: torch.device,
    *,
    atol: float,
    rtol: float,
    compare_with_cpu: bool,
    probe,
    sync,
    max_samples: int | None,
    report=None,
    kernels: bool = False,
    backward: bool = False,
) -> dict:
    """Run one cell; a plain dict answer (it crosses a pipe), see the module docstring. With ``backward``, each
    sample's gradients rather than its forward result (:mod:`.op_backward`)."""
    if backward:
        from .op_backward import BackwardPass  # it builds on this module's stages and helpers

        steps = BackwardPass(op, probe, sync, atol, rtol, compare_with_cpu)
    else:
        steps = ForwardPass(op, probe, sync, atol, rtol, compare_with_cpu)
    timing = {"samples_s": 0.0, "device_s": 0.0, "cpu_s": 0.0}
    answer = {"samples": "", "problems": {}, "fallbacks": [], "operators": [], "timing": timing}
    problems, fallbacks, operators, difference = answer["problems"], set(), set(), Comparison()
    began = time.perf_counter()
    try:
        samples = make_samples(op, getattr(torch, dtype), max_samples, requires_grad=backward)
    except Exception as exc:
        problems["c"] = f"{BUILD}: {first_line(exc)}"
        return answer
    timing["samples_s"] = time.perf_counter() - began
    answer["kinds"] = [kinds(sample) for sample in samples]
    codes, stage, progress = [], BUILD, {}

    def entered(now: str) -> None:
        """The sample's device call reached stage ``now``: the sweep hears it, since a crash leaves nothing else."""
        nonlocal stage
        stage = now
        if report is not None:
            report(progress | {"stage": now})

    for index, sample in enumerate(samples):
        # what the sweep hears before each sample: a crash names the sample, its inputs and the stage it ran
        progress = {"sample": index, "codes": "".join(codes), "kinds": answer["kinds"], "stage": steps.first_stage}
        if report is not None:
            progress["inputs"] = describe_inputs(sample)
            report(progress)
        began = time.perf_counter()
        moved = failure = None
        stage = BUILD
        try:
            moved = for_device(sample, device, op.name)
            stage = steps.first_stage
            actual, seen = steps.on_device(moved, entered)
            fallbacks.update(seen)
            if kernels:
                answer.setdefault("kernels", set()).update(steps.device_kernels(moved))
        except Exception as exc:
            failure = (steps.failure_code(stage, exc), f"{stage}: sample {index}: {first_line(exc)}")
        timing["device_s"] += time.perf_counter() - began
        if failure is not None:
            codes.append(failure[0])
            problems.setdefault(*failure)
            del moved  # outside the except block, so the traceback's frames are gone too
            operators.update(steps.cpu_operators(sample))
            unusable = device_usable(sync, probe)
            if unusable:
                answer["restart"] = unusable
                codes.extend("." * (len(samples) - index - 1))
                break
            continue
        began = time.perf_counter()
        code, result = steps.judge(sample, actual, seen, problems, index, operators)
        codes.append(code)
        if result is not None:
            _widen(difference, result)
        timing["cpu_s"] += time.perf_counter() - began
    if not samples:
        problems["c"] = f"{BUILD}: OpInfo has no sample for this dtype"
    if difference.max_abs or difference.near_float64:
        answer["difference"] = difference.size(atol, rtol)
    answer["samples"] = "".join(codes)
    answer["fallbacks"] = sorted(fallbacks)
    answer["operators"] = sorted(operators)
    answer["kernels"] = sorted(answer.get("kernels", ()))
    return answer


def dispatched(watched, then=None) -> set[str]:
    """The ATen operators ``watched()`` dispatches, under a dispatch mode of its own (so that a compared call
    never runs under one, which can change values); ``then(result)`` runs unwatched. What dispatched before a
    raise is still named: the call that mattered already ran (or failed) without the mode."""
    watch = DrawsRandom()
    try:
        with watch:
            result = watched()
        if then is not None:
            then(result)
    except Exception:
        pass
    return watch.operators


def _judge(op, sample, actual, fallbacks, atol, rtol, compare_with_cpu, problems, index, operators: set):
    """The CPU reference for one sample: the sample's code, and its comparison (None when not compared).

    Adds the operators the reference dispatched. Those, and whether it draws
    random numbers, come from a call on the sample under a dispatch mode; the
    reference values from a plain call on a copy, since under a
    TorchDispatchMode the CPU's complex ``pinverse`` gives other values (up to
    1.5 apart on op_db's complex64 samples, torch 2.13), which float64 does not
    confirm.
    """
    # Copies before the watched call may write to the sample: the plain call gets one, as the device call did.
    wide = in_float64(sample) if compare_with_cpu else None
    copy = twin(sample) if compare_with_cpu else None
    watch, watched = DrawsRandom(), False
    try:
        with watch:
            call(op, sample)
        operators.update(watch.operators)
        watched = True
    except Exception:
        watch.drew = False  # the dispatch mode itself may be what failed: the plain call decides
    if watch.drew:
        return "d", None
    if watched and not compare_with_cpu:
        return ("f" if fallbacks else "n"), None
    try:
        expected = to_cpu(call(op, copy if copy is not None else sample))
    except Exception as exc:
        problems.setdefault("c", f"{REFERENCE}: sample {index}: {first_line(exc)}")
        return "c", None
    if not compare_with_cpu:
        return ("f" if fallbacks else "n"), None
    try:
        result = compare(op, sample, actual, expected, atol, rtol, precise=lambda: to_cpu(call(op, wide)))
    except Exception as exc:  # the comparison itself broke: the harness, not the device
        raise RuntimeError(f"{COMPARE}: sample {index}: {first_line(exc)}") from exc
    if result.problem is not None:
        problems.setdefault("m", f"{COMPARE}: sample {index}: {result.problem}; {describe(result.size(atol, rtol))}")
        return "m", result
    return ("f" if fallbacks else "n"), result


def _widen(cell: Comparison, sample: Comparison) -> None:
    cell.max_abs = max(cell.max_abs, sample.max_abs)
    cell.max_rel = max(cell.max_rel, sample.max_rel)
    cell.worst_ratio = max(cell.worst_ratio, sample.worst_ratio)
    cell.near_float64 += sample.near_float64
