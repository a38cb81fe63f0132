"""Jobs for the parallelism claims: FSDP2, tensor and sequence parallelism, pipeline and context parallelism.

Each job runs on every rank under ``distributed.run`` and returns CPU tensors the
claim script compares with one ordinary step in a single process. The jobs
start from the same model and batch as the DDP claim (``_jobs.make_model`` and
``_jobs.make_batch``), take one SGD step with a mean-reduced loss, and return
the full parameters afterwards, so "the same training step" means the same
thing in every claim.

The parallelism packages are imported here, before any worker starts: forked
CPU workers inherit them instead of importing them again.
"""

from __future__ import annotations

import torch
from _jobs import make_batch, make_model, sgd_step, shard
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
from torch.distributed.tensor import Shard
from torch.distributed.tensor.experimental import context_parallel
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module

SEQUENCE, FEATURES = 8, 8  # the sequence-parallel and context-parallel inputs: (batch, sequence, features)


def full(tensor) -> torch.Tensor:
    """A plain CPU tensor: a DTensor gathered onto every rank, a pending collective's result awaited."""
    if hasattr(tensor, "full_tensor"):
        tensor = tensor.full_tensor()
    if hasattr(tensor, "wait"):  # AsyncCollectiveTensor, which tensor-parallel outputs are
        tensor = tensor.wait()
    return tensor.detach().cpu()


def local_shapes(model) -> dict:
    """The shape of the part of each parameter this rank holds."""
    return {name: tuple((p.to_local() if hasattr(p, "to_local") else p).shape) for name, p in model.named_parameters()}


def step_result(model, output, loss) -> dict:
    return {
        "output": full(output),
        "loss": loss.detach().cpu(),
        "params": {name: full(p) for name, p in model.named_parameters()},
        "local_shapes": local_shapes(model),
        "result_device": output.device.type,
    }


# -- FSDP2 -------------------------------------------------------------------------------


def fsdp2_job(rank: int, world_size: int, device: torch.device) -> dict:
    """fully_shard each Linear and the whole model, then one SGD step on this rank's slice of the batch."""
    mesh = init_device_mesh(device.type, (world_size,))
    model = make_model().to(device)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    inputs, targets = make_batch()
    batch = shard(inputs, rank, world_size).to(device), shard(targets, rank, world_size).to(device)
    output, loss = sgd_step(model, model, *batch)
    return step_result(model, output, loss)


# -- tensor and sequence parallelism -----------------------------------------------------


def tensor_parallel_job(rank: int, world_size: int, device: torch.device) -> dict:
    """Column-wise first Linear, row-wise second Linear; every rank sees the whole batch."""
    mesh = init_device_mesh(device.type, (world_size,))
    model = make_model().to(device)
    parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    inputs, targets = make_batch()
    output, loss = sgd_step(model, model, inputs.to(device), targets.to(device))
    return step_result(model, output, loss)


def make_sequence_model() -> torch.nn.Module:
    """LayerNorm, then the column-wise / row-wise pair (seed 0): the usual sequence-parallel block."""
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.LayerNorm(FEATURES), torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, FEATURES)
    )


def make_sequence_batch() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(2)
    return torch.randn(2, SEQUENCE, FEATURES, generator=generator), torch.randn(
        2, SEQUENCE, FEATURES, generator=generator
    )


def sequence_slice(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    n = tensor.shape[1] // world_size
    return tensor[:, rank * n : (rank + 1) * n]


def sequence_parallel_job(rank: int, world_size: int, device: torch.device) -> dict:
    """LayerNorm sharded along the sequence, then tensor parallel; each rank holds its slice of the sequence.

    The loss is this rank's share of the whole-sequence mean (its squared
    errors summed, divided by the number of elements in the whole batch), so
    the ranks' losses add up to the single-process loss.
    """
    mesh = init_device_mesh(device.type, (world_size,))
    model = make_sequence_model().to(device)
    plan = {
        "0": SequenceParallel(),
        "1": ColwiseParallel(input_layouts=Shard(1)),
        "3": RowwiseParallel(output_layouts=Shard(1)),
    }
    parallelize_module(model, mesh, plan)
    inputs, targets = make_sequence_batch()
    local_inputs = sequence_slice(inputs, rank, world_size).to(device)
    local_targets = sequence_slice(targets, rank, world_size).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    output = model(local_inputs)
    loss = ((output - local_targets) ** 2).sum() / targets.numel()
    loss.backward()
    optimizer.step()
    return step_result(model, output, loss)


# -- pipeline parallelism ----------------------------------------------------------------


def pipeline_job(rank: int, world_size: int, device: torch.device) -> dict:
    """Two stages (Linear + Tanh on rank 0, Linear on rank 1), GPipe over 2 micro-batches of the whole batch."""
    if world_size != 2:
        raise ValueError("the pipeline job splits the model into exactly 2 stages")
    model = make_model().to(device)
    stage_module = torch.nn.Sequential(model[0], model[1]) if rank == 0 else torch.nn.Sequential(model[2])
    mine = {id(p) for p in stage_module.parameters()}
    stage = PipelineStage(stage_module, rank, world_size, device)
    schedule = ScheduleGPipe(stage, n_microbatches=2, loss_fn=torch.nn.functional.mse_loss)
    optimizer = torch.optim.SGD(stage_module.parameters(), lr=0.1)
    inputs, targets = make_batch()
    if rank == 0:
        schedule.step(inputs.to(device))
        output, losses = None, []
    else:
        losses = []
        output = schedule.step(target=targets.to(device), losses=losses)
    optimizer.step()
    return {
        "params": {name: p.detach().cpu() for name, p in model.named_parameters() if id(p) in mine},
        "output": None if output is None else output.detach().cpu(),
        "microbatch_losses": [loss.detach().cpu() for loss in losses],
        "result_device": next(stage_module.parameters()).device.type,
    }


# -- context parallelism -----------------------------------------------------------------


def attention_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Query, key and value of shape (batch 1, 2 heads, sequence 8, head size 8), seed 3."""
    generator = torch.Generator().manual_seed(3)
    return tuple(torch.randn(1, 2, SEQUENCE, FEATURES, generator=generator) for _ in range(3))


def context_parallel_job(rank: int, world_size: int, device: torch.device) -> dict:
    """Causal attention with query, key and value sharded along the sequence by context_parallel.

    A backend whose attention kernel context parallelism does not support
    raises NotImplementedError; the job returns that as data, so the script
    can tell "cannot run here" from a broken run.
    """
    from torch.distributed.tensor.experimental._attention import context_parallel_unshard

    mesh = init_device_mesh(device.type, (world_size,))
    query, key, value = (t.to(device) for t in attention_inputs())
    try:
        with context_parallel(mesh, buffers=[query, key, value], buffer_seq_dims=[2, 2, 2]):
            output = torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True)
            (whole,) = context_parallel_unshard(mesh, [output], [2])
    except NotImplementedError as exc:
        return {
            "not_implemented": f"NotImplementedError: {str(exc).splitlines()[0][:300]}",
            "result_device": device.type,
        }
    return {
        "output": whole.detach().cpu(),
        "local_sequence": output.shape[2],
        "result_device": output.device.type,
    }
