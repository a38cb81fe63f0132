"""The step of a ``torchclaims check --backend`` run, as the isolated runner runs a claim script.

The runner starts it in its own process on the configured backend, with the
target in ``TORCHCLAIMS_CHECK_TARGET``; it writes an ordinary result record
through the verification API. The CPU reference is the model as the target
returned it; the device copy has the same weights. Checks:

1. the outputs match the CPU within the stated tolerances (the time per step
   after warm-up and the float32 precision mode it ran in are measured);
2. with a loss, every parameter's gradient matches the CPU;
3. no operator ran through a CPU fallback (torch_xla's counters, or the
   dispatcher's fallback table: :mod:`torchclaims.coverage.fallback`);
4. on a lazy backend, the same input shape compiles nothing the second time
   (the compilations for a second input shape are measured);
5. ``torch.compile`` traces the step without graph breaks (``torch._dynamo.explain``).
"""

import copy
import os
import statistics
import sys
import time

import torch
from torch.utils._pytree import tree_leaves, tree_map

from torchclaims.check.device_evidence import FALLBACK_CHECK, FALLBACK_MEASUREMENT, NO_FALLBACK, PRECISION
from torchclaims.check.target import load_target
from torchclaims.coverage.fallback import probe_for
from torchclaims.coverage.precision import precision_mode
from torchclaims.verify import verification

TARGET = os.environ["TORCHCLAIMS_CHECK_TARGET"]
RTOL = float(os.environ.get("TORCHCLAIMS_CHECK_RTOL", "1e-4"))
ATOL = float(os.environ.get("TORCHCLAIMS_CHECK_ATOL", "1e-5"))
TIMED_STEPS = 3
sys.path.insert(0, os.environ.get("TORCHCLAIMS_CHECK_CWD", os.getcwd()))  # package.module targets

step = load_target(TARGET)
torch.manual_seed(0)
other = step.other_inputs or tree_map(lambda x: torch.cat([x, x]) if isinstance(x, torch.Tensor) else x, step.inputs)
v = verification(
    os.environ["TORCHCLAIMS_CHECK_CLAIM"],
    model=TARGET,
    inputs=", ".join(f"{tuple(x.shape)} {x.dtype}" for x in tree_leaves(step.inputs) if isinstance(x, torch.Tensor)),
    method="the step (forward, and the loss's backward) on the device against the same weights on the CPU",
    tolerances=f"rtol {RTOL:g}, atol {ATOL:g}",
)
device = v.device


def moved(value, where):
    return tree_map(lambda x: x.to(where) if isinstance(x, torch.Tensor) else x, value)


def run(model, inputs):
    """One step; the output's tensors and the gradients, on the CPU."""
    for p in model.parameters():
        p.grad = None
    out = step.forward(inputs, model)
    if step.loss is not None:
        step.loss(out).backward()
    v.sync()
    tensors = [x.detach().cpu() for x in tree_leaves(out) if isinstance(x, torch.Tensor)]
    grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
    return tensors, grads


def compilations() -> int:
    if v.backend.name != "xla":
        return 0
    import torch_xla.debug.metrics as metrics

    data = metrics.metric_data("CompileTime")
    return data[0] if data else 0


reference = step.model
on_device = copy.deepcopy(reference).to(device)
expected, expected_grads = run(reference, step.inputs)
inputs, other_inputs = moved(step.inputs, device), moved(other, device)
probe = probe_for(v.backend.name, device)
before = compilations()
with probe.watch() as fallbacks:
    actual, actual_grads = run(on_device, inputs)
first = compilations() - before
again_start = compilations()
run(on_device, inputs)
again = compilations() - again_start
second_start = compilations()
run(on_device, other_inputs)
second = compilations() - second_start
times = []
for _ in range(TIMED_STEPS):
    began = time.perf_counter()
    run(on_device, inputs)
    times.append(time.perf_counter() - began)
try:  # after the steps: the model's own code may have set it
    precision = precision_mode(v.backend.name)
except (ImportError, AttributeError) as exc:  # a torch_xla without get_mat_mul_precision
    precision = f"not known: {type(exc).__name__}: {exc}"

with v.check("outputs match the CPU") as check:
    check.measure(
        "time per step after warm-up",
        round(1000 * statistics.median(times), 3),
        unit="ms",
        tolerance=f"median of {TIMED_STEPS} steps, outputs copied to the CPU",
    )
    check.measure(PRECISION, precision)
    check.expect(
        len(actual) == len(expected), f"{len(actual)} output tensors on the device, {len(expected)} on the CPU"
    )
    # A length mismatch is judged just above; the outputs both sides have are still compared.
    for index, (a, b) in enumerate(zip(actual, expected, strict=False)):
        if b.is_floating_point() or b.is_complex():
            check.close(a, b, rtol=RTOL, atol=ATOL, what=f"output {index}")
        else:
            check.equal(a, b, what=f"output {index}")

if step.loss is not None:
    with v.check("gradients match the CPU") as check:
        check.measure("parameters with a gradient", len(expected_grads))
        check.expect(
            set(actual_grads) == set(expected_grads), "the device and the CPU have gradients for other parameters"
        )
        worst, where, scale, failed = 0.0, "", 0.0, []
        for name, b in expected_grads.items():
            a = actual_grads.get(name)
            if a is None:
                continue
            error = (a.double() - b.double()).abs().max().item() if b.numel() else 0.0
            if (error, name) > (worst, where):
                worst, where = error, name
                scale = b.double().abs().max().item() if b.numel() else 0.0
            if not torch.allclose(a.double(), b.double(), rtol=RTOL, atol=ATOL):
                failed.append(name)
        check.measure("gradients: max abs error", worst, tolerance=f"<= {ATOL:g} + {RTOL:g} x |reference|")
        # the worst over the parameters, and what the build judges it against when it judges the record again
        check.measure("gradients: largest reference magnitude", scale)
        check.measure("gradients: worst parameter", where)
        check.expect(not failed, f"{len(failed)} parameters' gradients differ: {', '.join(failed[:5])}")

with v.check(FALLBACK_CHECK) as check:
    if v.on_reference:
        check.unsupported("the configured backend is the CPU reference: there is no fallback to see")
    check.measure(FALLBACK_MEASUREMENT, ", ".join(fallbacks) or NO_FALLBACK)
    check.expect(not fallbacks, f"{len(fallbacks)} operators ran on the CPU: {', '.join(fallbacks[:8])}")

with v.check("the same input shape compiles nothing the second time") as check:
    if v.backend.name != "xla":
        check.unsupported(f"backend {v.backend.name} runs eagerly: no graph is compiled per step")
    check.measure("compilations: first step", first)
    check.measure("compilations: the same shape again", again, tolerance="== 0")
    check.measure(
        "compilations: a second input shape",
        second,
        tolerance="measured, not judged" + ("" if step.other_inputs else "; the batch doubled"),
    )
    check.expect(again == 0, f"the same input shape compiled {again} more graphs")

with v.check("torch.compile traces the step without graph breaks") as check:
    import torch._dynamo

    def traced(inputs):
        out = step.forward(inputs)
        return step.loss(out) if step.loss is not None else out

    explanation = torch._dynamo.explain(traced)(step.inputs)
    reasons = sorted({str(b.reason).splitlines()[0][:120] for b in explanation.break_reasons})
    check.measure("graph breaks", explanation.graph_break_count, tolerance="== 0")
    check.measure("graphs", explanation.graph_count)
    check.expect(explanation.graph_break_count == 0, "; ".join(reasons[:3]) or "graph breaks")

v.finish()
