"""Compare one OpInfo operator on the device with the CPU, in a worker process that may die.

Used by ``opinfo_coverage.py``. A device runtime can kill the whole process on
an unusual input instead of raising (torch_xla 2.9 dies with SIGFPE on
``torch.roll`` of an empty tensor), and one operator must not take the sweep,
and the claim script, down with it. So the operators run one at a time in a
spawned worker process: :class:`Worker` sends it an operator's name and waits
for the answer; if the worker dies or hangs, that operator counts as failing on
the device (with the signal or the time limit), and a fresh worker carries on
with the next operator. A failure can also spoil the process for the operators
after it (torch_xla: a tensor left over from a failed lowering makes every later
``torch_xla.sync()`` fail), so after a failure the worker collects garbage and
synchronizes, and is replaced if that raises. A spawned worker imports what it runs, and a gallery
script is not importable, so the per-operator method lives here.
"""

from __future__ import annotations

import builtins
import gc
import itertools
import multiprocessing
import os
import signal
import sys
import time
import warnings

import torch
from _spawn import main_module_hidden

DTYPE = torch.float32
REFERENCE = torch.device("cpu")  # where samples are generated and references computed


def device_error(answer) -> Exception:
    """The exception to raise in the claim script for a ``fails`` or ``unsupported`` answer."""
    name = answer.get("error", "RuntimeError")
    builtin = getattr(builtins, name, None)
    kind = builtin if isinstance(builtin, type) and issubclass(builtin, Exception) else type(name, (RuntimeError,), {})
    return kind(answer["detail"])


class WorkerUnavailable(BaseException):
    """The worker could not be started: the harness is broken, not the operator (not caught by run_items)."""


def label(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


# -- the method, per operator ------------------------------------------------------------


def first_samples(op, count):
    # op.sample_inputs() would wrap this generator in a tracker that walks the
    # Python stack with inspect.stack() for every call (about 0.1 s each outside a
    # unittest); the generator underneath yields the same samples. Some sample
    # functions draw from Python's and NumPy's generators too: seed all three.
    from torch.testing._internal.common_utils import set_rng_seed

    set_rng_seed(0)
    samples = op.sample_inputs_func(op, str(REFERENCE), DTYPE, False)
    return list(itertools.islice(samples, count))


def call(op, sample, seed=0):
    torch.manual_seed(seed)
    return op(sample.input, *sample.args, **sample.kwargs)


def to_cpu(value):
    if isinstance(value, torch.Tensor):
        return value.to(REFERENCE)
    if isinstance(value, (list, tuple)):  # also torch.return_types structs; compared as sequences
        return [to_cpu(x) for x in value]
    if isinstance(value, dict):
        return {k: to_cpu(x) for k, x in value.items()}
    return value


def compare(actual, expected, atol, rtol):
    """None when equal within tolerance, else the first line of the difference."""
    try:
        torch.testing.assert_close(
            to_cpu(actual), to_cpu(expected), atol=atol, rtol=rtol, equal_nan=True, check_device=False
        )
    except AssertionError as exc:
        return " ".join(str(exc).split())[:160]
    except (TypeError, ValueError, RuntimeError) as exc:  # types assert_close does not know: plain equality
        try:
            same = bool(to_cpu(actual) == to_cpu(expected))
        except Exception:
            return f"not comparable: {type(exc).__name__}: {exc}"[:160]
        if not same:
            return f"{actual!r} != {expected!r}"[:160]
    return None


def _first_line(exc):
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def check_operator(op, tolerance, device, sync, max_samples, per_op_s):
    """CPU reference, then the device; returns a plain dict (it crosses a pipe).

    ``kind`` is ``evidence`` (with ``match``), ``no reference``, ``unsupported``
    (NotImplementedError on the device) or ``fails`` (any other exception on the
    device, named in ``error``); ``samples`` holds one outcome per sample with a
    CPU reference.
    """
    begun = time.perf_counter()
    try:
        expected = []
        for index, sample in enumerate(first_samples(op, max_samples)):
            if index and time.perf_counter() - begun > per_op_s / 2:
                break  # per-operator bound: later samples are left out
            expected.append(sample.output_process_fn_grad(call(op, sample)))
        if not expected:
            return {"kind": "no reference", "detail": "no float32 sample", "samples": []}
        again = first_samples(op, 1)[0]
        if compare(again.output_process_fn_grad(call(op, again, seed=1)), expected[0], 0.0, 0.0) is not None:
            return {"kind": "no reference", "detail": "CPU result changes with the random seed", "samples": []}
    except Exception as exc:
        return {"kind": "no reference", "detail": f"CPU reference raised {type(exc).__name__}: {_first_line(exc)}", "samples": []}
    outcomes = ["not run"] * len(expected)
    mismatches = []
    for index, sample in enumerate(first_samples(op, len(expected))):
        if index and time.perf_counter() - begun > per_op_s:
            break  # per-operator bound: the remaining samples stay "not run"
        try:
            moved = sample.transform(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t)
            out = moved.output_process_fn_grad(call(op, moved))  # on the device, as test_compare_cpu does
            sync()
        except Exception as exc:
            outcomes[index] = "fails"
            kind = "unsupported" if isinstance(exc, NotImplementedError) else "fails"
            return {"kind": kind, "error": type(exc).__name__, "detail": _first_line(exc), "samples": outcomes}
        problem = compare(out, expected[index], *tolerance)
        outcomes[index] = "match" if problem is None else "mismatch"
        if problem is not None:
            mismatches.append(f"sample {index}: {problem}")
    return {"kind": "evidence", "match": not mismatches, "detail": "; ".join(mismatches), "samples": outcomes}


# -- the worker process --------------------------------------------------------------------


def _serve(conn, backend_name, max_samples, per_op_s):
    """Worker entry point: answer operator names until told to stop."""
    warnings.filterwarnings("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    from torchclaims.backends import resolve_backend

    backend, _ = resolve_backend(backend_name)
    backend.import_modules()
    device = backend.device()  # first, before anything else touches the device
    ops = {label(op): op for op in op_db}
    conn.send("ready")
    while True:
        request = conn.recv()
        if request is None:
            break
        name, tolerance = request
        try:
            answer = check_operator(ops[name], tolerance, device, backend.synchronize, max_samples, per_op_s)
        except Exception as exc:  # e.g. in compare(): counted as run_items counts an exception from an item
            kind = "unsupported" if isinstance(exc, NotImplementedError) else "fails"
            answer = {"kind": kind, "error": type(exc).__name__, "detail": _first_line(exc), "samples": []}
        if answer["kind"] in ("fails", "unsupported"):
            # A failed call can leave device tensors in reference cycles (the traceback's
            # frames); a later synchronize would execute them and fail again, blaming the
            # next operator. Collect them; if the device still cannot synchronize, this
            # worker is spoilt and a fresh one takes the next operator.
            gc.collect()
            try:
                backend.synchronize()
            except Exception as exc:
                answer["restart"] = f"synchronize() after the failure raised {type(exc).__name__}: {_first_line(exc)}"
        conn.send(answer)
        if "restart" in answer:
            break
    sys.stdout.flush()
    sys.stderr.flush()




def _died(process) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"the process running it was killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"the process running it exited with code {code}"


class Worker:
    """One spawned worker at a time; replaced when an operator kills it."""

    def __init__(self, backend_name, max_samples, per_op_s, *, start_timeout_s=180.0, op_timeout_s=60.0):
        self.args = (backend_name, max_samples, per_op_s)
        self.start_timeout_s, self.op_timeout_s = start_timeout_s, op_timeout_s
        self.process = self.conn = None
        self.starts = 0
        self.restarts = []  # why a worker was replaced although it was alive

    def start(self):
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, *self.args), daemon=True, name="opinfo-worker")
        with main_module_hidden():
            self.process.start()
        child.close()
        self.starts += 1
        if not self.conn.poll(self.start_timeout_s):
            self.stop()
            raise WorkerUnavailable(f"the worker did not start within {self.start_timeout_s:g} s")
        try:
            if self.conn.recv() != "ready":
                raise EOFError
        except EOFError:
            self.process.join(5)
            raise WorkerUnavailable(f"the worker failed to start: {_died(self.process)}") from None

    def stop(self):
        if self.process is not None and self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(5)
            if self.process.is_alive():
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.join(5)
        self.process = self.conn = None

    def ask(self, name, tolerance):
        """The worker's answer for one operator; a dead or hung worker is reported as ``fails``."""
        if self.process is None or not self.process.is_alive():
            self.start()
        self.conn.send((name, tolerance))
        if self.conn.poll(self.op_timeout_s):
            try:
                answer = self.conn.recv()
            except EOFError:  # the worker died: wait for its exit code
                self.process.join(10)
            else:
                if "restart" in answer:  # the worker stops after this answer
                    self.process.join(10)
                    self.stop()
                    self.restarts.append(f"after {name}: {answer['restart']}")
                return answer
        if self.process.is_alive():  # hung: no answer within the limit
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.join(5)
            detail = f"no answer within {self.op_timeout_s:g} s (the process was killed)"
        else:
            detail = _died(self.process)
        self.process = self.conn = None
        return {"kind": "fails", "error": "WorkerDied", "detail": detail, "samples": ["fails"]}
