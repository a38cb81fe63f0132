"""One training step over torch_xla's thread replicas on the PJRT CPU runtime, run in a fresh Python process.

With ``PJRT_DEVICE=CPU`` and ``CPU_NUM_DEVICES=2``, ``torch_xla.launch`` runs
one replica per CPU device, as threads of one process. Replicas started
together were seen to time out in XLA's collective rendezvous
(xla-cpu-thread-replicas); here the replicas are staggered: replica 1 starts
once replica 0 has compiled its step (``wait_for_first_program``). Each
replica takes one SGD step of the distributed claims' model (``_jobs``) on
its slice of the batch, in one of the ways in ``STEPS``,
and saves its parameters; the claim script compares them with one ordinary
step on the CPU.

A failed rendezvous aborts the whole process, so the replicas run in a child
process (``python -m _xla_replicas <step> <folder>``) whose exit status and
last error the script records. ``torch_xla.launch`` starts its worker with
``spawn``, which imports the replica function: it lives here, not in a
gallery script. torch_xla is imported only in that child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from _jobs import make_batch, make_model, shard

from torchclaims.verify.distributed import free_port

DEVICES = 2
ERROR_CHARS = 300  # characters of the child's last error kept


# -- the steps, run in each replica --------------------------------------------------------


def optimizer_step(model, inputs, targets, device) -> torch.Tensor:
    """The torch_xla way: a plain model, and ``xm.optimizer_step``, which all-reduces the gradients first."""
    import torch_xla.core.xla_model as xm

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    xm.optimizer_step(optimizer)
    return loss


def ddp_step(model, inputs, targets, device, gradient_as_bucket_view: bool) -> torch.Tensor:
    """DistributedDataParallel over the ``xla`` process group, as torch_xla's DDP guide writes it.

    The one process group of the process is created by the first replica
    (``init_method='xla://'`` takes the world size from the runtime); the
    other finds it. ``init_sync=False``: with DDP's first broadcast of the
    parameters the replicas were seen waiting in collectives of different
    ids until the rendezvous gave up; every replica builds the same model
    from seed 0, so there is nothing to broadcast.
    """
    import torch.distributed as dist
    import torch_xla.distributed.xla_backend  # noqa: F401  registers the 'xla' process group

    if not dist.is_initialized():
        dist.init_process_group("xla", init_method="xla://")
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, gradient_as_bucket_view=gradient_as_bucket_view, init_sync=False
    )
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(ddp(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss


STEPS = {
    "xm.optimizer_step": optimizer_step,
    "ddp gradient_as_bucket_view=True": lambda *args: ddp_step(*args, gradient_as_bucket_view=True),
    "ddp gradient_as_bucket_view=False": lambda *args: ddp_step(*args, gradient_as_bucket_view=False),
}
PROCESS_GROUP_STEPS = {
    "ddp gradient_as_bucket_view=True",
    "ddp gradient_as_bucket_view=False",
}  # these open a TCP store


def wait_for_first_program(limit_s: float = 120.0, settled_s: float = 1.0) -> None:
    """Return once this process has compiled a program and compiled no other for ``settled_s`` (replica 0 has
    compiled its step and waits in its collective), or after ``limit_s``.

    XLA's CompileTime metric belongs to the process, so every replica sees
    replica 0's compilations in it. With a fixed stagger of a few seconds
    instead, the replicas were seen to time out in the collective's
    rendezvous on a loaded machine.
    """
    import torch_xla.debug.metrics as met

    deadline, seen, since = time.monotonic() + limit_s, 0, time.monotonic()
    while time.monotonic() < deadline:
        count = (met.metric_data("CompileTime") or (0,))[0]
        if count != seen:
            seen, since = count, time.monotonic()
        elif seen and time.monotonic() - since >= settled_s:
            return
        time.sleep(0.05)


def replica(index: int, step: str, folder: str) -> None:
    import torch_xla
    import torch_xla.runtime as xr

    rank, world_size = xr.global_ordinal(), xr.world_size()
    if rank:
        wait_for_first_program()  # the whole step is one program, DDP's included
    device = torch_xla.device()
    model = make_model().to(device)
    inputs, targets = make_batch()
    batch = shard(inputs, rank, world_size).to(device), shard(targets, rank, world_size).to(device)
    loss = STEPS[step](model, *batch, device)
    torch_xla.sync()
    result = {
        "rank": rank,
        "world_size": world_size,
        "loss": loss.detach().cpu(),
        "params": {name: p.detach().cpu() for name, p in model.named_parameters()},
        "result_device": next(model.parameters()).device.type,
    }
    torch.save(result, Path(folder, f"replica{rank}.pt"))
    print(f"replica {rank} of {world_size}: step taken", flush=True)


# -- the launcher, called by the claim script -----------------------------------------------


@dataclass(frozen=True)
class Ended:
    """How the child process running the replicas ended, and what each replica saved."""

    ended: str  # "exit code 0", "killed by SIGABRT"...
    results: dict[int, dict]
    error: str  # the last error or rendezvous line the child printed, or ""

    @property
    def completed(self) -> bool:
        return self.ended == "exit code 0" and len(self.results) == DEVICES


def run(step: str, timeout_s: float = 200.0) -> Ended:
    """Run ``step`` (a key of STEPS) on DEVICES staggered thread replicas in a fresh process."""
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}; known: {sorted(STEPS)}")
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, CPU_NUM_DEVICES=str(DEVICES), PYTHONPATH=os.pathsep.join(sys.path))  # finds _jobs
        if step in PROCESS_GROUP_STEPS:  # xla:// opens a TCP store: on a free port, not its fixed default
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
        done = subprocess.run(
            [sys.executable, "-m", "_xla_replicas", step, folder],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
        )
        results = {}
        for path in sorted(Path(folder).glob("replica*.pt")):
            result = torch.load(path, weights_only=True)
            results[result["rank"]] = result
    ended = (
        f"killed by {signal.Signals(-done.returncode).name}" if done.returncode < 0 else f"exit code {done.returncode}"
    )
    errors = [line.strip() for line in done.stderr.splitlines() if "Error" in line or "rendezvous" in line.lower()]
    return Ended(ended, results, errors[-1][-ERROR_CHARS:] if errors else "")


if __name__ == "__main__":
    import torch_xla

    torch_xla.launch(replica, args=(sys.argv[1], sys.argv[2]))
