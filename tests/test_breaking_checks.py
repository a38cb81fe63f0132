"""Each claim's check, run against a stand-in on which the claim is false, is refuted for the stated reason."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import python_device
import standin_torch_tpu
from breaking import (
    GALLERY,
    SECOND_CPU,
    THREAD_PROCESS_GROUP,
    CpuEvent,
    OnTheDevice,
    a_second_cpu,
    a_second_cpu_backend,
    counters_that_count_nothing,
    device_computes,
    fresh_processes_run,
    gallery_module,
    in_bfloat16,
    lazy_moves,
    moved_to_second_cpu,
    outcomes,
    refuted,
    run_gallery,
    thread_replicas,
    triton_on_the_cpu,
)
from torchclaims.backends import all_backends
from torchclaims.evidence.records import Verdict

pytestmark = pytest.mark.claims  # runs the real claim scripts against broken stand-ins


def test_eager_mode_holds_on_an_eager_stand_in(monkeypatch, tmp_path):
    record = run_gallery("torchneuron_eager_mode", monkeypatch, tmp_path, as_backend="neuron")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_eager_mode_is_refuted_on_a_lazy_backend(monkeypatch, tmp_path):
    lazy_moves(monkeypatch)
    record = run_gallery("torchneuron_eager_mode", monkeypatch, tmp_path, as_backend="neuron")
    assert refuted(record, "not when a value is read", "the work waited for the read"), outcomes(record)


def test_eager_mode_is_refuted_where_the_loop_compiles_behind_a_read(monkeypatch, tmp_path):
    # A device that hands the work behind each read to torch.compile: the values agree, but graphs are compiled.
    compiled_sum = torch.compile(lambda t: t.sum(), backend="eager")
    device_computes(monkeypatch, torch.Tensor.item, lambda t: compiled_sum(t.as_subclass(torch.Tensor)).item())
    record = run_gallery("torchneuron_eager_mode", monkeypatch, tmp_path, as_backend="neuron")
    assert refuted(record, "with no compile or sync call", "graphs compiled by Dynamo during the loop: got"), outcomes(
        record
    )


def test_checkpoint_map_location_holds_on_the_cpu(monkeypatch, tmp_path):
    record = run_gallery("checkpoint_map_location", monkeypatch, tmp_path)
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_a_checkpoint_that_does_not_move_is_refuted(monkeypatch, tmp_path):
    # A torch.load that puts everything on the CPU, whatever the checkpoint says it was saved from.
    load = torch.load
    monkeypatch.setattr(torch, "load", lambda f, map_location=None, **kw: load(f, map_location="cpu", **kw))
    record = run_gallery("checkpoint_map_location", monkeypatch, tmp_path)
    assert refuted(
        record, "returns to the device it was saved from", "devices after loading the checkpoint labelled 'meta': got"
    ), outcomes(record)
    assert refuted(record, "from an unavailable device without map_location raises", "without that device"), outcomes(
        record
    )


class StandInGpu:
    """torch.cuda's view of a stand-in GPU, and a generator drawing as PyTorch's CUDA kernel would on
    ``draws_like_sms`` SMs (None: the CPU's own generator, a device with a different RNG)."""

    SMS, THREADS = 8, 2048

    def __init__(self, monkeypatch, draws_like_sms):
        monkeypatch.syspath_prepend(str(GALLERY))
        import _philox

        props = SimpleNamespace(
            name="stand-in GPU", multi_processor_count=self.SMS, max_threads_per_multi_processor=self.THREADS
        )
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: props)
        if draws_like_sms is None:
            return
        like = (draws_like_sms, self.THREADS)
        monkeypatch.setattr(
            torch,
            "randint",
            lambda low, high, size, device=None: torch.from_numpy(_philox.randint(size[0], high, *like)),
        )
        monkeypatch.setattr(
            torch, "randn", lambda n, device=None: torch.from_numpy(_philox.randn(n, *like).astype("float32"))
        )


def test_rng_sm_dependence_holds_on_a_gpu_that_draws_as_its_sm_count_gives(monkeypatch, tmp_path):
    StandInGpu(monkeypatch, draws_like_sms=StandInGpu.SMS)
    record = run_gallery("cuda_rng_sm_dependence", monkeypatch, tmp_path, as_backend="cuda")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_rng_sm_dependence_is_refuted_on_a_device_with_a_different_rng(monkeypatch, tmp_path):
    StandInGpu(monkeypatch, draws_like_sms=None)
    record = run_gallery("cuda_rng_sm_dependence", monkeypatch, tmp_path, as_backend="cuda")
    assert refuted(record, "grid read back", "threads launched for"), outcomes(record)


def test_rng_sm_dependence_is_refuted_when_the_launch_ignores_the_sm_count(monkeypatch, tmp_path):
    # The GPU reports 8 SMs but launches the grid of 4: what it draws does not follow its SM count.
    StandInGpu(monkeypatch, draws_like_sms=StandInGpu.SMS // 2)
    record = run_gallery("cuda_rng_sm_dependence", monkeypatch, tmp_path, as_backend="cuda")
    assert refuted(record, "grid read back", "threads launched for"), outcomes(record)
    assert refuted(record, "torch.randint equals the rebuild", "elements differ from the rebuild for 8 SMs"), outcomes(
        record
    )
    assert refuted(record, "torch.randn equals the rebuild", "randn differs from the rebuild by up to"), outcomes(
        record
    )


def test_rng_sm_dependence_is_refuted_where_a_seeded_draw_does_not_repeat(monkeypatch, tmp_path):
    import itertools

    StandInGpu(monkeypatch, draws_like_sms=StandInGpu.SMS)
    randint, calls = torch.randint, itertools.count()  # the stand-in's draw, shifted by one more at every call
    monkeypatch.setattr(
        torch, "randint", lambda low, high, size, device=None: (randint(low, high, size, device) + next(calls)) % high
    )
    record = run_gallery("cuda_rng_sm_dependence", monkeypatch, tmp_path, as_backend="cuda")
    assert refuted(record, "re-seeding reproduces the sample", "two seeded draws of 2**22 integers: values differ"), (
        outcomes(record)
    )


def test_int_scatter_is_refuted_on_a_backend_that_rounds_through_float32(monkeypatch, tmp_path):
    scatter_add_ = torch.Tensor.scatter_add_

    def through_float32(self, dim, index, src):
        rounded = scatter_add_(self.float(), dim, index, src.float())
        return self.copy_(rounded.to(self.dtype))

    monkeypatch.setattr(torch.Tensor, "scatter_add_", through_float32)
    record = run_gallery("int_scatter_precision", monkeypatch, tmp_path)
    assert refuted(record, "scatter_add_ is exact or raises (eager)", "not the exact sums"), outcomes(record)


def test_int_scatter_is_refuted_where_the_neuron_compiler_is_exact(monkeypatch, tmp_path):
    # AWS says the Neuron compiler converts integer scatter operands to f32: an exact compiled result contradicts it.
    import torch._dynamo

    register = lambda: torch._dynamo.register_backend(lambda graph, inputs: graph.forward, name="neuron")  # noqa: E731 - child only
    record = run_gallery(
        "int_scatter_precision", monkeypatch, tmp_path, as_backend="neuron", compile_backend="neuron", in_child=register
    )
    assert refuted(record, "rounded through f32", "not the float32-rounded sums"), outcomes(record)


def test_compile_on_first_call_is_refuted_where_torch_compile_compiles_nothing(monkeypatch, tmp_path):
    def compiles_nothing(model, **options):
        """Runs eagerly, never compiles; its one call here takes eager's own first-call costs (kernel
        and allocator warm-up), which a loaded machine stretches past the claim's ratio."""
        with torch.no_grad():
            model(torch.zeros(32, 64, device=next(model.parameters()).device))
        return model

    monkeypatch.setattr(torch, "compile", compiles_nothing)
    record = run_gallery("compile_jit_first_call", monkeypatch, tmp_path)
    assert refuted(record, "the first call compiles a graph", "graphs after the first call: got 0"), outcomes(record)
    assert refuted(record, "the first call takes markedly longer", "x the repeat calls"), outcomes(record)


def test_compile_matches_eager_is_refuted_by_a_compiler_that_changes_the_result(monkeypatch, tmp_path):
    import torch._dynamo

    def off_by_a_little(graph, inputs):
        return lambda *args: [
            out + 1e-2 if isinstance(out, torch.Tensor) and out.is_floating_point() else out
            for out in graph.forward(*args)
        ]

    torch._dynamo.register_backend(off_by_a_little, name="off_by_a_little")
    record = run_gallery(
        "compile_matches_eager", monkeypatch, tmp_path, as_backend="cpu", compile_backend="off_by_a_little"
    )
    assert refuted(record, "forward outputs match eager", "logits: max abs error"), outcomes(record)


def test_autocast_is_refuted_where_autocast_does_nothing(monkeypatch, tmp_path):
    import contextlib

    monkeypatch.setattr(torch, "autocast", lambda device_type, **options: contextlib.nullcontext())
    record = run_gallery("autocast_device_type", monkeypatch, tmp_path)
    assert refuted(record, "returns the device type's autocast dtype", "dtype of torch.mm inside autocast: got"), (
        outcomes(record)
    )


# Code written for CUDA on a host without CUDA: each stand-in is a torch whose CUDA call does
# what the claim says it does not.


def test_cuda_calls_raise_is_refuted_where_tensor_cuda_returns_the_tensor(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *args, **kwargs: self)  # silently stays on the CPU
    record = run_gallery("cuda_calls_raise_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "every call that needs the CUDA device raises", "tensor.cuda() returned"), outcomes(record)


def test_cuda_event_timing_is_refuted_where_events_time_the_cpu(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "Event", CpuEvent)
    record = run_gallery("cuda_event_timing_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "timing with torch.cuda.Event raises", "without a CUDA GPU"), outcomes(record)


def test_cuda_autocast_is_refuted_where_autocast_cuda_casts_to_bfloat16(monkeypatch, tmp_path):
    autocast = torch.autocast
    monkeypatch.setattr(torch, "autocast", lambda device_type, **options: autocast("cpu", dtype=torch.bfloat16))
    record = run_gallery("cuda_autocast_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "torch.autocast('cuda') raises nothing", "got torch.bfloat16"), outcomes(record)


def test_cuda_gradscaler_is_refuted_where_the_scaler_stays_enabled(monkeypatch, tmp_path):
    scaler = torch.amp.GradScaler
    monkeypatch.setattr(
        torch.amp, "GradScaler", lambda device="cuda", **options: scaler("cpu", **options)
    )  # scales on the CPU
    record = run_gallery("cuda_gradscaler_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "the CUDA GradScaler leaves the loss unscaled", "the loss was scaled by 65536"), outcomes(
        record
    )


def test_cudnn_flags_are_refuted_where_deterministic_turns_on_deterministic_algorithms(monkeypatch, tmp_path):
    from torch.backends import ContextProp

    def deterministic(value):
        torch._C._set_cudnn_deterministic(value)
        torch.use_deterministic_algorithms(value)

    monkeypatch.setattr(
        type(torch.backends.cudnn), "deterministic", ContextProp(torch._C._get_cudnn_deterministic, deterministic)
    )
    record = run_gallery("cudnn_flags_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "the cuDNN flags are accepted", "torch.are_deterministic_algorithms_enabled(): got True"), (
        outcomes(record)
    )


def test_cuda_memory_stats_are_refuted_where_they_count_the_cpu_block(monkeypatch, tmp_path):
    for counter in ("memory_allocated", "max_memory_allocated"):
        monkeypatch.setattr(torch.cuda, counter, lambda device=None: 64 * 2**20)
    record = run_gallery("cuda_memory_stats_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "memory counters return 0", "torch.cuda.memory_allocated() reported 64.00 MiB"), outcomes(
        record
    )


def test_cuda_manual_seed_all_is_refuted_where_it_reseeds_the_cpu_generator(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "manual_seed_all", torch.default_generator.manual_seed)
    record = run_gallery("cuda_manual_seed_all_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "torch.cuda.manual_seed_all(0) raises nothing", "the draws repeated"), outcomes(record)


def test_pin_memory_is_refuted_where_pinning_succeeds(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self, *args: self.clone())
    record = run_gallery("pin_memory_without_accelerator", monkeypatch, tmp_path)
    assert refuted(record, "pin_memory() raises", "pin_memory() returned a tensor"), outcomes(record)


def test_non_blocking_copy_is_refuted_where_it_returns_before_the_data_arrives(monkeypatch, tmp_path):
    to = torch.Tensor.to

    def early(self, *args, non_blocking=False, **kwargs):
        out = to(self, *args, **kwargs)
        return torch.zeros_like(out) if non_blocking else out  # what a copy read before it lands can hold

    monkeypatch.setattr(torch.Tensor, "to", early)
    record = run_gallery("pin_memory_without_accelerator", monkeypatch, tmp_path)
    assert refuted(record, "non_blocking=True copy", "the non_blocking copy and the blocking copy: values differ"), (
        outcomes(record)
    )


def test_nccl_is_refuted_where_a_nccl_group_falls_back_to_gloo(monkeypatch, tmp_path):
    import torch.distributed as dist

    init = dist.init_process_group
    monkeypatch.setattr(
        dist, "init_process_group", lambda backend, **kw: init("gloo" if backend == "nccl" else backend, **kw)
    )
    record = run_gallery("nccl_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "init_process_group('nccl') raises", "a NCCL process group started"), outcomes(record)


def test_cuda_extension_is_refuted_where_a_cuda_extension_builds(monkeypatch, tmp_path):
    import torch.utils.cpp_extension

    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda name, **kw: SimpleNamespace(__name__=name))
    record = run_gallery("cuda_extension_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "building a CUDA C++ extension raises", "a CUDA extension was built"), outcomes(record)


def test_triton_kernel_is_refuted_where_triton_runs_it_on_the_cpu(monkeypatch, tmp_path):
    triton_on_the_cpu(monkeypatch)
    record = run_gallery("cuda_extension_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "a Triton kernel cannot be launched", "a Triton kernel ran on cpu"), outcomes(record)


def test_hf_causal_lm_device_switch_holds_on_a_second_cpu(monkeypatch, tmp_path):
    a_second_cpu(monkeypatch)
    record = run_gallery("hf_causal_lm_device_switch", monkeypatch, tmp_path)
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_hf_causal_lm_device_switch_is_refuted_where_the_device_keeps_weights_in_bfloat16(monkeypatch, tmp_path):
    a_second_cpu(monkeypatch)
    moved_to_second_cpu(monkeypatch, in_bfloat16)
    record = run_gallery("hf_causal_lm_device_switch", monkeypatch, tmp_path)
    assert refuted(record, "the loss of every step", "weights after the last step: max abs error"), outcomes(record)


def test_hf_causal_lm_generate_is_refuted_where_the_device_generates_other_tokens(monkeypatch, tmp_path):
    def generates_one_token_short(model):
        generate = model.generate
        model.generate = lambda *args, **kwargs: generate(*args, **kwargs)[:, :-1]

    a_second_cpu(monkeypatch)
    moved_to_second_cpu(monkeypatch, generates_one_token_short)
    record = run_gallery("hf_causal_lm_device_switch", monkeypatch, tmp_path)
    assert refuted(record, "generate() gives the CPU's tokens", "generated tokens: got"), outcomes(record)
    assert refuted(record, "generate() run on the device unchanged", "length of the generated sequence"), outcomes(
        record
    )


def test_device_switch_parity_is_refuted_where_the_device_keeps_weights_in_bfloat16(monkeypatch, tmp_path):
    a_second_cpu(monkeypatch)
    moved_to_second_cpu(monkeypatch, in_bfloat16)
    record = run_gallery("device_switch_parity", monkeypatch, tmp_path)
    assert refuted(record, "forward output matches the CPU reference", "logits: max abs error"), outcomes(record)


def test_rng_streams_per_device_is_refuted_where_the_device_draws_the_cpu_stream(monkeypatch, tmp_path):
    a_second_cpu(monkeypatch)  # a device that samples with the CPU's generator
    record = run_gallery("rng_streams_per_device", monkeypatch, tmp_path)
    assert refuted(record, "drawn directly on the device", "reproduces the CPU stream byte for byte"), outcomes(record)


def test_compile_failure_raises_is_refuted_where_errors_are_suppressed_by_default(monkeypatch, tmp_path):
    import torch._dynamo

    # Set in the child: dynamo's config does not take a monkeypatch's undo.
    suppress = lambda: setattr(torch._dynamo.config, "suppress_errors", True)  # noqa: E731
    record = run_gallery("compile_failure_raises", monkeypatch, tmp_path, in_child=suppress)
    assert refuted(record, "suppress_errors is False by default", "got True"), outcomes(record)
    assert refuted(record, "a failing compiler backend makes the compiled", "the function ran eagerly without an error")


def test_recompile_dynamic_shapes_is_refuted_where_dynamic_false_is_ignored(monkeypatch, tmp_path):
    compile = torch.compile
    monkeypatch.setattr(torch, "compile", lambda fn, dynamic=None, **kw: compile(fn, dynamic=dynamic or None, **kw))
    record = run_gallery("recompile_dynamic_shapes", monkeypatch, tmp_path)
    assert refuted(record, "dynamic=False builds one graph per distinct length", "distinct lengths: got 2"), outcomes(
        record
    )


def test_tf32_defaults_are_refuted_where_a_fresh_process_allows_tf32_matmuls(monkeypatch, tmp_path):
    fresh_processes_run(monkeypatch, tmp_path, "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n")
    record = run_gallery("tf32_defaults", monkeypatch, tmp_path)
    assert refuted(record, "defaults in a fresh process", "allow_tf32: got True, expected False"), outcomes(record)


def test_accelerator_agnostic_is_refuted_where_is_available_answers_true_without_one(monkeypatch, tmp_path):
    fresh_processes_run(monkeypatch, tmp_path, "import torch\ntorch.accelerator.is_available = lambda: True\n")
    record = run_gallery("torch_accelerator_agnostic", monkeypatch, tmp_path)
    assert refuted(record, "with no accelerator", "is_available(): got True"), outcomes(record)


def test_memory_apis_are_refuted_where_the_counters_count_nothing(monkeypatch, tmp_path):
    counters_that_count_nothing(monkeypatch, a_second_cpu(monkeypatch))
    record = run_gallery("memory_apis_portable", monkeypatch, tmp_path)
    assert refuted(record, "memory_allocated() grows by at least 64 MiB", "memory_allocated() grew by 0.00 MiB"), (
        outcomes(record)
    )


def test_backend_autoload_is_refuted_where_autoload_off_is_ignored(monkeypatch, tmp_path):
    fresh_processes_run(monkeypatch, tmp_path, "import os\nos.environ.pop('TORCH_DEVICE_BACKEND_AUTOLOAD', None)\n")
    record = run_gallery("backend_autoload", monkeypatch, tmp_path)
    assert refuted(record, "TORCH_DEVICE_BACKEND_AUTOLOAD=0 skips it", "(TORCH_DEVICE_BACKEND_AUTOLOAD=0): got True"), (
        outcomes(record)
    )


def test_compile_backend_is_refuted_where_the_backend_package_registers_no_compiler(monkeypatch, tmp_path):
    # A Neuron host whose torch-neuronx registered no 'neuron' torch.compile backend (none is installed here).
    record = run_gallery("compile_backend_and_modes", monkeypatch, tmp_path, as_backend="neuron")
    assert refuted(record, "registered by that name", "'neuron' is not in torch._dynamo.list_backends"), outcomes(
        record
    )


# Distributed jobs on the CPU fork the script's process, so the workers inherit what the test patched.


def test_distributed_collectives_are_refuted_where_all_reduce_reduces_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.distributed, "all_reduce", lambda tensor, op=None, group=None, async_op=False: None)
    record = run_gallery("distributed_collectives", monkeypatch, tmp_path)
    assert refuted(record, "all_reduce(SUM) across 2 processes", "rank 0: all_reduce result: values differ"), outcomes(
        record
    )


def test_ddp_is_refuted_where_ddp_averages_no_gradients(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.nn.parallel, "DistributedDataParallel", lambda module, **options: module)
    record = run_gallery("ddp_matches_single_process", monkeypatch, tmp_path)
    assert refuted(record, "both ranks hold the same parameters", "rank 1 vs rank 0: max abs error"), outcomes(record)


def test_fsdp2_is_refuted_where_fully_shard_shards_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(gallery_module(monkeypatch, "_parallel"), "fully_shard", lambda module, **options: module)
    record = run_gallery("fsdp2_matches_single_process", monkeypatch, tmp_path)
    assert refuted(record, "each parameter is sharded", "one rank holds all 16 rows, the parameter is not sharded"), (
        outcomes(record)
    )


def test_tensor_parallel_is_refuted_where_parallelize_module_splits_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(
        gallery_module(monkeypatch, "_parallel"), "parallelize_module", lambda module, mesh, plan: module
    )
    record = run_gallery("tensor_sequence_parallel", monkeypatch, tmp_path)
    assert refuted(record, "tensor parallel: the layers are split", "one rank holds the whole parameter"), outcomes(
        record
    )


def test_context_parallel_is_refuted_where_each_rank_computes_the_whole_sequence(monkeypatch, tmp_path):
    import contextlib

    monkeypatch.setattr(
        gallery_module(monkeypatch, "_parallel"), "context_parallel", lambda mesh, **options: contextlib.nullcontext()
    )
    record = run_gallery("context_parallel_attention", monkeypatch, tmp_path)
    assert refuted(record, "each with half the sequence", "rank 0: positions it computed: got 8, expected 4"), outcomes(
        record
    )
    assert refuted(record, "the output gathered from the ranks", "rank 0: gathered output: shape"), outcomes(record)


def test_pipeline_parallel_is_refuted_where_micro_batch_gradients_are_summed(monkeypatch, tmp_path):
    from torch.distributed.pipelining import ScheduleGPipe

    def summing(stage, n_microbatches, **options):
        return ScheduleGPipe(stage, n_microbatches, scale_grads=False, **options)

    monkeypatch.setattr(gallery_module(monkeypatch, "_parallel"), "ScheduleGPipe", summing)
    record = run_gallery("pipeline_parallel_matches_single_process", monkeypatch, tmp_path)
    assert refuted(record, "each stage's parameters match", "rank 0 0.weight: max abs error"), outcomes(record)


# The XLA operator defects, each reproduced on a second CPU: the device computes what torch_xla 2.9 was found to.


def test_xla_amax_is_refuted_where_the_device_returns_the_input_unreduced(monkeypatch, tmp_path):
    device_computes(monkeypatch, torch.amax, lambda t, dim=(), keepdim=False: t.clone())
    record = run_gallery("xla_amax_amin_no_dim", monkeypatch, tmp_path)
    assert refuted(record, "amax(x) reduces over every dimension", "vector [4.8, -7.4]: shape (2,) differs from ()"), (
        outcomes(record)
    )


def test_xla_chunk_cat_is_refuted_where_the_device_returns_zeros(monkeypatch, tmp_path):
    device_computes(
        monkeypatch,
        torch._chunk_cat,
        lambda tensors, dim, num_chunks: torch._chunk_cat(tensors, dim, num_chunks).zero_(),
    )
    record = run_gallery("xla_chunk_cat", monkeypatch, tmp_path)
    assert refuted(record, "_chunk_cat on the device", "chunks: values differ"), outcomes(record)


def test_xla_norm_inf_is_refuted_where_the_device_sums_instead(monkeypatch, tmp_path):
    device_computes(monkeypatch, torch.norm, lambda x, p="fro", *args, **kwargs: x.abs().sum())
    record = run_gallery("xla_norm_inf", monkeypatch, tmp_path)
    assert refuted(record, "torch.norm(x, inf) is the largest", "vector [3, -7, 2]: max abs error 5"), outcomes(record)


def test_xla_avg_pool_is_refuted_where_the_device_ignores_divisor_override(monkeypatch, tmp_path):
    import torch.nn.functional as F

    device_computes(
        monkeypatch, F.avg_pool2d, lambda x, kernel, divisor_override=None, **options: F.avg_pool2d(x, kernel)
    )
    record = run_gallery("xla_avg_pool_divisor_override", monkeypatch, tmp_path)
    assert refuted(record, "plain, then divisor_override=3", "divisor_override=3: max abs error"), outcomes(record)


def test_xla_count_nonzero_is_refuted_where_the_device_counts_in_int32(monkeypatch, tmp_path):
    device_computes(monkeypatch, torch.count_nonzero, lambda t, dim=None: torch.count_nonzero(t, dim).int())
    record = run_gallery("xla_count_nonzero_dtype", monkeypatch, tmp_path)
    assert refuted(record, "count_nonzero of a tensor of float32", "all elements: dtype: got 'torch.int32'"), outcomes(
        record
    )


def test_xla_nuclear_norm_is_refuted_where_the_device_computes_another_norm(monkeypatch, tmp_path):
    device_computes(monkeypatch, torch.linalg.matrix_norm, lambda a, ord="fro", **options: torch.linalg.matrix_norm(a))
    record = run_gallery("xla_nuclear_norm_batch", monkeypatch, tmp_path)
    assert refuted(record, "nuclear norm of a batch of two", "norms: max abs error"), outcomes(record)


def test_xla_pixel_shuffle_is_refuted_where_the_device_keeps_the_first_factor(monkeypatch, tmp_path):
    device_computes(monkeypatch, torch.pixel_shuffle, lambda x, factor: torch.pixel_shuffle(x, 2))
    record = run_gallery("xla_pixel_shuffle_factor_order", monkeypatch, tmp_path)
    assert refuted(record, "factors 2 then 4", "factor 4: shape (1, 4, 6, 6), CPU (1, 1, 12, 12)"), outcomes(record)


def test_xla_slice_negative_start_is_refuted_where_the_device_raises_instead_of_clamping(monkeypatch, tmp_path):
    def no_clamping(t, index):
        if any(
            isinstance(s, slice) and (s.start or 0) < -max(t.shape)
            for s in (index if isinstance(index, tuple) else (index,))
        ):
            raise IndexError("slice start out of range")
        return t[index]

    device_computes(monkeypatch, torch.Tensor.__getitem__, no_clamping)
    record = run_gallery("xla_slice_negative_start", monkeypatch, tmp_path)
    assert refuted(record, "x[-15:] (start before the front)", "raised IndexError: slice start out of range"), outcomes(
        record
    )
    assert outcomes(record)["x[2:100] (stop past the end) gives the CPU's result"] is Verdict.HOLDS


def test_xla_zero_dim_reductions_are_refuted_where_the_device_rejects_dim_0(monkeypatch, tmp_path):
    def no_dim_0(t, *args, **kwargs):
        raise IndexError("Dimension out of range")

    device_computes(monkeypatch, torch.Tensor.sum, no_dim_0)
    record = run_gallery("xla_zero_dim_reductions", monkeypatch, tmp_path)
    assert refuted(record, "every reduction with dim=0", "raise on the device: sum"), outcomes(record)


def test_training_args_device_is_refuted_where_transformers_selects_another_device(monkeypatch, tmp_path):
    import transformers

    monkeypatch.setattr(transformers.TrainingArguments, "device", property(lambda self: torch.device("meta")))
    record = run_gallery("hf_training_args_device", monkeypatch, tmp_path)
    assert refuted(record, "TrainingArguments(output_dir=...).device", "got 'meta', expected 'cpu'"), outcomes(record)


def test_hf_static_cache_is_refuted_where_generate_ignores_cache_implementation(monkeypatch, tmp_path):
    import transformers

    generate = transformers.LlamaForCausalLM.generate
    dynamic = lambda model, *args, cache_implementation=None, **kwargs: generate(model, *args, **kwargs)  # noqa: E731
    monkeypatch.setattr(transformers.LlamaForCausalLM, "generate", dynamic)
    record = run_gallery("hf_static_cache_shapes", monkeypatch, tmp_path)
    assert refuted(record, "every layer's K/V cache has one shape", "different K/V shape sets during decoding"), (
        outcomes(record)
    )


def get_max_memory_probing_xla(max_memory=None):
    """accelerate's get_max_memory with an XLA branch (the script reads this function's source)."""
    import accelerate.utils

    if accelerate.utils.is_torch_xla_available():
        return {"xla": 2**30}
    return {"cpu": 2**30}


def test_hf_device_map_auto_is_refuted_where_get_max_memory_probes_xla(monkeypatch, tmp_path):
    import accelerate.utils

    monkeypatch.setattr(accelerate.utils, "get_max_memory", get_max_memory_probing_xla)
    record = run_gallery("hf_device_map_auto", monkeypatch, tmp_path)
    assert refuted(
        record, "get_max_memory probes the listed device families", "PrivateUse1 names in get_max_memory: got"
    ), outcomes(record)


def dispatch_model_to_the_index(model, device_map, **options):
    """An accelerate whose dispatch_model moves a one-device map to the integer index, whatever family it detects."""
    device = device_map[""]
    model.to(device)
    return model


def test_accelerate_dispatch_is_refuted_where_an_integer_device_is_not_rewritten(monkeypatch, tmp_path):
    import accelerate
    import accelerate.big_modeling

    for module in (accelerate, accelerate.big_modeling):
        monkeypatch.setattr(module, "dispatch_model", dispatch_model_to_the_index)
    record = run_gallery("accelerate_dispatch_int_device", monkeypatch, tmp_path)
    assert refuted(record, "neuron detected", "dispatch_model settled on 0, not 'neuron:0'"), outcomes(record)
    assert outcomes(record)["control: with no family detected, dispatch_model calls model.to(0)"] is Verdict.HOLDS


def test_accelerate_neuron_launch_is_refuted_where_accelerate_has_no_neuron_branch(monkeypatch, tmp_path):
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType

    # What an accelerate without the Neuron branch picks for a multi-process launch on a host it does not recognise.
    no_neuron_branch = lambda self, cpu=False, sagemaker_dp=False, backend=None: ("gloo", DistributedType.MULTI_CPU)  # noqa: E731
    monkeypatch.setattr(PartialState, "_prepare_backend", no_neuron_branch)
    record = run_gallery("accelerate_neuron_bf16_autocast", monkeypatch, tmp_path)
    assert refuted(
        record, "gets the 'neuron' backend and MULTI_NEURON", "process-group backend accelerate picks: got 'gloo'"
    ), outcomes(record)


def test_xla_gloo_device_tensors_is_refuted_where_gloo_leaves_device_tensors_unreduced(monkeypatch, tmp_path):
    all_reduce = torch.distributed.all_reduce
    device_computes(monkeypatch)
    unreduced_on_the_device = lambda t, *a, **kw: None if isinstance(t, OnTheDevice) else all_reduce(t, *a, **kw)  # noqa: E731
    monkeypatch.setattr(torch.distributed, "all_reduce", unreduced_on_the_device)
    record = run_gallery("xla_gloo_device_tensors", monkeypatch, tmp_path)
    assert refuted(record, "all_reduce of device tensors", "rank 0: all_reduce of the tensors on cpu: values differ"), (
        outcomes(record)
    )


AVERAGING_OPTIMIZER_STEP = """
import os, threading
import torch_xla.runtime as xr
_barrier, _grads = threading.Barrier(int(os.environ["CPU_NUM_DEVICES"])), {}
def optimizer_step(optimizer):
    params = [p for group in optimizer.param_groups for p in group["params"]]
    _grads[xr.global_ordinal()] = [p.grad.clone() for p in params]
    _barrier.wait()
    for i, p in enumerate(params):
        p.grad.copy_(sum(grads[i] for grads in _grads.values()) / len(_grads))
    _barrier.wait()
    optimizer.step()
"""


def test_xla_replicas_optimizer_step_holds_where_it_averages_the_gradients(monkeypatch, tmp_path):
    thread_replicas(monkeypatch, tmp_path, xla_model=AVERAGING_OPTIMIZER_STEP)
    record = run_gallery("xla_replicas_optimizer_step", monkeypatch, tmp_path, as_backend="xla")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_xla_replicas_optimizer_step_is_refuted_where_it_combines_no_gradients(monkeypatch, tmp_path):
    own_step = "def optimizer_step(optimizer):\n    optimizer.step()\n"  # each replica steps on its own gradients
    thread_replicas(monkeypatch, tmp_path, xla_model=own_step)
    record = run_gallery("xla_replicas_optimizer_step", monkeypatch, tmp_path, as_backend="xla")
    assert outcomes(record)["2 staggered thread replicas complete the step"] is Verdict.HOLDS
    assert refuted(record, "one step on the whole batch", "replica 0 0.weight: max abs error"), outcomes(record)


def test_xla_ddp_bucket_view_holds_with_both_settings_where_the_group_sums(monkeypatch, tmp_path):
    summing = "COMBINE = lambda mine, every: sum(every)\n" + THREAD_PROCESS_GROUP
    thread_replicas(monkeypatch, tmp_path, xla_backend=summing)
    record = run_gallery("xla_ddp_gradient_as_bucket_view", monkeypatch, tmp_path, as_backend="xla")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_xla_ddp_bucket_view_is_refuted_where_the_group_reduces_nothing(monkeypatch, tmp_path):
    unreduced = "COMBINE = lambda mine, every: mine\n" + THREAD_PROCESS_GROUP  # each replica keeps its own gradient
    thread_replicas(monkeypatch, tmp_path, xla_backend=unreduced)
    record = run_gallery("xla_ddp_gradient_as_bucket_view", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "gradient_as_bucket_view=False", "replica 0 0.weight: max abs error"), outcomes(record)


def test_xla_ddp_over_gloo_is_refuted_where_gloo_takes_the_device_model(monkeypatch, tmp_path):
    a_second_cpu_backend(monkeypatch, "xla")  # a device whose tensors gloo takes: DDP over gloo trains on it
    record = run_gallery("xla_ddp_over_gloo", monkeypatch, tmp_path, as_backend="xla")
    took_it = "worker 0 took the DDP step over gloo without an error"
    assert refuted(record, "DDP over gloo raises", took_it), outcomes(record)


CRASH_ON_UNBATCHED_NLL_LOSS = """
import os, torch.nn.functional as F
nll_loss = F.nll_loss
F.nll_loss = lambda input, *args, **kwargs: os.abort() if input.dim() == 1 else nll_loss(input, *args, **kwargs)
"""


def test_xla_nll_loss_is_refuted_where_an_unbatched_call_kills_the_process(monkeypatch, tmp_path):
    a_second_cpu(monkeypatch)
    fresh_processes_run(monkeypatch, tmp_path, CRASH_ON_UNBATCHED_NLL_LOSS)
    record = run_gallery("xla_nll_loss_unbatched", monkeypatch, tmp_path)
    assert refuted(record, "nll_loss of an unbatched (3,) input", "the process running the call killed by SIGABRT"), (
        outcomes(record)
    )
    assert outcomes(record)["nll_loss of a batched (1, 3) input returns the CPU's loss"] is Verdict.HOLDS


def neff_writer(monkeypatch, tmp_path):
    """A Neuron compile cache of the test's own (NEURON_COMPILE_CACHE_URL), and what writes one more .neff in it."""
    import itertools

    cache, count = tmp_path / "neuron-cache", itertools.count()
    cache.mkdir()
    monkeypatch.setenv("NEURON_COMPILE_CACHE_URL", str(cache))
    return lambda: (cache / f"{next(count)}.neff").touch()


def run_shape_changes(monkeypatch, tmp_path, compile_graph):
    """shape_change_recompiles on a Neuron stand-in whose torch.compile backend is ``compile_graph``."""
    compiler = registered_compiler(compile_graph)
    return run_gallery(
        "shape_change_recompiles",
        monkeypatch,
        tmp_path,
        as_backend="neuron",
        compile_backend="neuron",
        in_child=compiler,
    )


def test_shape_change_recompiles_is_refuted_where_a_step_on_a_seen_length_compiles(monkeypatch, tmp_path):
    # A Neuron stand-in whose compiler writes one .neff into its cache at every call, shapes seen before or not.
    write_neff = neff_writer(monkeypatch, tmp_path)
    record = run_shape_changes(
        monkeypatch, tmp_path, lambda graph, inputs: lambda *args: write_neff() or graph.forward(*args)
    )
    assert refuted(record, "a step on a length seen before compiles nothing", "again): got 1, expected 0"), outcomes(
        record
    )


def test_custom_op_is_refuted_where_its_fake_kernel_gives_another_shape(monkeypatch, tmp_path):
    from torch._library.custom_ops import CustomOpDef

    register_fake = CustomOpDef.register_fake
    one_longer = lambda x, factor: x.new_empty(x.shape[0] + 1)  # noqa: E731
    monkeypatch.setattr(CustomOpDef, "register_fake", lambda op, fake: register_fake(op, one_longer))
    record = run_gallery("custom_op_eager_and_compile", monkeypatch, tmp_path)
    assert refuted(record, "torch.library.opcheck passes", "test_faketensor: "), outcomes(record)


def test_custom_op_opcheck_is_refuted_where_a_test_it_runs_here_is_not_implemented(monkeypatch, tmp_path):
    # opcheck runs its autograd registration test on the CPU: an NYI there is a failure, not a test skipped.
    opcheck = torch.library.opcheck
    nyi = NotImplementedError("autograd_registration_check: NYI devices other than CPU/CUDA/XPU, got {'cpu'}")

    def without_autograd_test(op, args, **options):
        return {**opcheck(op, args, **options), "test_autograd_registration": nyi}

    monkeypatch.setattr(torch.library, "opcheck", without_autograd_test)
    record = run_gallery("custom_op_eager_and_compile", monkeypatch, tmp_path)
    assert refuted(record, "opcheck passes", "test_autograd_registration: NotImplementedError: "), outcomes(record)


NEURON_NAMES_THE_SLOT = """
import sys
if "rename_privateuse1_backend" not in " ".join(sys.orig_argv):  # the stock process only: the other renames it itself
    import torch
    torch.utils.rename_privateuse1_backend("neuron")
"""


def test_privateuse1_named_device_is_refuted_where_a_stock_process_parses_neuron(monkeypatch, tmp_path):
    fresh_processes_run(monkeypatch, tmp_path, NEURON_NAMES_THE_SLOT)
    record = run_gallery("privateuse1_named_device", monkeypatch, tmp_path)
    assert refuted(record, "without a backend package", "torch.device('neuron') gave: parsed"), outcomes(record)
    assert (
        outcomes(record)["after rename_privateuse1_backend('foo'), 'foo' parses but no tensor can be created"]
        is Verdict.HOLDS
    )


def test_cpu_gloo_parity_is_refuted_where_gloo_leaves_device_tensors_unreduced(monkeypatch, tmp_path):
    all_reduce = torch.distributed.all_reduce
    device_computes(monkeypatch, second_cpu=a_second_cpu_backend)  # the reference keeps the plain CPU
    unreduced_on_the_device = lambda t, *a, **kw: None if isinstance(t, OnTheDevice) else all_reduce(t, *a, **kw)  # noqa: E731
    monkeypatch.setattr(torch.distributed, "all_reduce", unreduced_on_the_device)
    record = run_gallery("cpu_gloo_reference_parity", monkeypatch, tmp_path, as_backend="second-cpu")
    assert refuted(record, "match the CPU/gloo reference", "rank 0 all_reduce: max abs error"), outcomes(record)
    assert outcomes(record)["the job runs on 2 ranks on the CPU with gloo (the reference)"] is Verdict.HOLDS


def test_rocm_reuses_torch_cuda_is_refuted_where_rocm_names_a_device_type(monkeypatch, tmp_path):
    rename = lambda: torch.utils.rename_privateuse1_backend("rocm")  # noqa: E731 - cannot be undone: child only
    record = run_gallery("rocm_reuses_torch_cuda", monkeypatch, tmp_path, in_child=rename)
    assert refuted(record, "'rocm' is not a valid device type", "torch.device('rocm') parsed"), outcomes(record)


def architectures_answering(monkeypatch, tmp_path, generate_codes: dict[str, str]) -> None:
    """A stand-in sweep: each architecture's forward matches, and its generate stage gets the code given."""
    import shutil

    from torchclaims.coverage import architectures

    def sweep(backend_name, **options):
        builder = architectures.TableBuilder(
            "architectures",
            "architecture",
            list(generate_codes),
            {
                "forward": architectures.STAGES,
                "generate": architectures.STAGES,
                "result": architectures.RESULTS,
                "cause": architectures.CAUSES,
            },
        )
        for name, code in generate_codes.items():
            answer = {"forward": ("N", ""), "generate": (code, f"{code} here"), "config": "tiny", "fallbacks": []}
            for column, (value, detail) in architectures.classify(answer).items():
                builder.set(name, column, value, detail)
        return builder.table(), {"seconds": 0.1, "workers": 1, "devices": 1, "precision": ["stand-in"]}

    monkeypatch.setattr(architectures, "sweep_architectures", sweep)
    (tmp_path / "claims").mkdir()
    shutil.copy(GALLERY.parent / "claims" / "hf-direct-trainium-coverage.toml", tmp_path / "claims")


ARCHITECTURES_CHECK = "every registered architecture runs forward and generate on the device and matches the CPU"


def test_hf_architecture_coverage_is_refuted_where_one_architecture_generates_other_tokens(monkeypatch, tmp_path):
    architectures_answering(monkeypatch, tmp_path, {"llama": "N", "gpt2": "M"})
    record = run_gallery("hf_architecture_coverage", monkeypatch, tmp_path, as_backend="second-cpu")
    assert refuted(record, ARCHITECTURES_CHECK, "1 architectures fail or differ on the device"), outcomes(record)


def test_hf_architecture_coverage_is_not_refuted_where_only_the_cpu_reference_failed(monkeypatch, tmp_path):
    architectures_answering(monkeypatch, tmp_path, {"llama": "N", "reformer": "C"})
    record = run_gallery("hf_architecture_coverage", monkeypatch, tmp_path, as_backend="second-cpu")
    assert outcomes(record)[ARCHITECTURES_CHECK] is Verdict.UNVERIFIED, outcomes(record)


# Checks (claim id, check as the inventory writes it) with neither a breaking test here nor a reason under
# [no_breaking_test] in their record yet. The list may only shrink: a new check comes with a breaking test or says
# why it has none, and `torchclaims lint` reads this list as the test does.
LEFT: set[tuple[str, str]] = set()
LEFT_AT_MOST = 0  # lower it as LEFT shrinks; never raise it


def test_every_check_is_refuted_by_a_test_or_says_why_not():
    from torchclaims.authoring.breaking_tests import take_inventory
    from torchclaims.claims import load_claims

    root = GALLERY.parent
    inventory = take_inventory(root, load_claims(root / "claims"))
    figures = {what: inventory.count(what) for what in ("checks", "covered", "explained", "bare")}
    assert not inventory.problems, "\n".join(map(str, inventory.problems)) + f"\n{figures}"
    assert figures["bare"] == len(LEFT) <= LEFT_AT_MOST, figures
    assert figures["covered"] >= 151, figures  # what the tests above refute, check by check


def test_hf_device_strings_is_refuted_where_torch_knows_the_device_type(monkeypatch, tmp_path):
    # A process where 'neuron' names the PrivateUse1 slot without torch_neuronx: torch.device("neuron")
    # parses, so the ValueError the claim names (torch.device rejecting the string) cannot come.
    rename = lambda: torch.utils.rename_privateuse1_backend("neuron")  # noqa: E731 - cannot be undone: child only
    record = run_gallery("hf_device_strings", monkeypatch, tmp_path, in_child=rename)
    assert refuted(
        record, "without torch_neuronx, device_map='neuron' raises ValueError", "expected ValueError, got"
    ), outcomes(record)


# Checks of the Neuron claims, one stand-in each.


def test_eager_mode_is_refuted_where_the_device_divides_a_little_off(monkeypatch, tmp_path):
    # Newton's loop on a device whose division is 0.1% off converges to other roots, in other steps.
    device_computes(monkeypatch, torch.Tensor.div, lambda a, b: torch.Tensor.div(a, b) * 1.001)  # what a / x calls
    record = run_gallery("torchneuron_eager_mode", monkeypatch, tmp_path, as_backend="neuron")
    assert refuted(record, "takes the same steps as on the CPU", "residual reads (steps + 1): got"), outcomes(record)
    assert outcomes(record)["the loop runs on the neuron device with no compile or sync call"] is Verdict.HOLDS


def registered_compiler(compile_graph, name="neuron"):
    """What a test gives ``in_child``: registers ``compile_graph`` as torch.compile's backend ``name`` (the
    registration cannot be undone, so only the child makes it)."""

    def register():
        import torch._dynamo

        torch._dynamo.register_backend(compile_graph, name=name)

    return register


def run_compiled_by(script, monkeypatch, tmp_path, compile_graph, name):
    """Run ``gallery/<script>.py`` on the CPU with ``compile_graph`` as its compile backend, registered as ``name``."""
    register = registered_compiler(compile_graph, name)
    return run_gallery(script, monkeypatch, tmp_path, as_backend="cpu", compile_backend=name, in_child=register)


def test_compile_modes_is_refuted_where_neuron_ignores_the_mode_without_a_word(monkeypatch, tmp_path):
    silent = registered_compiler(lambda graph, inputs, mode=None: graph.forward)
    record = run_gallery("compile_backend_and_modes", monkeypatch, tmp_path, as_backend="neuron", in_child=silent)
    assert refuted(record, "TorchNeuron logs a warning about the mode", "no warning mentions the mode"), outcomes(
        record
    )
    assert outcomes(record)["mode='max-autotune-no-cudagraphs' compiles, runs on the device and matches eager"] is (
        Verdict.HOLDS
    )


def warns_and_adds_a_hundredth(graph, inputs, mode=None):
    """A 'neuron' compiler that warns about the mode, as documented, and computes every output 0.01 too high."""
    import warnings

    if mode is not None:
        warnings.warn(f"mode {mode!r} is ignored: compiling in the default mode", stacklevel=1)
    return lambda *args: [out + 1e-2 for out in graph.forward(*args)]


def test_compile_modes_is_refuted_where_the_compiled_graph_differs_from_eager(monkeypatch, tmp_path):
    off = registered_compiler(warns_and_adds_a_hundredth)
    record = run_gallery("compile_backend_and_modes", monkeypatch, tmp_path, as_backend="neuron", in_child=off)
    assert refuted(record, "compiles, runs on the device and matches eager", "compiled vs eager: max abs error"), (
        outcomes(record)
    )
    assert outcomes(record)["TorchNeuron logs a warning about the mode and uses its default mode"] is Verdict.HOLDS


def test_recompile_is_refuted_where_neuron_accepts_dynamic_true(monkeypatch, tmp_path):
    eager = registered_compiler(lambda graph, inputs: graph.forward)  # compiles any shape, dynamic ones included
    record = run_gallery(
        "recompile_dynamic_shapes", monkeypatch, tmp_path, as_backend="neuron", compile_backend="neuron", in_child=eager
    )
    assert refuted(record, "TorchNeuron rejects dynamic=True", "'neuron' accepted dynamic=True"), outcomes(record)


def test_recompile_is_refuted_where_the_default_specialises_every_length(monkeypatch, tmp_path):
    compile = torch.compile
    static = lambda fn, dynamic=None, **kw: compile(fn, dynamic=False if dynamic is None else dynamic, **kw)  # noqa: E731
    monkeypatch.setattr(torch, "compile", static)
    record = run_gallery("recompile_dynamic_shapes", monkeypatch, tmp_path)
    assert refuted(record, "at most two graphs", "and nothing shows the backend forcing static shapes"), outcomes(
        record
    )


def test_shape_change_recompiles_is_refuted_where_one_dynamic_graph_serves_new_lengths(monkeypatch, tmp_path):
    # A Neuron stand-in that writes one .neff per graph Dynamo hands it: the second length makes the graph dynamic,
    # and the third length, never seen, runs on it without a compilation.
    write_neff = neff_writer(monkeypatch, tmp_path)
    record = run_shape_changes(monkeypatch, tmp_path, lambda graph, inputs: write_neff() or graph.forward)
    assert refuted(record, "a length not seen before compiles once", "first step of length 9: got 0"), outcomes(record)
    assert outcomes(record)["a step on a length seen before compiles nothing"] is Verdict.HOLDS


BATCHED_LOSS_ONE_TOO_HIGH = """
import torch.nn.functional as F
nll_loss = F.nll_loss
F.nll_loss = lambda input, *args, **kwargs: nll_loss(input, *args, **kwargs) + (1.0 if input.dim() == 2 else 0.0)
"""


def test_xla_nll_loss_is_refuted_where_a_batched_call_gives_another_loss(monkeypatch, tmp_path):
    a_second_cpu(monkeypatch)
    fresh_processes_run(monkeypatch, tmp_path, BATCHED_LOSS_ONE_TOO_HIGH)
    record = run_gallery("xla_nll_loss_unbatched", monkeypatch, tmp_path)
    assert refuted(record, "nll_loss of a batched (1, 3) input", "loss: max abs error"), outcomes(record)
    assert outcomes(record)["nll_loss of an unbatched (3,) input returns the CPU's loss"] is Verdict.HOLDS


ABORTS_IN_REPLICA_1 = """
import os
import torch_xla.runtime as xr
def optimizer_step(optimizer):
    if xr.global_ordinal() == 1:
        os.abort()  # what a rendezvous that fails in XLA's collective does to the process
    optimizer.step()
"""


def test_xla_replicas_optimizer_step_is_refuted_where_a_replica_aborts_the_process(monkeypatch, tmp_path):
    thread_replicas(monkeypatch, tmp_path, xla_model=ABORTS_IN_REPLICA_1)
    record = run_gallery("xla_replicas_optimizer_step", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "staggered thread replicas complete the step", "replicas saved their parameters"), outcomes(
        record
    )


REDUCES_NOTHING = """
REDUCE_SUM = "sum"
def all_reduce(reduce_type, tensor):
    return tensor.clone()  # each replica keeps its own values
"""
SPAWN_IS_LAUNCH = "import torch_xla\ndef spawn(fn, args=()):\n    torch_xla.launch(fn, args)\n"


def test_xla_cpu_thread_replicas_is_refuted_where_all_reduce_reduces_nothing(monkeypatch, tmp_path):
    thread_replicas(monkeypatch, tmp_path, xla_model=REDUCES_NOTHING, xla_multiprocessing=SPAWN_IS_LAUNCH)
    record = run_gallery("xla_cpu_thread_replicas", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "thread replicas all-reduce to the sum", "(the sum is [3.0, 6.0, 9.0, 12.0])"), outcomes(
        record
    )


# The 'xla' process group as PJRT's CPU runtime gives it to processes started as torchrun starts them: the xla://
# rendezvous answers every process "rank 0 of 1" (each process is its own host), so each joins a group of its own.
GROUP_OF_ONE_PER_PROCESS = """
import torch.distributed as dist

def _rendezvous(url, timeout=None, **options):
    yield dist.HashStore(), 0, 1

dist.Backend.register_backend("xla", lambda store, rank, size, timeout: dist.ProcessGroupGloo(store, rank, size))
dist.register_rendezvous_handler("xla", _rendezvous)
"""


def test_xla_process_group_is_refuted_where_each_process_joins_a_group_of_its_own(monkeypatch, tmp_path):
    import importlib

    thread_replicas(monkeypatch, tmp_path, xla_backend=GROUP_OF_ONE_PER_PROCESS)
    register = lambda: importlib.import_module("torch_xla.distributed.xla_backend")  # noqa: E731 - child only
    record = run_gallery("xla_process_group_two_processes", monkeypatch, tmp_path, as_backend="xla", in_child=register)
    assert refuted(
        record, "in one group of two and holds the sum", "worker 0 joined a group of 1 and all_reduce returned"
    ), outcomes(record)


# torch_xla's SPMD on one CPU: the program runs whole, and mark_sharding records the sharding XLA reports for the
# tensor (torch_xla._XLAC._get_xla_sharding_spec); KEEP (given by the test) changes what a sharded tensor holds,
# given its tiles per dimension.
SPMD_ON_ONE_CPU = """
import types
import torch, torch_xla

class Mesh:
    def __init__(self, device_ids, mesh_shape, axis_names):
        self.device_ids, self.mesh_shape, self.axis_names = list(device_ids), mesh_shape, axis_names

def mark_sharding(tensor, mesh, partition_spec):
    tiles = [1 if axis is None else mesh.mesh_shape[mesh.axis_names.index(axis)] for axis in partition_spec]
    tensor._sharding = "{devices=[%s]%s}" % (",".join(map(str, tiles)), ",".join(map(str, mesh.device_ids)))
    with torch.no_grad():
        KEEP(tensor, tiles)

torch_xla._XLAC = types.SimpleNamespace(_get_xla_sharding_spec=lambda tensor: getattr(tensor, "_sharding", ""))
"""
KEEPS_EVERY_SHARD = "KEEP = lambda tensor, tiles: None\n"
# A partition computed from the first device's shard alone, as if the others' never joined: they hold zeros.
KEEPS_THE_FIRST_SHARD = """
def KEEP(tensor, tiles):
    for dim, count in enumerate(tiles):
        first = -(-tensor.shape[dim] // count)
        tensor.narrow(dim, first, tensor.shape[dim] - first).zero_()
"""
# FSDPv2 on the stand-in SPMD: wraps the module as _orig_module, and SHARD (given by the test) marks each parameter.
FSDPV2 = """
import torch
import torch_xla.distributed.spmd as xs

class SpmdFullyShardedDataParallel(torch.nn.Module):
    def __init__(self, module, mesh):
        super().__init__()
        self._orig_module = module
        for parameter in module.parameters():
            SHARD(parameter, mesh)

    def forward(self, *args, **kwargs):
        return self._orig_module(*args, **kwargs)
"""
SHARDS_ON_THE_FSDP_AXIS = 'SHARD = lambda p, mesh: xs.mark_sharding(p, mesh, ("fsdp",) + (None,) * (p.dim() - 1))\n'


def spmd_on_one_cpu(monkeypatch, tmp_path, keep: str, shard: str = SHARDS_ON_THE_FSDP_AXIS) -> None:
    thread_replicas(monkeypatch, tmp_path, spmd=keep + SPMD_ON_ONE_CPU, fsdpv2=shard + FSDPV2)


def test_xla_spmd_parallel_step_holds_where_the_partition_keeps_every_shard(monkeypatch, tmp_path):
    spmd_on_one_cpu(monkeypatch, tmp_path, KEEPS_EVERY_SHARD)
    record = run_gallery("xla_spmd_parallel_step", monkeypatch, tmp_path, as_backend="xla")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_xla_spmd_parallel_step_is_refuted_where_the_partition_keeps_one_shard(monkeypatch, tmp_path):
    spmd_on_one_cpu(monkeypatch, tmp_path, KEEPS_THE_FIRST_SHARD)
    record = run_gallery("xla_spmd_parallel_step", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "a data parallel SPMD step", "loss: max abs error"), outcomes(record)
    assert refuted(record, "a tensor parallel SPMD step", "loss: max abs error"), outcomes(record)


def test_xla_spmd_fsdp_step_holds_where_the_partition_keeps_every_shard(monkeypatch, tmp_path):
    spmd_on_one_cpu(monkeypatch, tmp_path, KEEPS_EVERY_SHARD)
    record = run_gallery("xla_spmd_fsdp_step", monkeypatch, tmp_path, as_backend="xla")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_xla_spmd_fsdp_step_is_refuted_where_fsdpv2_shards_no_parameter(monkeypatch, tmp_path):
    spmd_on_one_cpu(monkeypatch, tmp_path, KEEPS_EVERY_SHARD, shard="SHARD = lambda p, mesh: None\n")
    record = run_gallery("xla_spmd_fsdp_step", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "every parameter is sharded", "0.weight is not sharded: ''"), outcomes(record)
    assert outcomes(record)["an FSDPv2 step over 2 CPU devices matches one step on the CPU"] is Verdict.HOLDS


def test_xla_spmd_fsdp_step_is_refuted_where_the_partition_keeps_one_shard(monkeypatch, tmp_path):
    spmd_on_one_cpu(monkeypatch, tmp_path, KEEPS_THE_FIRST_SHARD)
    record = run_gallery("xla_spmd_fsdp_step", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "an FSDPv2 step", "loss: max abs error"), outcomes(record)
    assert outcomes(record)["every parameter is sharded over the 2 CPU devices"] is Verdict.HOLDS


# torch_xla.backends' matmul precision: LEVELS (given by the test) maps each level it accepts to where it keeps it.
MATMUL_PRECISION = """
import torch
_level = ["default"]

def set_mat_mul_precision(level):
    if level not in LEVELS:
        raise ValueError(f"{level!r} is not one of {list(LEVELS)}")
    LEVELS[level](level)

def get_mat_mul_precision():
    return READ()
"""
OWN_LEVEL = """
LEVELS = dict.fromkeys(("default", "high", "highest"), lambda level: _level.__setitem__(0, level))
READ = lambda: _level[0]
"""
# A torch_xla that keeps its level in torch's own setting (default as 'medium'), and reads it back from there.
IN_TORCHS_SETTING = """
TORCH = {"default": "medium", "high": "high", "highest": "highest"}
LEVELS = {level: lambda level: torch.set_float32_matmul_precision(TORCH[level]) for level in TORCH}
READ = lambda: {value: level for level, value in TORCH.items()}[torch.get_float32_matmul_precision()]
"""


def test_xla_matmul_precision_is_refuted_where_a_fourth_level_is_accepted(monkeypatch, tmp_path):
    also_medium = OWN_LEVEL + "LEVELS['medium'] = LEVELS['default']\n"
    thread_replicas(monkeypatch, tmp_path, backends=also_medium + MATMUL_PRECISION)
    record = run_gallery("xla_matmul_precision", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "accepts exactly 'default', 'high' and 'highest'", "('medium') was accepted"), outcomes(
        record
    )
    assert outcomes(record)["the level is separate from torch.set_float32_matmul_precision"] is Verdict.HOLDS


def test_xla_matmul_precision_is_refuted_where_the_level_is_torchs_setting(monkeypatch, tmp_path):
    thread_replicas(monkeypatch, tmp_path, backends=IN_TORCHS_SETTING + MATMUL_PRECISION)
    record = run_gallery("xla_matmul_precision", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "separate from torch.set_float32_matmul_precision", "after changing torch's setting: got"), (
        outcomes(record)
    )
    assert (
        outcomes(record)["torch_xla.backends.set_mat_mul_precision accepts exactly 'default', 'high' and 'highest'"]
        is Verdict.HOLDS
    )


def test_xla_matmul_precision_is_refuted_on_a_tpu_whose_default_keeps_float32(monkeypatch, tmp_path):
    # The CPU's float32 matmul, on a device that says it is a TPU: 'default' rounds nothing to bfloat16.
    monkeypatch.setenv("PJRT_DEVICE", "TPU")
    thread_replicas(monkeypatch, tmp_path, backends=OWN_LEVEL + MATMUL_PRECISION)
    record = run_gallery("xla_matmul_precision", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "'default' downcasts float32 inputs", "is not closer to the bfloat16-rounded product"), (
        outcomes(record)
    )


# torch_xla.debug.metrics: counters the stand-in device adds to (count), and CompileTime, one sample for each
# torch_xla.sync() that COMPILES (given by the test: samples so far -> whether this graph compiles) says compiles.
METRICS = """
import torch_xla
_counters, _compile_time = {}, [0]

def clear_all():
    _counters.clear()
    _compile_time[0] = 0

def count(name):
    _counters[name] = _counters.get(name, 0) + 1

def counter_names():
    return list(_counters)

def counter_value(name):
    return _counters.get(name)

def metrics_report():
    return "".join(f"Counter: {name}\\n  Value: {value}\\n" for name, value in _counters.items())

def executed_fallback_ops():
    return [name for name in _counters if name.startswith("aten::")]

def metric_data(name):
    return (_compile_time[0], 0.0, []) if name == "CompileTime" and _compile_time[0] else None

def _sync():
    if COMPILES(_compile_time[0]):
        _compile_time[0] += 1

torch_xla.sync = _sync
"""


def run_with_xla_metrics(script, monkeypatch, tmp_path, compiles: str = "lambda samples: False"):
    """``script`` on a stand-in torch_xla with METRICS, synchronised by torch_xla.sync() as the xla backend is."""

    thread_replicas(monkeypatch, tmp_path, metrics=f"COMPILES = {compiles}\n" + METRICS)
    synchronize = all_backends()["xla"].synchronize
    return run_gallery(script, monkeypatch, tmp_path, as_backend="xla", synchronize=synchronize)


def test_xla_static_shapes_is_refuted_where_one_dynamic_graph_serves_every_length(monkeypatch, tmp_path):
    record = run_with_xla_metrics("xla_static_shapes_recompile", monkeypatch, tmp_path, "lambda samples: samples == 0")
    assert refuted(record, "5 distinct sequence lengths", "samples after 5 lengths: got 1, expected 5"), outcomes(
        record
    )
    assert outcomes(record)["the same 5 lengths padded to 16 add 1 sample to CompileTime"] is Verdict.HOLDS


def test_xla_static_shapes_is_refuted_where_every_step_compiles_again(monkeypatch, tmp_path):
    record = run_with_xla_metrics("xla_static_shapes_recompile", monkeypatch, tmp_path, "lambda samples: True")
    assert refuted(record, "padded to", "samples after 5 padded lengths: got 5, expected 1"), outcomes(record)
    assert outcomes(record)["5 distinct sequence lengths add 5 samples to CompileTime"] is Verdict.HOLDS


def histc_falls_back(monkeypatch, tmp_path, fallback):
    """xla_cpu_fallback_ops on a stand-in device with no kernel for aten::histc (the dispatcher says so), where
    torch.histc computes ``fallback(metrics, tensor, **options)``; the other candidates run as on the CPU."""
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    no_histc = lambda name, key: name != "aten::histc" and has_kernel(name, key)  # noqa: E731
    monkeypatch.setattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", no_histc)

    def histc(tensor, **options):
        import torch_xla.debug.metrics as metrics

        return fallback(metrics, tensor, **options)

    device_computes(monkeypatch, torch.histc, histc)
    return run_with_xla_metrics("xla_cpu_fallback_ops", monkeypatch, tmp_path)


def counted_on_the_cpu(metrics, tensor, **options):
    """A CPU fallback as torch_xla's: counted as aten::histc, computed by the CPU's kernel."""
    metrics.count("aten::histc")
    return torch.histc(tensor, **options)


def test_xla_cpu_fallback_holds_where_the_operator_falls_back_counted(monkeypatch, tmp_path):
    record = histc_falls_back(monkeypatch, tmp_path, counted_on_the_cpu)
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_xla_cpu_fallback_is_refuted_where_an_operator_without_a_kernel_raises(monkeypatch, tmp_path):
    def no_fallback(metrics, tensor, **options):
        raise NotImplementedError("Could not run 'aten::histc' with arguments from the 'XLA' backend.")

    record = histc_falls_back(monkeypatch, tmp_path, no_fallback)
    assert refuted(record, "run without raising", "aten::histc raised NotImplementedError: Could not run"), outcomes(
        record
    )


def test_xla_cpu_fallback_is_refuted_where_the_fallback_returns_other_values(monkeypatch, tmp_path):
    record = histc_falls_back(monkeypatch, tmp_path, lambda *args, **options: counted_on_the_cpu(*args, **options) + 1)
    assert refuted(record, "with the CPU's values", "aten::histc: max abs error"), outcomes(record)
    assert outcomes(record)["operators without an XLA kernel run without raising"] is Verdict.HOLDS


def test_xla_cpu_fallback_is_refuted_where_the_fallback_leaves_no_counter(monkeypatch, tmp_path):
    record = histc_falls_back(monkeypatch, tmp_path, lambda metrics, tensor, **options: torch.histc(tensor, **options))
    assert refuted(record, "appears as an aten:: counter", "no 'Counter: aten::histc' in metrics_report()"), outcomes(
        record
    )
    assert outcomes(record)["their results come back as XLA tensors with the CPU's values"] is Verdict.HOLDS


# torch_xla.core.xla_model.save, writing each tensor as TO_FILE (given by the test) makes it; XlaTensor stands for the
# device's own tensor type, a class of torch_xla's that a process without torch_xla cannot load.
XM_SAVE = """
import torch

class XlaTensor(torch.Tensor):
    pass

def save(data, path):
    torch.save({name: TO_FILE(tensor) for name, tensor in data.items()}, path)
"""
SAVES_CPU_COPIES = "TO_FILE = lambda tensor: tensor.cpu()\n"


def test_xla_checkpoint_holds_where_xm_save_writes_cpu_tensors(monkeypatch, tmp_path):
    thread_replicas(monkeypatch, tmp_path, xla_model=SAVES_CPU_COPIES + XM_SAVE)
    record = run_gallery("xla_checkpoint_cpu_save", monkeypatch, tmp_path, as_backend="xla")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_xla_checkpoint_is_refuted_where_xm_save_writes_the_device_tensors(monkeypatch, tmp_path):
    device_tensors = "TO_FILE = lambda tensor: tensor.as_subclass(XlaTensor)\n"
    thread_replicas(monkeypatch, tmp_path, xla_model=device_tensors + XM_SAVE)
    record = run_gallery("xla_checkpoint_cpu_save", monkeypatch, tmp_path, as_backend="xla")
    assert refuted(record, "saved with xm.save loads", "torch.load without map_location raised"), outcomes(record)
    assert outcomes(record)["a state_dict saved after moving the tensors to the CPU does the same"] is Verdict.HOLDS


def cpu_keeps_the_device_type():
    """``tensor.cpu()`` returns torch_xla's tensor type, as DTensor.cpu() returns a DTensor (child only: for good)."""
    import torch_xla.core.xla_model as xm

    cpu = torch.Tensor.cpu
    torch.Tensor.cpu = lambda tensor, *args, **kwargs: cpu(tensor, *args, **kwargs).as_subclass(xm.XlaTensor)


def test_xla_checkpoint_is_refuted_where_cpu_copies_keep_the_device_type(monkeypatch, tmp_path):
    thread_replicas(monkeypatch, tmp_path, xla_model=SAVES_CPU_COPIES + XM_SAVE)
    record = run_gallery(
        "xla_checkpoint_cpu_save", monkeypatch, tmp_path, as_backend="xla", in_child=cpu_keeps_the_device_type
    )
    assert refuted(record, "after moving the tensors to the CPU", "torch.load without map_location raised"), outcomes(
        record
    )


def run_on_a_python_device(script, monkeypatch, tmp_path, name="neuron", then=None, device_count: int = 1):
    """``script`` on a device of type ``name`` set up as torch's Python backend (python_device.set_up) with
    ``device_count`` devices; ``then`` runs in the script's process after the set-up."""
    python_device.resolved_to_the_cpu(monkeypatch, name)

    def in_child():
        python_device.set_up(name, device_count)
        if then is not None:
            then()

    return run_gallery(script, monkeypatch, tmp_path, as_backend=name, in_child=in_child)


def test_neuron_device_count_is_refuted_where_it_counts_chips_not_neuroncores(monkeypatch, tmp_path):
    # Two Neuron chips of two NeuronCores each, all visible; torch counts the chips.
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "0-3")
    monkeypatch.setattr(torch.accelerator, "device_count", lambda: 2)
    record = run_on_a_python_device("neuron_device_count_neuroncores", monkeypatch, tmp_path, device_count=2)
    assert refuted(record, "equals the NeuronCores visible", "visible to the process: got 2, expected 4"), outcomes(
        record
    )


def test_privateuse1_is_refuted_where_a_tensor_created_on_the_device_lands_on_the_cpu(monkeypatch, tmp_path):
    record = run_on_a_python_device(
        "backends_use_privateuse1", monkeypatch, tmp_path, then=python_device.allocating_on_the_cpu
    )
    assert refuted(record, "a tensor on the device is dispatched", "device type of the tensor: got 'cpu'"), outcomes(
        record
    )
    assert outcomes(record)["the PrivateUse1 backend carries the configured device type's name"] is Verdict.HOLDS


def test_hf_device_map_placement_is_refuted_where_transformers_resolves_neuron_to_the_cpu(monkeypatch, tmp_path):
    from transformers.integrations import accelerate

    monkeypatch.setattr(accelerate, "check_and_set_device_map", lambda device_map: {"": torch.device("cpu")})
    record = run_on_a_python_device("hf_device_map_backend_placement", monkeypatch, tmp_path)
    assert refuted(record, "resolves device_map=", "resolved to {'': device(type='cpu')}"), outcomes(record)


def test_hf_device_map_placement_is_refuted_where_from_pretrained_leaves_the_model_on_the_cpu(monkeypatch, tmp_path):
    import transformers

    from_pretrained = transformers.AutoModelForCausalLM.from_pretrained.__func__
    ignoring_the_map = lambda cls, *args, device_map=None, **kwargs: from_pretrained(cls, *args, **kwargs)  # noqa: E731
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", classmethod(ignoring_the_map))
    record = run_on_a_python_device("hf_device_map_backend_placement", monkeypatch, tmp_path)
    assert refuted(record, "places every parameter on", "parameters: got ['cpu'], expected ['neuron']"), outcomes(
        record
    )
    assert outcomes(record)["Transformers resolves device_map='neuron' to that device"] is Verdict.HOLDS


def run_neuron_fallback(monkeypatch, tmp_path, instead: dict):
    """neuron_cpu_fallback_default on a 'neuron' device where every function falls back to the CPU, with
    ``instead`` for those that do something else."""
    python_device.moves_fall_back(monkeypatch, "neuron", instead)
    return run_on_a_python_device("neuron_cpu_fallback_default", monkeypatch, tmp_path)


def test_neuron_cpu_fallback_holds_where_every_operator_falls_back_to_the_cpu(monkeypatch, tmp_path):
    record = run_neuron_fallback(monkeypatch, tmp_path, {})
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_neuron_cpu_fallback_is_refuted_where_an_operator_without_a_kernel_raises(monkeypatch, tmp_path):
    def no_kernel(*args, **kwargs):
        raise NotImplementedError("Could not run 'aten::histc' with arguments from the 'PrivateUse1' backend.")

    record = run_neuron_fallback(monkeypatch, tmp_path, {torch.histc: no_kernel})
    assert refuted(record, "run without raising", "aten::histc raised NotImplementedError: Could not run"), outcomes(
        record
    )


def test_neuron_cpu_fallback_is_refuted_where_a_fallback_returns_other_values(monkeypatch, tmp_path):
    one_more = lambda *args, **kwargs: torch.histc(*args, **kwargs) + 1  # noqa: E731
    record = run_neuron_fallback(monkeypatch, tmp_path, {torch.histc: one_more})
    assert refuted(record, "with the CPU's values", "aten::histc: max abs error"), outcomes(record)
    assert outcomes(record)["operators without a Neuron kernel run without raising"] is Verdict.HOLDS


def test_device_switch_parity_is_refuted_where_moves_to_the_device_keep_the_cpu(monkeypatch, tmp_path):
    python_device.moves_keep_the_cpu(monkeypatch, "neuron")
    record = run_on_a_python_device("device_switch_parity", monkeypatch, tmp_path)
    assert refuted(record, "moves to the device and runs forward", "device type of the output: got 'cpu'"), outcomes(
        record
    )
    assert outcomes(record)["forward output matches the CPU reference"] is Verdict.HOLDS


def test_ddp_is_refuted_where_moves_to_the_device_keep_the_cpu(monkeypatch, tmp_path):
    python_device.moves_keep_the_cpu(monkeypatch, "neuron")
    record = run_on_a_python_device("ddp_matches_single_process", monkeypatch, tmp_path)
    assert refuted(record, "one DDP step runs on", "rank 0: device type of the output: got 'cpu'"), outcomes(record)
    assert outcomes(record)["the parameters match one single-process step on the whole batch"] is Verdict.HOLDS


def test_cpu_gloo_parity_is_refuted_where_moves_to_the_device_keep_the_cpu(monkeypatch, tmp_path):
    python_device.moves_keep_the_cpu(monkeypatch, "neuron")
    record = run_on_a_python_device("cpu_gloo_reference_parity", monkeypatch, tmp_path)
    assert refuted(record, "ranks on the configured backend", "rank 0: device type: got 'cpu'"), outcomes(record)
    assert outcomes(record)["the job runs on 2 ranks on the CPU with gloo (the reference)"] is Verdict.HOLDS


def test_torchtpu_device_is_refuted_where_a_tensor_created_on_tpu_lands_on_the_cpu(monkeypatch, tmp_path):
    record = run_on_a_python_device(
        "torchtpu_device_string", monkeypatch, tmp_path, name="tpu", then=python_device.allocating_on_the_cpu
    )
    assert refuted(record, "torch.device('tpu') is a usable device", "created on torch.device('tpu'): got 'cpu'"), (
        outcomes(record)
    )


def test_torchtpu_device_is_refuted_where_the_tpu_matmul_is_two_percent_off(monkeypatch, tmp_path):
    off = lambda a, b: torch.matmul(a, b) * 1.02  # noqa: E731
    python_device.moves_fall_back(monkeypatch, "tpu", {torch.Tensor.matmul: off})  # what a @ b calls
    record = run_on_a_python_device(
        "torchtpu_device_string", monkeypatch, tmp_path, name="tpu", then=python_device.allocating_on_the_device
    )
    assert refuted(record, "matmul on 'tpu' matches the CPU", "relative error 0.02 exceeds"), outcomes(record)
    assert outcomes(record)["torch.device('tpu') is a usable device"] is Verdict.HOLDS


def tpu_dist_registered(*device_types):
    """What ``then`` gets: a 'tpu_dist' process-group backend (gloo's groups under that name), registered as the
    default for ``device_types``."""

    def register():
        import torch.distributed as dist

        gloo = lambda store, rank, size, timeout: dist.ProcessGroupGloo(store, rank, size)  # noqa: E731
        dist.Backend.register_backend("tpu_dist", gloo, devices=list(device_types))

    return register


def test_torchtpu_dist_backend_is_refuted_where_tpu_dist_is_not_the_default_for_tpu(monkeypatch, tmp_path):
    python_device.moves_keep_the_cpu(monkeypatch, "tpu")
    then = tpu_dist_registered("cpu")
    record = run_on_a_python_device("torchtpu_dist_backend", monkeypatch, tmp_path, name="tpu", then=then)
    assert refuted(record, "available process-group backend and the default", "map['tpu']: got None"), outcomes(record)


def test_torchtpu_dist_backend_is_refuted_where_all_reduce_reduces_nothing(monkeypatch, tmp_path):
    python_device.moves_keep_the_cpu(monkeypatch, "tpu")
    monkeypatch.setattr(torch.distributed, "all_reduce", lambda tensor, op=None, group=None, async_op=False: None)
    then = tpu_dist_registered("cpu", "tpu")
    record = run_on_a_python_device("torchtpu_dist_backend", monkeypatch, tmp_path, name="tpu", then=then)
    assert refuted(record, "gives the sum on every rank", "rank 0: all_reduce result: values differ"), outcomes(record)
    assert outcomes(record)["'tpu_dist' is an available process-group backend and the default for 'tpu' tensors"] is (
        Verdict.HOLDS
    )


def run_with_torch_tpu(script, monkeypatch, tmp_path, wheel=None, sitecustomize=""):
    """``script`` where ``wheel`` (by default a Wheel as the claim describes it) is installed, for this process and
    for every fresh one (which runs ``sitecustomize``), and imported in the script's process as torch's autoload
    imports it."""
    import importlib

    fresh_processes_run(monkeypatch, tmp_path, sitecustomize)
    standin_torch_tpu.install(tmp_path / "site", wheel or standin_torch_tpu.Wheel())
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return run_gallery(script, monkeypatch, tmp_path, in_child=lambda: importlib.import_module("torch_tpu"))


def test_torchtpu_package_holds_where_the_wheel_is_as_the_claim_says(monkeypatch, tmp_path):
    record = run_with_torch_tpu("torchtpu_package_without_tpu", monkeypatch, tmp_path)
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_torchtpu_package_is_refuted_where_it_imports_itself_with_autoload_off(monkeypatch, tmp_path):
    # As a .pth line would: torch first (its autoload, when on, imports torch_tpu whole), then torch_tpu.
    sitecustomize = "import torch, torch_tpu"
    record = run_with_torch_tpu("torchtpu_package_without_tpu", monkeypatch, tmp_path, sitecustomize=sitecustomize)
    assert refuted(record, "autoload off stops it", "imported with TORCH_DEVICE_BACKEND_AUTOLOAD=0: got True"), (
        outcomes(record)
    )


def test_torchtpu_package_is_refuted_where_a_layer_of_the_range_is_missing(monkeypatch, tmp_path):
    wheel = standin_torch_tpu.Wheel(layers=(standin_torch_tpu.MINOR,))
    record = run_with_torch_tpu("torchtpu_package_without_tpu", monkeypatch, tmp_path, wheel)
    assert refuted(record, "compiled layers name the same releases", "do not match the range"), outcomes(record)


def test_torchtpu_package_is_refuted_where_it_names_the_device_slot_without_a_tpu(monkeypatch, tmp_path):
    # The slot named on import, with a torch.tpu.is_available() that answers (torch.accelerator asks it).
    renames = "torch.utils.rename_privateuse1_backend('tpu')\ntpu.is_available = lambda: False"
    wheel = standin_torch_tpu.Wheel(on_import=renames)
    record = run_with_torch_tpu("torchtpu_package_without_tpu", monkeypatch, tmp_path, wheel)
    assert refuted(record, "it registers no device", "PrivateUse1 backend name: got 'tpu'"), outcomes(record)


def test_torchtpu_package_is_refuted_where_the_default_eager_mode_defers(monkeypatch, tmp_path):
    wheel = standin_torch_tpu.Wheel(eager_mode="DEFER_ALWAYS")
    record = run_with_torch_tpu("torchtpu_package_without_tpu", monkeypatch, tmp_path, wheel)
    assert refuted(record, "default eager mode is DEFER_NEVER", "torch.tpu.eager_mode: got 'DEFER_ALWAYS'"), outcomes(
        record
    )


def test_torchtpu_package_is_refuted_where_torch_tpu_offers_memory_counters(monkeypatch, tmp_path):
    wheel = standin_torch_tpu.Wheel(memory_calls=True)
    record = run_with_torch_tpu("torchtpu_package_without_tpu", monkeypatch, tmp_path, wheel)
    assert refuted(record, "but none of its memory counters", "memory counters in torch.tpu: got ["), outcomes(record)


def a_rocm_build(monkeypatch, arch: str = "gfx942:sramecc+:xnack-") -> None:
    """A ROCm build of torch (torch.version.hip set) whose GPU is the configured device, the CPU under index 0, and
    whose torch.cuda reports an AMD GPU of architecture ``arch`` (gfx942: MI300)."""
    monkeypatch.setattr(torch.version, "hip", "7.0.0")
    a_second_cpu(monkeypatch)
    props = SimpleNamespace(name="AMD Instinct MI300X", gcnArchName=arch)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: props)


def test_rocm_ck_is_refuted_where_ck_is_the_default(monkeypatch, tmp_path):
    a_rocm_build(monkeypatch)
    fresh_processes_run(monkeypatch, tmp_path, "import torch\ntorch.backends.cuda.preferred_blas_library('ck')\n")
    record = run_gallery("rocm_ck_optin", monkeypatch, tmp_path)
    assert refuted(record, "CK is not used for BLAS unless selected", "is CK before anything selected it"), outcomes(
        record
    )


CK_RAISES = """
import torch
blas = torch.backends.cuda.preferred_blas_library
def refusing_ck(backend=None):
    if backend == "ck":
        raise RuntimeError("Cannot set preferred BLAS backend to CK on this architecture")
    return blas(backend)
torch.backends.cuda.preferred_blas_library = refusing_ck
"""


def test_rocm_ck_is_refuted_where_selecting_ck_raises(monkeypatch, tmp_path):
    a_rocm_build(monkeypatch)
    fresh_processes_run(monkeypatch, tmp_path, CK_RAISES)
    record = run_gallery("rocm_ck_optin", monkeypatch, tmp_path)
    assert refuted(record, "selecting 'ck' switches to CK", "selecting 'ck' raised instead of warning"), outcomes(
        record
    )
    assert outcomes(record)["CK is not used for BLAS unless selected"] is Verdict.HOLDS


def test_rocm_dist_backends_is_refuted_where_the_build_has_no_nccl(monkeypatch, tmp_path):
    a_rocm_build(monkeypatch)  # this CPU build of torch.distributed has no NCCL (RCCL on ROCm)
    record = run_gallery("rocm_dist_backends", monkeypatch, tmp_path)
    assert refuted(record, "nccl (GPU tensor) and gloo (CPU tensor)", "nccl: "), outcomes(record)
    assert outcomes(record)["no other torch.distributed backend works on the ROCm GPU"] is Verdict.HOLDS


def test_rocm_reuses_torch_cuda_is_refuted_where_torch_cuda_does_not_find_the_gpu(monkeypatch, tmp_path):
    a_rocm_build(monkeypatch)  # the GPU is the configured device, but this build's torch.cuda finds none
    record = run_gallery("rocm_reuses_torch_cuda", monkeypatch, tmp_path)
    assert refuted(record, "GPU is used through torch.cuda", "torch.cuda.is_available(): got False"), outcomes(record)


def test_tf32_on_rocm_is_refuted_on_an_mi300_whose_high_precision_keeps_float32(monkeypatch, tmp_path):
    a_rocm_build(monkeypatch)  # the CPU's matmul: 'high' computes as 'highest' does
    record = run_gallery("tf32_on_rocm", monkeypatch, tmp_path)
    assert refuted(record, "turns TF32 on for float32 matmuls", "no sign of TF32"), outcomes(record)


ACCEPTS_ANY_PRECISION = (
    "import torch, types\ntorch.backends.cuda.matmul = types.SimpleNamespace(fp32_precision='none')\n"
)


def test_tf32_on_rocm_is_refuted_where_bfx9_is_accepted(monkeypatch, tmp_path):
    a_rocm_build(monkeypatch)
    fresh_processes_run(monkeypatch, tmp_path, ACCEPTS_ANY_PRECISION)
    record = run_gallery("tf32_on_rocm", monkeypatch, tmp_path)
    assert refuted(record, "'bfx9' precision mode raises", "'bfx9' was accepted, reads back 'bfx9'"), outcomes(record)


def mixed_precision_helper(bfloat16_for):
    """accelerate's get_mixed_precision_context_manager with ``bfloat16_for`` as its list of distributed types
    that autocast to bfloat16 (None: every type)."""

    def helper(native_amp=False, autocast_kwargs=None):
        import accelerate.utils.modeling as modeling

        state = modeling.AcceleratorState()
        kwargs = {"device_type": state.device.type}
        if state.mixed_precision == "fp16":
            kwargs["dtype"] = torch.float16
        elif state.mixed_precision == "bf16" and (bfloat16_for is None or state.distributed_type in bfloat16_for):
            kwargs["dtype"] = torch.bfloat16
        return torch.autocast(**kwargs)

    return helper


def test_accelerate_bf16_autocast_is_refuted_where_the_helper_leaves_neuron_out(monkeypatch, tmp_path):
    import accelerate.utils.modeling
    from accelerate.utils import DistributedType

    # The helper as it was before MULTI_NEURON joined its bfloat16 list: a Neuron job autocasts to the default dtype.
    before_neuron = mixed_precision_helper([DistributedType.NO, DistributedType.MULTI_GPU, DistributedType.XLA])
    monkeypatch.setattr(accelerate.utils.modeling, "get_mixed_precision_context_manager", before_neuron)
    record = run_gallery("accelerate_neuron_bf16_autocast", monkeypatch, tmp_path)
    assert refuted(record, "the helper autocasts the neuron device", "dtype passed to torch.autocast: got 'None'"), (
        outcomes(record)
    )
    assert outcomes(record)["controls: fp16 gives float16, and a type outside the bfloat16 list gets no dtype"] is (
        Verdict.HOLDS
    )


def test_accelerate_bf16_autocast_controls_are_refuted_where_every_type_gets_bfloat16(monkeypatch, tmp_path):
    import accelerate.utils.modeling

    monkeypatch.setattr(accelerate.utils.modeling, "get_mixed_precision_context_manager", mixed_precision_helper(None))
    record = run_gallery("accelerate_neuron_bf16_autocast", monkeypatch, tmp_path)
    assert refuted(record, "controls: fp16 gives float16", "dtype for DEEPSPEED with bf16: got"), outcomes(record)


def falls_back_to_eager(graph, inputs):
    """A 'neuron' compiler that runs the graph once while compiling, and on a failure runs it eagerly instead."""
    try:
        graph(*inputs)
    except RuntimeError:
        pass  # what TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 would allow
    return graph.forward


def test_compile_failure_is_refuted_where_neuron_falls_back_to_eager_by_default(monkeypatch, tmp_path):
    (tmp_path / "standin" / "torch_neuronx").mkdir(parents=True)  # an installed torch-neuronx, as find_spec sees it
    (tmp_path / "standin" / "torch_neuronx" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "standin"))
    monkeypatch.delenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", raising=False)
    record = run_gallery(
        "compile_failure_raises",
        monkeypatch,
        tmp_path,
        as_backend="neuron",
        compile_backend="neuron",
        in_child=registered_compiler(falls_back_to_eager),
    )
    assert refuted(record, "fails on a graph, the compiled call raises", "fell back to running the graph eagerly"), (
        outcomes(record)
    )
    assert refuted(record, "TorchNeuron's", "a failing neuron graph ran eagerly"), outcomes(record)


def test_compile_failure_control_is_refuted_where_suppress_errors_cannot_be_patched(monkeypatch, tmp_path):
    import contextlib

    import torch._dynamo

    config_module, patch = type(torch._dynamo.config), type(torch._dynamo.config).patch

    def ignores_suppress_errors(self, arg1=None, arg2=None, **kwargs):
        if "suppress_errors" in kwargs:
            return contextlib.nullcontext()
        return patch(self, arg1, arg2, **kwargs)

    monkeypatch.setattr(config_module, "patch", ignores_suppress_errors)
    record = run_gallery("compile_failure_raises", monkeypatch, tmp_path)
    assert refuted(record, "falls back to eager without raising (control)", "the call still raised"), outcomes(record)


GUARDED = {"calls": 0}  # a global the wrapper below reads: Dynamo guards on its value


def test_compile_first_call_is_refuted_where_every_call_compiles_again(monkeypatch, tmp_path):
    compile = torch.compile

    def guard_that_never_holds(model, **options):
        """A compiled model whose guards fail at every call (a cache that never hits), up to Dynamo's limit."""
        compiled = compile(lambda x: model(x) + GUARDED["calls"] * 0.0, **options)

        def call(x):
            GUARDED["calls"] += 1
            return compiled(x)

        return call

    monkeypatch.setattr(torch, "compile", guard_that_never_holds)
    record = run_gallery("compile_jit_first_call", monkeypatch, tmp_path)
    assert refuted(record, "repeating the call adds no compiled graph", "repeat calls: got"), outcomes(record)


def test_compile_first_call_is_refuted_where_a_new_signature_compiles_nothing(monkeypatch, tmp_path):
    compile = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, **options: compile(model, dynamic=True, **options))
    record = run_gallery("compile_jit_first_call", monkeypatch, tmp_path)
    assert refuted(record, "each new input signature compiles", "batch 48: graphs added by the first call: got 0"), (
        outcomes(record)
    )


def test_checkpoint_map_location_is_refuted_where_mapping_to_the_cpu_rounds_to_bfloat16(monkeypatch, tmp_path):
    load = torch.load

    def lossy_map(f, map_location=None, **options):
        loaded = load(f, map_location=map_location, **options)
        if map_location is None:
            return loaded
        return {k: t.to(torch.bfloat16).to(t.dtype) if t.is_floating_point() else t for k, t in loaded.items()}

    monkeypatch.setattr(torch, "load", lossy_map)
    record = run_gallery("checkpoint_map_location", monkeypatch, tmp_path)
    assert refuted(record, "map_location='cpu' reloads bit for bit", "map_location='cpu': 0.weight differs in its"), (
        outcomes(record)
    )
    assert refuted(record, "the same checkpoint loads with map_location='cpu'", "0.weight differs in its bytes"), (
        outcomes(record)
    )


def test_accelerator_agnostic_is_refuted_where_torch_accelerator_does_not_find_the_device(monkeypatch, tmp_path):
    a_second_cpu(monkeypatch)  # a device of a backend that never registered with torch.accelerator
    record = run_gallery("torch_accelerator_agnostic", monkeypatch, tmp_path)
    assert refuted(record, "finds the configured accelerator", "current_accelerator returned None"), outcomes(record)


ON_THE_DEVICE = "on_the_device"  # the mark moved_to_second_cpu's stand-ins leave on parameters sent to the device


def marked(model) -> None:
    for p in model.parameters():
        setattr(p, ON_THE_DEVICE, True)


def test_device_switch_parity_is_refuted_where_the_device_computes_other_gradients(monkeypatch, tmp_path):
    def gradients_a_percent_high(model):
        for p in model.parameters():
            p.register_hook(lambda grad: grad * 1.01)

    a_second_cpu(monkeypatch)
    moved_to_second_cpu(monkeypatch, gradients_a_percent_high)
    record = run_gallery("device_switch_parity", monkeypatch, tmp_path)
    assert refuted(record, "gradients match the CPU reference", "grad 0: max abs error"), outcomes(record)
    assert outcomes(record)["forward output matches the CPU reference"] is Verdict.HOLDS


def test_device_switch_parity_is_refuted_where_the_device_steps_the_weights_off(monkeypatch, tmp_path):
    step = torch.optim.SGD.step

    def step_off_on_the_device(self, closure=None):
        out = step(self, closure)
        with torch.no_grad():
            for p in (p for group in self.param_groups for p in group["params"] if hasattr(p, ON_THE_DEVICE)):
                p.add_(1e-3)
        return out

    a_second_cpu(monkeypatch)
    moved_to_second_cpu(monkeypatch, marked)
    monkeypatch.setattr(torch.optim.SGD, "step", step_off_on_the_device)
    record = run_gallery("device_switch_parity", monkeypatch, tmp_path)
    assert refuted(record, "weights after one SGD step match", "weight 0: max abs error"), outcomes(record)
    assert outcomes(record)["gradients match the CPU reference"] is Verdict.HOLDS


def test_compile_matches_eager_is_refuted_where_torch_compile_compiles_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(torch, "compile", lambda module, **options: module)
    record = run_gallery("compile_matches_eager", monkeypatch, tmp_path)
    assert refuted(record, "runs on the device and compiles a graph", "Dynamo compiled no graph"), outcomes(record)
    assert outcomes(record)["forward outputs match eager within fp32 tolerance"] is Verdict.HOLDS


class GradientsAPercentHigh(torch.autograd.Function):
    """The identity forward, with a backward 1% high: a compiled graph whose gradients are wrong."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * 1.01


def gradients_a_percent_high(graph, inputs):
    return lambda *args: [GradientsAPercentHigh.apply(out) for out in graph.forward(*args)]


def test_compile_matches_eager_is_refuted_by_a_compiler_with_wrong_gradients(monkeypatch, tmp_path):
    record = run_compiled_by("compile_matches_eager", monkeypatch, tmp_path, gradients_a_percent_high, "wrong_grads")
    assert refuted(record, "gradients match eager", "max abs error"), outcomes(record)
    assert outcomes(record)["forward outputs match eager within fp32 tolerance"] is Verdict.HOLDS


def test_autocast_is_refuted_where_autocast_is_not_available_for_the_device_type(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.amp, "is_autocast_available", lambda device_type: False)
    record = run_gallery("autocast_device_type", monkeypatch, tmp_path)
    assert refuted(record, "is_autocast_available(device_type) is True", "is_autocast_available('cpu'): got False"), (
        outcomes(record)
    )


def test_rng_streams_is_refuted_where_the_move_to_the_device_rounds_the_values(monkeypatch, tmp_path):
    a_second_cpu(monkeypatch)
    to = torch.Tensor.to

    def lossy_move(self, *args, **kwargs):
        out = to(self, *args, **kwargs)
        moved = SECOND_CPU in args or kwargs.get("device") == SECOND_CPU
        return to(to(out, torch.bfloat16), out.dtype) if moved and out.is_floating_point() else out

    monkeypatch.setattr(torch.Tensor, "to", lossy_move)
    record = run_gallery("rng_streams_per_device", monkeypatch, tmp_path)
    assert refuted(record, "drawn on the CPU and moved to the device", "against the CPU stream: values differ"), (
        outcomes(record)
    )


def test_nccl_without_cuda_is_refuted_where_gloo_all_reduce_doubles(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.distributed, "all_reduce", lambda tensor, *args, **kwargs: tensor.mul_(2))
    record = run_gallery("nccl_without_cuda", monkeypatch, tmp_path)
    assert refuted(record, "the same group on gloo", "all_reduce over one process: values differ"), outcomes(record)


RENAME_DOES_NOTHING = "import torch.utils\ntorch.utils.rename_privateuse1_backend = lambda name: None\n"


def test_privateuse1_rename_is_refuted_where_renaming_the_slot_does_nothing(monkeypatch, tmp_path):
    fresh_processes_run(monkeypatch, tmp_path, RENAME_DOES_NOTHING)
    record = run_gallery("privateuse1_named_device", monkeypatch, tmp_path)
    assert refuted(record, "after rename_privateuse1_backend('foo')", "PrivateUse1 name after the rename: got"), (
        outcomes(record)
    )


def test_hf_static_cache_is_refuted_where_the_dynamic_cache_is_static(monkeypatch, tmp_path):
    import transformers

    generate = transformers.LlamaForCausalLM.generate

    def always_static(model, *args, cache_implementation=None, **kwargs):
        return generate(model, *args, cache_implementation=cache_implementation or "static", **kwargs)

    monkeypatch.setattr(transformers.LlamaForCausalLM, "generate", always_static)
    record = run_gallery("hf_static_cache_shapes", monkeypatch, tmp_path)
    assert refuted(record, "the K/V cache grows by one position", "between steps, not by 1"), outcomes(record)


def test_hf_static_cache_is_refuted_where_the_static_cache_gets_a_growing_mask(monkeypatch, tmp_path):
    # A transformers that feeds a static cache's model a 2D attention mask over the tokens so far, one position
    # longer at every step, instead of a 4D mask of the cache's fixed length: the cache keeps its shape, the model's
    # inputs do not, and generation completes.
    import transformers

    prepare = transformers.LlamaForCausalLM.prepare_inputs_for_generation

    def growing_mask(model, input_ids, *args, **kwargs):
        return {**prepare(model, input_ids, *args, **kwargs), "attention_mask": torch.ones_like(input_ids)}

    monkeypatch.setattr(transformers.LlamaForCausalLM, "prepare_inputs_for_generation", growing_mask)
    record = run_gallery("hf_static_cache_shapes", monkeypatch, tmp_path)
    assert refuted(record, "inputs of one fixed shape", "different input shape sets during decoding"), outcomes(record)
    assert outcomes(record)["static cache: every layer's K/V cache has one shape at every decoding step"] is (
        Verdict.HOLDS
    )


def summing_ddp(module, **options):
    """DistributedDataParallel whose communication hook sums the ranks' gradients instead of averaging them."""
    import torch.distributed as dist

    def all_reduce_sum(state, bucket):
        future = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
        return future.then(lambda done: done.value()[0])

    ddp = DDP(module, **options)
    ddp.register_comm_hook(None, all_reduce_sum)
    return ddp


DDP = torch.nn.parallel.DistributedDataParallel


def test_ddp_is_refuted_where_the_gradients_are_summed_not_averaged(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.nn.parallel, "DistributedDataParallel", summing_ddp)
    record = run_gallery("ddp_matches_single_process", monkeypatch, tmp_path)
    assert refuted(record, "match one single-process step", "rank 0 0.weight: max abs error"), outcomes(record)
    assert outcomes(record)["both ranks hold the same parameters after the step"] is Verdict.HOLDS


def test_fsdp2_is_refuted_where_the_sharded_model_computes_a_percent_high(monkeypatch, tmp_path):
    parallel = gallery_module(monkeypatch, "_parallel")
    fully_shard = parallel.fully_shard

    def computes_a_percent_high(module, **options):
        sharded = fully_shard(module, **options)
        sharded.register_forward_hook(lambda module, inputs, output: output * 1.01)
        return sharded

    monkeypatch.setattr(parallel, "fully_shard", computes_a_percent_high)
    record = run_gallery("fsdp2_matches_single_process", monkeypatch, tmp_path)
    assert refuted(record, "the gathered parameters match", "max abs error"), outcomes(record)


def test_pipeline_parallel_is_refuted_where_the_last_stage_returns_another_output(monkeypatch, tmp_path):
    parallel = gallery_module(monkeypatch, "_parallel")
    schedule_gpipe = parallel.ScheduleGPipe

    def off_output(stage, n_microbatches, **options):
        schedule = schedule_gpipe(stage, n_microbatches, **options)
        step = schedule.step
        schedule.step = lambda *args, **kwargs: (lambda out: None if out is None else out + 1e-2)(step(*args, **kwargs))
        return schedule

    monkeypatch.setattr(parallel, "ScheduleGPipe", off_output)
    record = run_gallery("pipeline_parallel_matches_single_process", monkeypatch, tmp_path)
    assert refuted(record, "the last stage's output", "pipeline output: max abs error"), outcomes(record)
    assert outcomes(record)["each stage's parameters match one single-process step on the whole batch"] is (
        Verdict.HOLDS
    )


def custom_op_decorator(monkeypatch, change):
    """torch.library.custom_op with ``change(options, fn)`` giving the options and function it registers."""
    custom_op = torch.library.custom_op

    def changed(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
        def register(fn):
            options, fn = change(dict(mutates_args=mutates_args, device_types=device_types, schema=schema), fn)
            return custom_op(name, fn, **options)

        return register if fn is None else register(fn)

    monkeypatch.setattr(torch.library, "custom_op", changed)


def test_custom_op_eager_is_refuted_where_the_kernel_computes_a_percent_high(monkeypatch, tmp_path):
    import functools

    def a_percent_high(options, fn):
        return options, functools.wraps(fn)(lambda x, factor: fn(x, factor) * 1.01)

    custom_op_decorator(monkeypatch, a_percent_high)
    record = run_gallery("custom_op_eager_and_compile", monkeypatch, tmp_path)
    assert refuted(record, "the op runs eagerly", "scale(x, 2.5): max abs error"), outcomes(record)


def test_custom_op_without_a_kernel_is_refuted_where_device_types_are_ignored(monkeypatch, tmp_path):
    custom_op_decorator(monkeypatch, lambda options, fn: ({**options, "device_types": None}, fn))
    record = run_gallery("custom_op_eager_and_compile", monkeypatch, tmp_path)
    assert refuted(record, "without a kernel raises", "an op with no cpu kernel ran on cpu"), outcomes(record)


def a_hundredth_high(graph, inputs):
    return lambda *args: [out + 1e-2 for out in graph.forward(*args)]


def test_custom_op_compile_is_refuted_by_a_compiler_that_changes_the_result(monkeypatch, tmp_path):
    record = run_compiled_by("custom_op_eager_and_compile", monkeypatch, tmp_path, a_hundredth_high, "hundredth_high")
    assert refuted(record, "compiles it as one node", "compiled fn: max abs error"), outcomes(record)


def installed_backend_package(monkeypatch, tmp_path, sitecustomize: str) -> None:
    """A distribution ``standin-backend`` declaring a torch.backends entry point (module standin_backend, whose
    autoload registers nothing), installed where every fresh Python process finds it, which runs ``sitecustomize``."""
    fresh_processes_run(monkeypatch, tmp_path, sitecustomize)
    site = tmp_path / "site"
    (site / "standin_backend.py").write_text("def autoload():\n    pass\n", encoding="utf-8")
    dist_info = site / "standin_backend-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: standin-backend\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(
        "[torch.backends]\nstandin = standin_backend:autoload\n", encoding="utf-8"
    )


def test_backend_autoload_is_refuted_where_a_package_imports_itself_with_autoload_off(monkeypatch, tmp_path):
    installed_backend_package(monkeypatch, tmp_path, "import standin_backend\n")  # as a .pth line would
    record = run_gallery("backend_autoload", monkeypatch, tmp_path)
    assert refuted(
        record, "none with autoload off", "standin_backend imported (TORCH_DEVICE_BACKEND_AUTOLOAD=0): got"
    ), outcomes(record)


def test_backend_autoload_is_refuted_where_autoload_registers_no_device(monkeypatch, tmp_path):
    from torchclaims import backends

    installed_backend_package(monkeypatch, tmp_path, "")
    monkeypatch.setattr(backends.Backend, "device", lambda self: torch.device("privateuseone"))
    record = run_gallery(
        "backend_autoload", monkeypatch, tmp_path, as_backend="neuron", primary_package="standin-backend"
    )
    assert refuted(record, "needs no explicit import", "standin-backend declares an entry point, yet after"), outcomes(
        record
    )


def dispatch_model_that_never_moves(model, device_map, **options):
    """An accelerate whose dispatch_model keeps a one-device map's model where it is, family detected or not."""
    model.hf_device_map = dict(device_map)
    return model


def test_accelerate_dispatch_control_is_refuted_where_dispatch_model_never_moves_the_model(monkeypatch, tmp_path):
    import accelerate
    import accelerate.big_modeling

    for module in (accelerate, accelerate.big_modeling):
        monkeypatch.setattr(module, "dispatch_model", dispatch_model_that_never_moves)
    record = run_gallery("accelerate_dispatch_int_device", monkeypatch, tmp_path)
    assert refuted(record, "control: with no family detected", "model.to calls were [], expected [(0,)]"), outcomes(
        record
    )


def test_tensor_parallel_is_refuted_where_the_parallelized_model_computes_a_percent_high(monkeypatch, tmp_path):
    parallel = gallery_module(monkeypatch, "_parallel")
    parallelize_module = parallel.parallelize_module

    def a_percent_high(module, mesh, plan):
        parallelized = parallelize_module(module, mesh, plan)
        parallelized.register_forward_hook(lambda module, inputs, output: output * 1.01)
        return parallelized

    monkeypatch.setattr(parallel, "parallelize_module", a_percent_high)
    record = run_gallery("tensor_sequence_parallel", monkeypatch, tmp_path)
    assert refuted(record, "tensor parallel: outputs and parameters after one step", "max abs error"), outcomes(record)


def first_load_lands_on_meta(monkeypatch, model_class) -> None:
    """``model_class.from_pretrained`` whose first model lands on the meta device: a library that placed it on a
    device of its choosing (the only device type here besides the CPU); later loads are left alone."""
    from_pretrained, loads = model_class.from_pretrained.__func__, []

    def landing(cls, *args, **kwargs):
        model = from_pretrained(cls, *args, **kwargs)
        loads.append(model)
        return model.to("meta") if len(loads) == 1 else model

    monkeypatch.setattr(model_class, "from_pretrained", classmethod(landing))


def test_hf_training_args_is_refuted_where_from_pretrained_places_the_model_elsewhere(monkeypatch, tmp_path):
    import transformers

    a_second_cpu(monkeypatch)
    first_load_lands_on_meta(monkeypatch, transformers.AutoModelForCausalLM)
    record = run_gallery("hf_training_args_device", monkeypatch, tmp_path)
    assert refuted(record, "from_pretrained without device_map leaves", "against the CPU: got ['meta']"), outcomes(
        record
    )


def test_hf_device_map_auto_is_refuted_where_auto_places_the_model_off_the_predicted_device(monkeypatch, tmp_path):
    import transformers

    a_second_cpu(monkeypatch)
    first_load_lands_on_meta(monkeypatch, transformers.AutoModelForCausalLM)
    record = run_gallery("hf_device_map_auto", monkeypatch, tmp_path)
    assert refuted(record, "lands where get_max_memory's branches predict", "got ['meta']"), outcomes(record)
