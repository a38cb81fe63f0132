"""Run a gallery script against a deliberately broken stand-in, to show its checks can fail.

Every check must be able to fail for the reason it states. A breaking test runs
the claim's own script in this process on the CPU, with one thing broken the
way a backend on which the claim is false would be (``torch.load`` that ignores
where a tensor was saved, a generator that draws other numbers, a backend that
runs nothing until a value is read), and asserts that the check about that
thing is refuted. ``as_backend`` lets a script whose checks are gated on the
backend it is about run them here: the CPU descriptor under that backend's name.
``a_second_cpu`` makes the configured device the CPU under index 0, so a check
that compares the device with the CPU runs (``device_computes`` then breaks one
operator on what is moved there), and ``fresh_processes_run`` reaches the
fresh Python processes a script starts.
"""

from __future__ import annotations

import dataclasses
import os
import runpy
import sys
import time
from pathlib import Path

import torch
from torch.utils._pytree import tree_map

from forked import run_forked
from torchclaims import verify
from torchclaims.backends import all_backends
from torchclaims.evidence.records import ResultRecord, Verdict, read_record

GALLERY = Path(__file__).resolve().parents[1] / "gallery"


def run_gallery(
    name: str, monkeypatch, tmp_path: Path, as_backend: str | None = None, in_child=None, **descriptor
) -> ResultRecord:
    """Run ``gallery/<name>.py`` on the CPU (named ``as_backend`` when given) with what the test patched, and
    return its record (``descriptor`` changes more of the stand-in's descriptor, its compile_backend say;
    ``in_child`` is called in the child first, for a change that cannot be undone, like a rename).
    It runs in a forked child, so the script's changes to global state (registries,
    seeds, flags) die with it, as they do in the runner's own child processes."""
    path = tmp_path / f"{name}.json"
    monkeypatch.setenv(verify.RECORD_PATH_ENV, str(path))
    monkeypatch.setenv(verify.SCRIPT_ENV, f"gallery/{name}.py")
    monkeypatch.setenv("TORCHCLAIMS_BACKEND", "cpu")
    monkeypatch.syspath_prepend(str(GALLERY))  # the scripts' shared helpers (_philox, _jobs...)
    if as_backend is not None:
        stand_in = dataclasses.replace(all_backends()["cpu"], name=as_backend, **descriptor)
        real = verify.resolve_backend  # what a script asks for by name (its CPU reference, say) stays real
        monkeypatch.setattr(verify, "requested_backend", lambda explicit=None: as_backend)
        monkeypatch.setattr(
            verify,
            "resolve_backend",
            lambda requested: (stand_in, f"stand-in for {as_backend}") if requested == as_backend else real(requested),
        )
    monkeypatch.chdir(tmp_path)

    def body():
        if in_child is not None:
            in_child()
        runpy.run_path(str(GALLERY / f"{name}.py"), run_name="__main__")

    run_forked(body, CHILD_TIMEOUT_S, f"{name}.py")
    assert path.is_file(), f"{name}.py wrote no record"
    return read_record(path)


CHILD_TIMEOUT_S = 600  # generous for a loaded 2-core machine; a script that takes longer is stuck


def outcomes(record: ResultRecord) -> dict[str, Verdict]:
    return {check.name: check.outcome for check in record.checks}


def refuted(record: ResultRecord, words: str, because: str = "") -> bool:
    """Whether the one check whose name holds ``words`` is refuted (and the record with it), with
    ``because`` in its detail: refuted for the reason the script states, not for another."""
    named = [check for check in record.checks if words in check.name]
    assert len(named) == 1, f"expected one check naming {words!r}, found {[c.name for c in record.checks]}"
    return named[0].outcome is Verdict.REFUTED and record.verdict is Verdict.REFUTED and because in named[0].detail


class LazyTensor(torch.Tensor):
    """A CPU tensor that runs nothing until a value is read: the shape of a lazy backend.

    Every operation is recorded (its shape worked out on the meta device) and
    run only when something asks for a Python value (``.item()``, a comparison
    that returns a bool) or for the data itself. The recorded operations are
    run without recursion, so a long chain of them reads like a long graph.
    """

    @staticmethod
    def __new__(cls, op, meta):
        return torch.Tensor._make_wrapper_subclass(
            cls, meta.shape, strides=meta.stride(), dtype=meta.dtype, device="cpu"
        )

    def __init__(self, op, meta):
        self._op, self._value = op, None  # op: (func, args, kwargs), or None once computed

    @classmethod
    def wrap(cls, tensor: torch.Tensor) -> LazyTensor:
        lazy = cls(None, tensor.to("meta"))
        lazy._value = tensor
        return lazy

    def value(self) -> torch.Tensor:
        stack = [self]
        while stack:
            node = stack[-1]
            if node._value is not None:
                stack.pop()
                continue
            func, args, kwargs = node._op
            pending = [x for x in _leaves((args, kwargs)) if isinstance(x, LazyTensor) and x._value is None]
            if pending:
                stack.extend(pending)
                continue
            node._value = func(*tree_map(_computed, args), **tree_map(_computed, kwargs))
            node._op = None
            stack.pop()
        return self._value

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            meta = func(*tree_map(_meta, args), **tree_map(_meta, kwargs))
        except (NotImplementedError, RuntimeError):
            meta = None  # no meta kernel: run it now
        if not isinstance(meta, torch.Tensor) or func is torch.ops.aten._local_scalar_dense.default:
            return func(
                *tree_map(_value, args), **tree_map(_value, kwargs)
            )  # a Python value is asked for: run what was recorded
        return cls((func, args, kwargs), meta)


def _leaves(tree):
    from torch.utils._pytree import tree_leaves

    return tree_leaves(tree)


def _value(x):
    return x.value() if isinstance(x, LazyTensor) else x


def _computed(x):
    return x._value if isinstance(x, LazyTensor) else x


def _meta(x):
    if isinstance(x, LazyTensor):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    return x.to("meta") if isinstance(x, torch.Tensor) else x


def lazy_moves(monkeypatch) -> None:
    """``tensor.to(<the CPU>)`` returns a LazyTensor: code that moves its inputs to the device runs lazily."""
    to = torch.Tensor.to

    def moved(self, *args, **kwargs):
        out = to(self, *args, **kwargs)
        target = args[0] if args else kwargs.get("device")
        if isinstance(target, torch.device) and target.type == "cpu" and not isinstance(out, LazyTensor):
            return LazyTensor.wrap(out)
        return out

    monkeypatch.setattr(torch.Tensor, "to", moved)


class CpuEvent:
    """``torch.cuda.Event`` as a build that times the host instead of raising would have it."""

    def __init__(self, enable_timing=False, **options):
        self._at = None

    def record(self, stream=None):

        self._at = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end: CpuEvent) -> float:
        return (end._at - self._at) * 1e3


def triton_on_the_cpu(monkeypatch) -> None:
    """A ``triton`` that runs a kernel as Python on the CPU tensors it is given (``tl.store`` fills the pointer),
    the way the interpreter mode does: a kernel launch that succeeds on a host without a GPU."""
    import importlib.machinery
    import types

    triton, language = types.ModuleType("triton"), types.ModuleType("triton.language")
    for module in (triton, language):
        module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)
    language.store = lambda pointer, value: pointer.fill_(value)
    triton.language = language
    triton.jit = _Launcher
    monkeypatch.setitem(sys.modules, "triton", triton)
    monkeypatch.setitem(sys.modules, "triton.language", language)


class _Launcher:
    """What ``@triton.jit`` makes: ``kernel[grid](*args)`` calls the kernel once (one program)."""

    def __init__(self, kernel):
        self._kernel = kernel

    def __getitem__(self, grid):
        return self._kernel


SECOND_CPU = torch.device("cpu", 0)


def a_second_cpu(monkeypatch) -> torch.device:
    """Make the configured device the CPU under index 0, told apart from the reference (``torch.device('cpu')``):
    a script that compares the device with the CPU runs its comparisons here, and a stand-in breaks only what is
    moved to ``SECOND_CPU`` (tensors on it are plain CPU tensors, so the break goes where the move is)."""
    from torchclaims import backends

    monkeypatch.setattr(backends.Backend, "device", lambda self: SECOND_CPU)
    monkeypatch.setattr(
        verify.Verification, "on_reference", property(lambda self: self.device == self.reference_device)
    )
    return SECOND_CPU


def moved_to_second_cpu(monkeypatch, broken) -> None:
    """``module.to(SECOND_CPU)`` also calls ``broken(module)``: a device that keeps a model other than it was sent."""
    to = torch.nn.Module.to

    def moved(self, *args, **kwargs):
        out = to(self, *args, **kwargs)
        if SECOND_CPU in args or kwargs.get("device") == SECOND_CPU:
            broken(out)
        return out

    monkeypatch.setattr(torch.nn.Module, "to", moved)


def in_bfloat16(model) -> None:
    """A device that keeps float32 weights at bfloat16 precision."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16))


def fresh_processes_run(monkeypatch, tmp_path: Path, code: str) -> None:
    """Every fresh Python process the script starts runs ``code`` first (a ``sitecustomize`` put ahead on
    PYTHONPATH): a torch whose state in a new process is not what the claim says it is."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(code, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))


def counters_that_count_nothing(monkeypatch, device: torch.device) -> None:
    """torch.accelerator finding ``device``, with memory counters that stay at 0 whatever is allocated."""
    accelerator = torch.accelerator
    monkeypatch.setattr(accelerator, "current_accelerator", lambda check_available=False: device)
    monkeypatch.setattr(accelerator, "synchronize", lambda device=None: None)
    for counter in ("memory_allocated", "memory_reserved"):
        monkeypatch.setattr(accelerator, counter, lambda device=None: 0)


def gallery_module(monkeypatch, name: str):
    """A gallery helper module (``_parallel``...), imported as the scripts import it, for a test to patch."""
    import importlib

    monkeypatch.syspath_prepend(str(GALLERY))
    return importlib.import_module(name)


class OnTheDevice(torch.Tensor):
    """A tensor moved to SECOND_CPU: the operators in ``wrong`` give what a defective device gives,
    the rest the CPU's."""

    wrong: dict = {}

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in cls.wrong:
            with torch._C.DisableTorchFunctionSubclass():
                return cls.wrong[func](*args, **(kwargs or {}))
        if func is torch.Tensor.cpu:  # back on the CPU: a plain tensor again
            return args[0].as_subclass(torch.Tensor)
        return super().__torch_function__(func, types, args, kwargs)


def device_computes(monkeypatch, func=None, wrong=None, second_cpu=None) -> None:
    """The configured device is SECOND_CPU (made so by ``second_cpu``, ``a_second_cpu`` by default), tensors
    moved there (``x.to(device)``) are OnTheDevice, and ``func`` on them computes ``wrong``."""
    (second_cpu or a_second_cpu)(monkeypatch)
    monkeypatch.setattr(OnTheDevice, "wrong", {func: wrong} if func else {})
    to = torch.Tensor.to

    def moved(self, *args, **kwargs):
        out = to(self, *args, **kwargs)
        return out.as_subclass(OnTheDevice) if SECOND_CPU in args or kwargs.get("device") == SECOND_CPU else out

    monkeypatch.setattr(torch.Tensor, "to", moved)


def a_second_cpu_backend(monkeypatch, name: str = "second-cpu") -> None:
    """Like ``a_second_cpu``, but only for a backend of its own, ``name``, which the script runs on
    (``run_gallery(..., as_backend=name)``) and its forked distributed workers resolve by that name;
    the CPU backend keeps the CPU, so a script's CPU reference runs on the plain CPU."""
    from torchclaims import backends

    stand_in = dataclasses.replace(all_backends()["cpu"], name=name)
    resolve, device = backends.resolve_backend, backends.Backend.device
    monkeypatch.setattr(
        backends, "resolve_backend", lambda requested: (stand_in, "") if requested == name else resolve(requested)
    )
    monkeypatch.setattr(backends.Backend, "device", lambda self: SECOND_CPU if self.name == name else device(self))
    monkeypatch.setattr(
        verify.Verification, "on_reference", property(lambda self: self.device == self.reference_device)
    )


# A torch_xla of thread replicas on the CPU, for scripts that run torch_xla.launch in a fresh process.
THREAD_REPLICAS = {
    "__init__.py": '''
import os, threading, torch
_replica = threading.local()
def device():
    return torch.device("cpu")
def sync():
    pass
def launch(fn, args=()):
    """One thread per CPU_NUM_DEVICES, as PJRT CPU runs them; an exception in a replica fails the launch."""
    failed = []
    def replica(index):
        _replica.ordinal = index
        try:
            fn(index, *args)
        except BaseException as exc:
            failed.append(exc)
    threads = [threading.Thread(target=replica, args=(i,)) for i in range(int(os.environ.get("CPU_NUM_DEVICES", "1")))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]
''',
    "runtime.py": """
import os
from torch_xla import _replica
def global_ordinal():
    return _replica.ordinal
def world_size():
    return int(os.environ.get("CPU_NUM_DEVICES", "1"))
def use_spmd():
    pass
def global_runtime_device_count():
    return world_size()
def device_type():
    return os.environ.get("PJRT_DEVICE", "CPU")
""",
    "core/__init__.py": "",
    "debug/__init__.py": "",
    # Nothing to compile here: replicas that wait for replica 0's compilations find them done.
    "debug/metrics.py": "def metric_data(name):\n    return (2**31, 0, [])\n",
}


def thread_replicas(monkeypatch, tmp_path: Path, **modules: str) -> None:
    """A ``torch_xla`` package whose ``launch`` runs thread replicas on the CPU, with the other modules a test
    gives (``xla_model`` for ``core/xla_model.py``, ``xla_backend`` for ``distributed/xla_backend.py``,
    ``xla_multiprocessing`` for ``distributed/xla_multiprocessing.py``, ``spmd`` for ``distributed/spmd.py``,
    ``fsdpv2`` for ``experimental/spmd_fully_sharded_data_parallel.py``, ``backends`` for ``backends.py``,
    ``metrics`` for ``debug/metrics.py``), ahead on the path of the fresh processes the script starts (on their
    PYTHONPATH too, for those that do not get the script's sys.path)."""
    paths = {
        "xla_model": "core/xla_model.py",
        "xla_backend": "distributed/xla_backend.py",
        "xla_multiprocessing": "distributed/xla_multiprocessing.py",
        "spmd": "distributed/spmd.py",
        "fsdpv2": "experimental/spmd_fully_sharded_data_parallel.py",
        "backends": "backends.py",
        "metrics": "debug/metrics.py",
    }
    package = tmp_path / "standin" / "torch_xla"
    files = {**THREAD_REPLICAS, "distributed/__init__.py": "", **{paths[name]: text for name, text in modules.items()}}
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(package.parent), os.environ.get("PYTHONPATH")])))


# The 'xla' process group of THREAD_REPLICAS: one group object for the process, shared by the replica threads;
# each collective hands every replica's tensor to every replica, and COMBINE (given by the test) makes the result.
THREAD_PROCESS_GROUP = """
import threading
import torch, torch.distributed as dist
import torch_xla.runtime as xr
from torch._C._distributed_c10d import ProcessGroup

def _done(result):
    future = torch.futures.Future()
    future.set_result(result)
    return torch._C._distributed_c10d._create_work_from_future(future)

class ThreadGroup(ProcessGroup):
    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        self._barrier, self._slots = threading.Barrier(size), {}
    def getBackendName(self):
        return "xla"
    def _exchange(self, tensor):
        self._slots[xr.global_ordinal()] = tensor.clone()
        self._barrier.wait()
        every = [self._slots[rank] for rank in sorted(self._slots)]
        self._barrier.wait()
        return every
    def allreduce(self, tensors, opts):
        for tensor in tensors:
            tensor.copy_(COMBINE(tensor, self._exchange(tensor)))
        return _done(tensors)
    def allgather(self, outputs, inputs, opts):
        for out, tensor in zip(outputs, inputs):
            for slot, value in zip(out, self._exchange(tensor)):
                slot.copy_(value)
        return _done(outputs)

def _rendezvous(url, timeout=None, **options):
    yield dist.HashStore(), 0, xr.world_size()

dist.Backend.register_backend("xla", ThreadGroup, devices=["cpu"])
dist.register_rendezvous_handler("xla", _rendezvous)
"""
