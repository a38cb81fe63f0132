"""Run a small job in 2 worker processes joined in a torch.distributed process group.

Part of the scripts' interface (``from torchclaims.verify import distributed``),
shared by the distributed claim scripts. The claim script itself runs in a
child of torchclaims' fork server (torch already imported). How the workers
start depends on their device:

- CPU jobs fork the script's process. Inside the runner's child this is safe
  and 20-60 times faster than the alternatives, which all import torch again
  in every worker (measured over 71 gloo runs, 0 failures).
- Jobs on any other device use ``spawn``: accelerator runtimes (CUDA, XLA's
  PJRT) do not survive a fork once the parent has started them. A spawned
  worker imports the function it runs, and a gallery script is not importable
  (sphinx-gallery runs it without a module file), so the worker entry point
  lives here and the jobs in gallery helper modules: ``gallery/_jobs.py``
  (all_reduce, DDP, and the single-process references) and
  ``gallery/_parallel.py`` (FSDP2, tensor, sequence, pipeline and context
  parallelism). A spawned worker finds them on the parent's ``sys.path``.

Every wait has a deadline (the process group's timeout, then a join deadline
after which the workers are killed). Any failure (a worker that raised,
crashed, was killed by a signal or hung, or workers that did not form one
group) raises :class:`DistributedRunFailed` with the exit codes and the tail
of every worker's log, so a check that calls :func:`run` ends as an ``error``,
never as evidence about the claim.
"""

from __future__ import annotations

import dataclasses
import datetime
import multiprocessing
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .spawning import main_module_hidden

LOG_TAIL = 1500  # characters of each worker's log kept in a failure message


class DistributedRunFailed(RuntimeError):
    """The distributed job did not complete on every rank."""


class GroupNotFormed(DistributedRunFailed):
    """A worker joined a process group that did not span all the workers.

    Seen with torch_xla on the PJRT CPU runtime, which gives each process its
    own group of one: the backend cannot run the job here, which is not
    evidence about a claim. Scripts report it as unsupported.
    """


@dataclass(frozen=True)
class Launch:
    job: Callable  # job(rank, world_size, device) -> dict, defined at the top level of an importable module
    backend: str  # torchclaims backend name: each worker resolves its device from it
    dist_backend: str
    init_method: str
    world_size: int
    timeout_s: float
    outdir: str
    env: dict = field(default_factory=dict)
    kwargs: dict = field(default_factory=dict)
    any_group: bool = False  # run the job in whatever group the worker joined (see run_anyway)


# -- the worker ------------------------------------------------------------------------


def _rank_device(device: torch.device, rank: int) -> torch.device:
    """One device per rank where the accelerator has several; otherwise the backend's device."""
    accelerator = torch.accelerator.current_accelerator(check_available=True)
    if device.type == "cpu" or accelerator is None or accelerator.type != device.type:
        return device
    index = rank % max(1, torch.accelerator.device_count())
    torch.accelerator.set_device_index(index)
    return torch.device(device.type, index)


def start_method(backend) -> str:
    """How workers for a job on ``backend``'s device start (see the module docstring)."""
    if backend.device_type == "cpu" and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def _worker(rank: int, launch: Launch) -> None:
    log = os.open(os.path.join(launch.outdir, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)  # C++ messages (gloo, nccl) too
    os.dup2(log, 2)
    os.close(log)
    # A forked worker inherits the script's sys.stdout (sphinx-gallery captures it): write to the log instead.
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    # The environment torchrun gives each worker: init methods such as xla://
    # read the rank and the world size from it instead of from the arguments.
    os.environ.update(launch.env, RANK=str(rank), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    from ..backends import resolve_backend

    backend, _ = resolve_backend(launch.backend)
    backend.import_modules()
    torch.distributed.init_process_group(
        launch.dist_backend,
        init_method=launch.init_method,
        rank=rank,
        world_size=launch.world_size,
        timeout=datetime.timedelta(seconds=launch.timeout_s),
    )
    try:
        device = _rank_device(backend.device(), rank)  # after joining: some runtimes start with the group
        if launch.any_group or torch.distributed.get_world_size() == launch.world_size:
            result = launch.job(rank, launch.world_size, device, **launch.kwargs)
        else:  # not one group: the launcher reports GroupNotFormed; the job would only fail on it
            result = {}
        result.update(
            device=str(device),
            rank=torch.distributed.get_rank(),
            world_size=torch.distributed.get_world_size(),
            process_group_backend=str(torch.distributed.get_backend()),
        )
        path = os.path.join(launch.outdir, f"rank{rank}.pt")
        torch.save(result, path + ".part")
        os.replace(path + ".part", path)
        torch.distributed.barrier()  # nobody leaves while a peer may still need it
    finally:
        torch.distributed.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()


# -- the launcher ----------------------------------------------------------------------


def free_port() -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def loopback_interface() -> str | None:
    """The name of the loopback network interface ('lo' on Linux, 'lo0' on macOS)."""
    for _, name in socket.if_nameindex():
        try:
            with open(f"/sys/class/net/{name}/flags") as handle:
                if int(handle.read(), 16) & 0x8:  # IFF_LOOPBACK
                    return name
        except OSError:
            if name.startswith("lo"):
                return name
    return None


def _tail(path: str) -> str:
    try:
        with open(path, errors="replace") as handle:
            text = handle.read()
    except OSError:
        return "(no log)"
    return text[-LOG_TAIL:].strip() or "(empty log)"


@dataclass(frozen=True)
class Ended:
    """How the workers of one launch ended: exit codes, results, logs."""

    name: str
    method: str
    codes: list
    hung: list[int]
    results: dict[int, dict]  # worker -> what it wrote (only workers that finished)
    logs: list[str]

    def failed(self, worker: int) -> str:
        """How a worker that wrote no result ended, with the last line of its log."""
        code = self.codes[worker]
        how = "hung and was killed" if worker in self.hung else f"exited with code {code}"
        last = self.logs[worker].strip().splitlines()[-1] if self.logs[worker].strip() else "(empty log)"
        return f"{how}: {last}"


def _launch(job: Callable, backend, world_size: int, timeout_s: float, startup_s: float, any_group: bool) -> Ended:
    """Start ``world_size`` workers on ``backend``, wait (with deadlines) and collect what they left."""
    dist_backend, init_method = backend.dist_backend, backend.dist_init_method or "env://"
    env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "WORLD_SIZE": str(world_size),
        "LOCAL_WORLD_SIZE": str(world_size),
        "TORCHELASTIC_RUN_ID": f"torchclaims-{os.getpid()}",
    }
    if dist_backend == "gloo":
        interface = loopback_interface()
        if interface:
            env["GLOO_SOCKET_IFNAME"] = interface
    method = start_method(backend)
    context = multiprocessing.get_context(method)
    with tempfile.TemporaryDirectory(prefix="torchclaims-dist-") as outdir:
        launch = Launch(
            job, backend.name, dist_backend, init_method, world_size, timeout_s, outdir, env, any_group=any_group
        )
        name = job.__name__
        workers = [
            context.Process(target=_worker, args=(rank, launch), name=f"{name}-rank{rank}")
            for rank in range(world_size)
        ]
        with main_module_hidden():
            for worker in workers:
                worker.start()
        deadline = time.monotonic() + startup_s + timeout_s
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        hung = [rank for rank, worker in enumerate(workers) if worker.is_alive()]
        for rank in hung:
            workers[rank].kill()
        for worker in workers:
            worker.join(10)
        paths = [os.path.join(outdir, f"rank{rank}.pt") for rank in range(world_size)]
        results = {rank: torch.load(path, weights_only=True) for rank, path in enumerate(paths) if os.path.exists(path)}
        logs = [_tail(os.path.join(outdir, f"rank{rank}.log")) for rank in range(world_size)]
    return Ended(name, method, [worker.exitcode for worker in workers], hung, results, logs)


def run(
    job: Callable,
    *,
    backend,
    world_size: int = 2,
    timeout_s: float = 60.0,
    startup_s: float = 90.0,
) -> list[dict]:
    """Run ``job(rank, world_size, device)`` on ``world_size`` ranks; return each rank's result, rank by rank.

    ``job`` is a function at the top level of an importable module (this one,
    or another ``gallery/_*.py`` helper), so that a spawned worker can import
    it; it returns a dict of CPU tensors and plain values. ``backend`` is a
    torchclaims backend descriptor: it names the device each worker uses, the
    process-group backend and the init method (None: env:// on the loopback
    address). Raises DistributedRunFailed unless every rank finished and wrote
    its result.
    """
    ended = _launch(job, backend, world_size, timeout_s, startup_s, any_group=False)
    dist_backend, init_method = backend.dist_backend, backend.dist_init_method or "env://"
    missing = [rank for rank in range(world_size) if rank not in ended.results]
    layout = {rank: (r["rank"], r["world_size"]) for rank, r in ended.results.items()}
    if any(size != world_size for _, size in layout.values()):
        raise GroupNotFormed(
            f"the workers did not form one process group of {world_size} with {dist_backend!r} and {init_method}: "
            + ", ".join(f"worker {w} joined as rank {r} of a group of {n}" for w, (r, n) in layout.items())
            + (f" (workers {missing} failed)" if missing else "")
        )
    if ended.hung or missing or any(code != 0 for code in ended.codes):
        logs = "\n".join(f"--- rank {rank} log:\n{log}" for rank, log in enumerate(ended.logs))
        raise DistributedRunFailed(
            f"{ended.name} on {world_size} ranks ({dist_backend}, {init_method}, {ended.method}) did not complete: "
            f"exit codes {ended.codes}"
            + (f", killed after {startup_s + timeout_s:g}s: ranks {ended.hung}" if ended.hung else "")
            + (f", no result from ranks {missing}" if missing else "")
            + "\n"
            + logs
        )
    if layout != {rank: (rank, world_size) for rank in range(world_size)}:
        raise DistributedRunFailed(
            f"{ended.name}: workers and ranks do not match, worker: (rank, world size) = {layout}"
        )
    return [ended.results[rank] for rank in range(world_size)]


def run_anyway(
    job: Callable, *, backend, world_size: int = 2, timeout_s: float = 60.0, startup_s: float = 90.0
) -> Ended:
    """Start ``world_size`` workers and run ``job`` in whatever group each one joined.

    For claims about what a process-group backend does when the workers do
    not form one group: each worker that joined a group runs the job in it and
    reports its rank and world size; a worker that failed is described by
    :meth:`Ended.failed`. Nothing is raised: judging is the caller's.
    """
    return _launch(job, backend, world_size, timeout_s, startup_s, any_group=True)


class RankRun:
    """One multi-process run of a job, shared by the checks of a script.

    ``start`` runs inside the first check: it records the process-group
    backend, makes the check unsupported where the backend cannot run the job
    here, and judges that every rank's result is on the configured device.
    With fewer devices than ranks the ranks share them where the backend has
    a process-group backend for that (:func:`place`), and the record says so.
    ``require`` opens each later check: unsupported, with the same reason,
    when the run did not complete.
    """

    def __init__(self, job: Callable, world_size: int = 2):
        self.job, self.world_size = job, world_size
        self.results: list[dict] | None = None
        self.reason = f"{job.__name__} did not complete (see the first check)"

    def start(self, check, backend, device_type: str) -> list[dict]:
        placed = place(backend, self.world_size, share_device=True)
        check.measure("process-group backend", str(placed.backend.dist_backend))
        if placed.shared:
            check.measure("ranks per device", placed.shared)
        self.results, skipped = _attempt_placed(self.job, placed, self.world_size)
        if skipped:
            self.reason = skipped
            check.unsupported(skipped)
        for rank, result in enumerate(self.results):
            check.equal(result["result_device"], device_type, f"rank {rank}: device type of the output")
        return self.results

    def give_up(self, reason: str) -> None:
        """Treat the run as not completed: every later ``require`` is unsupported with ``reason``."""
        self.results, self.reason = None, reason

    def require(self, check) -> list[dict]:
        if self.results is None:
            check.unsupported(self.reason)
        return self.results


@dataclass(frozen=True)
class Placement:
    """How the ranks of one job sit on this machine's devices."""

    backend: object  # the backend the workers run: the job's, or the same with its sharing process-group backend
    shared: str = ""  # several ranks share a device: what the record says about it ('' when one device each)
    reason: str | None = None  # why the job cannot run here; None: it can


def _group_unavailable(dist_backend: str) -> str | None:
    import torch.distributed as dist

    if not dist.is_available():
        return "torch.distributed is not available in this torch build"
    if not dist.is_backend_available(dist_backend):
        return (
            f"the {dist_backend!r} process-group backend is not available here "
            f"(torch.distributed.is_backend_available({dist_backend!r}) is False after importing the backend's modules)"
        )
    return None


def _device_count(backend) -> int | None:
    """The devices of the backend's accelerator here; None when its ranks need no device of their own."""
    accelerator = torch.accelerator.current_accelerator(check_available=True)
    if backend.device_type != "cpu" and accelerator is not None and accelerator.type == backend.device_type:
        return torch.accelerator.device_count()
    return None


def place(backend, world_size: int = 2, share_device: bool = False) -> Placement:
    """Where ``world_size`` ranks of a job on ``backend`` run here, or why they cannot.

    With fewer devices than ranks, ``share_device`` puts the ranks on the devices there are through the
    backend's sharing process-group backend (gloo with CUDA tensors where NCCL needs one GPU per rank);
    without it, or where the backend has none (MPS, XPU, XLA), the shortage is the reason.
    """
    if backend.dist_backend is None:
        return Placement(backend, reason=f"backend {backend.name} names no process-group backend")
    count = _device_count(backend)
    if count is None or count >= world_size:
        return Placement(backend, reason=_group_unavailable(backend.dist_backend))
    short = f"{world_size} ranks need {world_size} {backend.device_type} devices, one each; this machine has {count}"
    sharing = backend.shared_device_dist_backend
    if not share_device or sharing is None:
        return Placement(backend, reason=short)
    why_not = _group_unavailable(sharing)
    if why_not:
        return Placement(backend, reason=f"{short}; {why_not}")
    return Placement(
        dataclasses.replace(backend, dist_backend=sharing),
        shared=f"{world_size} ranks share {count} {backend.device_type} device(s) through {sharing}: "
        f"{backend.dist_backend} needs one device per rank and this machine has {count}",
    )


def attempt(
    job: Callable, backend, world_size: int = 2, share_device: bool = False
) -> tuple[list[dict] | None, str | None]:
    """Run ``job`` where the backend can: (each rank's result, None), or (None, why it cannot run here).

    "Cannot run here" is the backend lacking its process-group backend or one
    device per rank (unless ``share_device``: see :func:`place`), or workers
    that did not form one group; a script reports it as unsupported. A run
    that breaks raises DistributedRunFailed: an error.
    """
    return _attempt_placed(job, place(backend, world_size, share_device), world_size)


def _attempt_placed(job: Callable, placed: Placement, world_size: int) -> tuple[list[dict] | None, str | None]:
    if placed.reason:
        return None, placed.reason
    try:
        return run(job, backend=placed.backend, world_size=world_size), None
    except GroupNotFormed as exc:
        return None, str(exc)
    except DistributedRunFailed as exc:
        if not placed.shared:
            raise
        # The sharing process-group backend lacks some collectives on device tensors (gloo on CUDA):
        # a run that breaks there says nothing about the backend's own process-group backend.
        return None, f"{placed.shared}; the run did not complete that way: {str(exc).splitlines()[0]}"
