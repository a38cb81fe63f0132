"""The jobs the distributed claims run, and the single-process references they are compared with.

A job is ``job(rank, world_size, device) -> dict`` of CPU tensors and plain
values; ``distributed.run`` calls it on every rank inside a process group. Every job
and every reference starts from the same model and batch (seed 0), and a
training step is one SGD step with a mean-reduced loss, so "the same step"
means the same thing in every claim.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch._dynamo  # noqa: F401  DDP's constructor imports it (~3 s); imported once here, forked workers inherit it


def make_model() -> torch.nn.Module:
    """The model every job and every reference starts from (seed 0)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def make_batch(size: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole batch (inputs, targets); rank r of W trains on the r-th of W equal slices."""
    generator = torch.Generator().manual_seed(1)
    return torch.randn(size, 8, generator=generator), torch.randn(size, 1, generator=generator)


def shard(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    n = tensor.shape[0] // world_size
    return tensor[rank * n : (rank + 1) * n]


def sgd_step(model, forward, inputs, targets, lr: float = 0.1):
    """One SGD step with a mean-reduced MSE loss; returns the output and the loss."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    output = forward(inputs)
    loss = torch.nn.functional.mse_loss(output, targets)  # reduction="mean"
    loss.backward()
    optimizer.step()
    return output, loss


def single_process_step(device: torch.device, sync, make=make_model, batch=make_batch) -> dict:
    """The reference: one ordinary SGD step on the whole batch on ``device``, in this process.

    ``sync`` waits for the device (``v.sync``). Returns CPU copies of the
    output, the loss, the gradients and the parameters before and after.
    """
    model = make().to(device)
    before = {name: p.detach().cpu().clone() for name, p in model.named_parameters()}
    inputs, targets = batch()
    output, loss = sgd_step(model, model, inputs.to(device), targets.to(device))
    sync()
    return {
        "output": output.detach().cpu(),
        "loss": loss.detach().cpu(),
        "grads": {name: p.grad.detach().cpu() for name, p in model.named_parameters()},
        "before": before,
        "after": {name: p.detach().cpu() for name, p in model.named_parameters()},
    }


def require_visible_step(check, before: dict, after: dict, atol: float) -> None:
    """Stop ``check`` as unsupported unless the step moved some parameter by more than 10 x ``atol``.

    A comparison at ``atol`` can only tell a correct step from a wrong one (for
    example gradients summed instead of averaged) if the step itself is much
    larger than ``atol``.
    """
    change = max((after[name] - before[name]).abs().max().item() for name in after)
    check.measure("largest change the step makes to a parameter", change, tolerance=f"> 10 x atol {atol:g}")
    if change <= 10 * atol:
        check.unsupported(f"the step changes no parameter by more than {10 * atol:g}: the comparison cannot tell")


def allreduce_job(rank: int, world_size: int, device: torch.device) -> dict:
    """Each rank contributes (rank + 1) * [1, 2, 3, 4]; after all_reduce(SUM) every rank holds the sum."""
    tensor = (rank + 1) * torch.arange(1, 5, dtype=torch.float32).to(device)
    torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.SUM)
    return {"allreduce": tensor.cpu(), "result_device": tensor.device.type}


def judge_allreduce(check, results: list[dict], process_group_backend: str, device_type: str) -> None:
    """Every rank of an allreduce_job run used ``process_group_backend``, its device, and holds the exact sum."""
    expected = sum(rank + 1 for rank in range(len(results))) * torch.arange(1, 5, dtype=torch.float32)
    for rank, result in enumerate(results):
        print(f"rank {rank} on {result['device']} ({result['process_group_backend']}): {result['allreduce'].tolist()}")
        check.equal(
            result["process_group_backend"], process_group_backend, f"rank {rank}: process-group backend of its group"
        )
        check.equal(result["result_device"], device_type, f"rank {rank}: device type of the result")
        check.equal(result["allreduce"], expected, f"rank {rank}: all_reduce result")


def ddp_job(rank: int, world_size: int, device: torch.device) -> dict:
    """One DistributedDataParallel step on this rank's slice of the batch."""
    model = make_model().to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    inputs, targets = make_batch()
    output, loss = sgd_step(
        model, ddp, shard(inputs, rank, world_size).to(device), shard(targets, rank, world_size).to(device)
    )
    return {
        "output": output.detach().cpu(),
        "loss": loss.detach().cpu(),
        "grads": {name: p.grad.detach().cpu() for name, p in model.named_parameters()},
        "params": {name: p.detach().cpu() for name, p in model.named_parameters()},
        "result_device": output.device.type,
    }


def parity_job(rank: int, world_size: int, device: torch.device) -> dict:
    """The job compared rank by rank against CPU/gloo: an all_reduce, then one DDP step."""
    return {**allreduce_job(rank, world_size, device), **ddp_job(rank, world_size, device)}


def allreduce_copies_job(rank: int, world_size: int, device: torch.device) -> dict:
    """all_reduce(SUM) of the same values twice: as a tensor on ``device``, then as a CPU tensor."""
    values = (rank + 1) * torch.arange(1, 5, dtype=torch.float32)
    on_device = values.to(device)
    torch.distributed.all_reduce(on_device, op=torch.distributed.ReduceOp.SUM)
    on_cpu = values.clone()
    torch.distributed.all_reduce(on_cpu, op=torch.distributed.ReduceOp.SUM)
    return {"on_device": on_device.cpu(), "on_cpu": on_cpu, "result_device": on_device.device.type}


def run_spmd_program(source: str, devices: int, timeout: float = 240) -> tuple[object, str]:
    """Run ``source`` in a fresh Python process over ``devices`` XLA CPU devices; (what it saved, why it failed).

    SPMD mode must be chosen before XLA's runtime starts, so an SPMD program
    cannot run in the claim's own process. The program gets the file to
    ``torch.save`` its result to as ``sys.argv[1]``; the failure is "" when it did.
    """
    with tempfile.TemporaryDirectory() as folder:
        taken, program = Path(folder, "out.pt"), Path(folder, "step.py")
        program.write_text(source)
        env = dict(os.environ, CPU_NUM_DEVICES=str(devices), PYTHONPATH=os.pathsep.join(sys.path))  # finds _jobs
        done = subprocess.run(
            [sys.executable, str(program), str(taken)], capture_output=True, text=True, timeout=timeout, env=env
        )
        if taken.exists():
            return torch.load(taken, weights_only=True), ""
        return None, f"exit code {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1][:300]}"
