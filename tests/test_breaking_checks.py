"""Each claim's check, run against a stand-in on which the claim is false, is refuted for the stated reason."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from breaking import GALLERY, lazy_moves, outcomes, refuted, run_gallery

from torchclaims.records import Verdict


def test_eager_mode_holds_on_an_eager_stand_in(monkeypatch, tmp_path):
    record = run_gallery("torchneuron_eager_mode", monkeypatch, tmp_path, as_backend="neuron")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_eager_mode_is_refuted_on_a_lazy_backend(monkeypatch, tmp_path):
    lazy_moves(monkeypatch)
    record = run_gallery("torchneuron_eager_mode", monkeypatch, tmp_path, as_backend="neuron")
    assert refuted(record, "not when a value is read"), outcomes(record)


def test_checkpoint_map_location_holds_on_the_cpu(monkeypatch, tmp_path):
    record = run_gallery("checkpoint_map_location", monkeypatch, tmp_path)
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_a_checkpoint_that_does_not_move_is_refuted(monkeypatch, tmp_path):
    # A torch.load that puts everything on the CPU, whatever the checkpoint says it was saved from.
    load = torch.load
    monkeypatch.setattr(torch, "load", lambda f, map_location=None, **kw: load(f, map_location="cpu", **kw))
    record = run_gallery("checkpoint_map_location", monkeypatch, tmp_path)
    assert refuted(record, "returns to the device it was saved from"), outcomes(record)
    assert outcomes(record)["loading a checkpoint from an unavailable device without map_location raises"] is Verdict.REFUTED


class StandInGpu:
    """torch.cuda's view of a stand-in GPU, and a generator drawing as PyTorch's CUDA kernel would on
    ``draws_like_sms`` SMs (None: the CPU's own generator, a device with a different RNG)."""

    SMS, THREADS = 8, 2048

    def __init__(self, monkeypatch, draws_like_sms):
        monkeypatch.syspath_prepend(str(GALLERY))
        import _philox

        props = SimpleNamespace(name="stand-in GPU", multi_processor_count=self.SMS, max_threads_per_multi_processor=self.THREADS)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: props)
        if draws_like_sms is None:
            return
        like = (draws_like_sms, self.THREADS)
        monkeypatch.setattr(torch, "randint", lambda low, high, size, device=None: torch.from_numpy(_philox.randint(size[0], high, *like)))
        monkeypatch.setattr(torch, "randn", lambda n, device=None: torch.from_numpy(_philox.randn(n, *like).astype("float32")))


def test_rng_sm_dependence_holds_on_a_gpu_that_draws_as_its_sm_count_gives(monkeypatch, tmp_path):
    StandInGpu(monkeypatch, draws_like_sms=StandInGpu.SMS)
    record = run_gallery("cuda_rng_sm_dependence", monkeypatch, tmp_path, as_backend="cuda")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_rng_sm_dependence_is_refuted_on_a_device_with_a_different_rng(monkeypatch, tmp_path):
    StandInGpu(monkeypatch, draws_like_sms=None)
    record = run_gallery("cuda_rng_sm_dependence", monkeypatch, tmp_path, as_backend="cuda")
    assert refuted(record, "grid read back"), outcomes(record)


def test_rng_sm_dependence_is_refuted_when_the_launch_ignores_the_sm_count(monkeypatch, tmp_path):
    # The GPU reports 8 SMs but launches the grid of 4: what it draws does not follow its SM count.
    StandInGpu(monkeypatch, draws_like_sms=StandInGpu.SMS // 2)
    record = run_gallery("cuda_rng_sm_dependence", monkeypatch, tmp_path, as_backend="cuda")
    assert refuted(record, "grid read back"), outcomes(record)
    assert outcomes(record)["torch.randint equals the rebuild for this GPU's SM count, exactly"] is Verdict.REFUTED


def test_int_scatter_is_refuted_on_a_backend_that_rounds_through_float32(monkeypatch, tmp_path):
    scatter_add_ = torch.Tensor.scatter_add_

    def through_float32(self, dim, index, src):
        rounded = scatter_add_(self.float(), dim, index, src.float())
        return self.copy_(rounded.to(self.dtype))

    monkeypatch.setattr(torch.Tensor, "scatter_add_", through_float32)
    record = run_gallery("int_scatter_precision", monkeypatch, tmp_path)
    assert refuted(record, "scatter_add_ is exact or raises (eager)"), outcomes(record)


def test_int_scatter_is_refuted_where_the_neuron_compiler_is_exact(monkeypatch, tmp_path):
    # AWS says the Neuron compiler converts integer scatter operands to f32: an exact compiled result contradicts it.
    import torch._dynamo

    torch._dynamo.register_backend(lambda graph, inputs: graph.forward, name="neuron")
    record = run_gallery("int_scatter_precision", monkeypatch, tmp_path, as_backend="neuron", compile_backend="neuron")
    assert refuted(record, "rounded through f32"), outcomes(record)
