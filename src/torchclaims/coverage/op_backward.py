"""One sample's backward pass on the device against the CPU: the gradients of its outputs w.r.t. its inputs.

A model that trains runs each operator's backward kernel too
(``convolution_backward``, ``native_layer_norm_backward``, ``gelu_backward``),
and a backend can get those wrong, fall back or lack them while the forward
call is right. PyTorch compares a device's gradients with the CPU's in
``TestConsistency.test_output_grad_match`` (test_mps.py): the sample is made
with ``requires_grad`` (OpInfo's floating inputs require gradients), the
operator runs on each side, and ``torch.autograd.grad`` takes the gradients of
the outputs that require them w.r.t. the inputs that do, given the same
``grad_outputs`` on both sides, made on the CPU. The sweep does the same for
each operator that supports autograd (``OpInfo.supports_autograd``), with the
``grad_outputs`` drawn from a generator of their own seeded with
:data:`GRAD_SEED` (so both sides, and every run, get the same ones), and
judges the gradients by the forward's rules (:func:`.op_compare.compare_values`:
the cell's tolerance, NaN equal, an element within the tolerance of the
float64 gradients accepted). A gradient of ``None`` (an input the outputs do
not depend on) must be ``None`` on both sides.

On the device, the forward call with gradients comes first (stage
:data:`FORWARD_FOR_GRAD`); if it raises, the sample's backward is not run
(code ``x``): a backward cell never passes on a sample whose forward failed.
Then the backward (stage :data:`BACKWARD`) runs inside the fallback probe, so
that the CPU fallbacks it names are those of the backward kernels; the sweep
hears when the backward starts, so a crash names the pass it died in. The CPU
reference runs its forward and backward under dispatch modes: the ATen
operators the gradients dispatched are what the row's backward records
(``backward_operators``), and a sample whose forward or backward draws random
numbers is not compared. As in the forward, the values compared come from a
plain call on a copy of the sample.

The indices of ties are not resolved as the forward resolves them: where a
device picks another of two equal elements, its gradient goes to another
place. OpInfo's floating samples are random, so ties are rare in them.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_leaves

from .op_check import COMPARE, REFERENCE, SamplePass, dispatched, first_line
from .op_compare import compare_values, describe
from .op_samples import DrawsRandom, call, in_float64, to_cpu, twin

FORWARD_FOR_GRAD, BACKWARD = "forward with gradients on the device", "backward on the device"
GRAD_SEED = 0  # the seed of the generator that draws every sample's grad_outputs, on the CPU


def _requiring_grad(value) -> list[torch.Tensor]:
    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor) and t.requires_grad]


def grad_outputs_for(output) -> list[torch.Tensor]:
    """The ``grad_outputs`` of the output's tensors that require gradients: standard normal, drawn on the CPU
    from :data:`GRAD_SEED` in float32 and cast to each one's dtype, so that every side and every run gets the
    same ones. Drawn before a watched backward, whose dispatch mode would take them for the operator's draw."""
    generator = torch.Generator().manual_seed(GRAD_SEED)
    return [torch.randn(o.shape, generator=generator).to(o.dtype) for o in _requiring_grad(output)]


def gradients(output, sample, grad_outputs: list[torch.Tensor]) -> list | None:
    """The gradients of ``output``'s tensors that require them w.r.t. the sample's inputs that do, given
    ``grad_outputs`` (:func:`grad_outputs_for`, on the CPU); None when there is nothing to differentiate."""
    outputs, inputs = _requiring_grad(output), _requiring_grad((sample.input, sample.args, sample.kwargs))
    if not outputs or not inputs:
        return None
    moved = [g.to(o.device) for g, o in zip(grad_outputs, outputs, strict=True)]
    return list(torch.autograd.grad(outputs, inputs, moved, allow_unused=True))


def _gradients_of(op, sample, grad_outputs=None) -> tuple[list | None, list[torch.Tensor]]:
    """(the sample's gradients, unwatched, the grad_outputs used: given, else drawn)."""
    output = call(op, sample)
    grad_outputs = grad_outputs_for(output) if grad_outputs is None else grad_outputs
    return gradients(output, sample, grad_outputs), grad_outputs


class BackwardPass(SamplePass):
    """The backward pass of a sample on the device, and its CPU reference (see the module docstring)."""

    first_stage = FORWARD_FOR_GRAD

    def on_device(self, moved, entered) -> tuple:
        """(the gradients on the CPU, None when nothing needs one; the operators the backward ran through the
        CPU fallback)."""
        output = call(self.op, moved)
        self.sync()  # a lazy device runs the forward here: a failure is the forward's
        entered(BACKWARD)
        grad_outputs = grad_outputs_for(output)
        with self.probe.watch() as seen:
            grads = gradients(output, moved, grad_outputs)
            actual = to_cpu(grads)
            self.sync()
        return actual, seen

    def device_kernels(self, moved) -> set[str]:
        return self._backward_operators(moved, then=to_cpu)

    def cpu_operators(self, sample) -> set[str]:
        return self._backward_operators(sample)

    def _backward_operators(self, sample, then=None) -> set[str]:
        """The ATen operators the backward of the sample dispatches (the forward's are the forward cell's)."""
        try:
            output = call(self.op, sample)
            grad_outputs = grad_outputs_for(output)
        except Exception:
            return set()
        return dispatched(lambda: gradients(output, sample, grad_outputs), then=then)

    def failure_code(self, stage: str, exc: Exception) -> str:
        if stage == FORWARD_FOR_GRAD:
            return "x"
        return "k" if isinstance(exc, NotImplementedError) else "r"

    def judge(self, sample, actual, fallbacks, problems: dict, index: int, operators: set):
        """The CPU reference for one sample: its code, and its comparison (None when not compared)."""
        fell_back = "f" if fallbacks else "n"
        wide = in_float64(sample) if self.compare_with_cpu else None
        copy = twin(sample) if self.compare_with_cpu else None
        forward, backward, watched = DrawsRandom(), DrawsRandom(), False
        try:
            with forward:
                output = call(self.op, sample)
            grad_outputs = grad_outputs_for(output)
            with backward:
                grads = gradients(output, sample, grad_outputs)
            operators.update(backward.operators)
            watched = True
        except Exception:
            forward.drew = backward.drew = False  # the dispatch modes may be what failed: the plain call decides
        if forward.drew or backward.drew:
            return "d", None
        if watched and grads is None:
            problems.setdefault("c", f"{REFERENCE}: sample {index}: no output or input requires gradients")
            return "c", None
        if watched and not self.compare_with_cpu:
            return fell_back, None
        try:
            expected, grad_outputs = _gradients_of(self.op, copy or sample)
        except Exception as exc:
            problems.setdefault("c", f"{REFERENCE}: sample {index}: {first_line(exc)}")
            return "c", None
        if not self.compare_with_cpu:
            return fell_back, None
        if expected is None or actual is None:
            side = "the device's" if actual is None else "the CPU's"
            problems.setdefault("m", f"{COMPARE}: sample {index}: none of {side} outputs requires gradients")
            return "m", None
        expected = to_cpu(expected)
        wide_grads = [g.double() for g in grad_outputs]
        try:
            result = compare_values(
                actual,
                expected,
                self.atol,
                self.rtol,
                precise=lambda: to_cpu(_gradients_of(self.op, wide, wide_grads)[0]),
            )
        except Exception as exc:  # the comparison itself broke: the harness, not the device
            raise RuntimeError(f"{COMPARE}: sample {index}: {first_line(exc)}") from exc
        if result.problem is not None:
            size = describe(result.size(self.atol, self.rtol))
            problems.setdefault("m", f"{COMPARE}: sample {index}: gradients: {result.problem}; {size}")
            return "m", result
        return fell_back, result
