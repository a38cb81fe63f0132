"""Backend descriptors, their resolution, and backends registered by other packages."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from torchclaims import backends
from torchclaims.backends import (
    AUTO_ORDER,
    BACKEND_ENV_VAR,
    BACKEND_NAMES,
    BUILTIN_BACKENDS,
    Backend,
    all_backends,
    requested_backend,
    resolve_backend,
)
from torchclaims.errors import UsageError

EXPECTED = {"cpu", "cuda", "rocm", "mps", "xpu", "xla", "neuron", "tpu"}


def test_builtin_backends_are_the_documented_set():
    assert set(BACKEND_NAMES) == EXPECTED
    assert len(BACKEND_NAMES) == len(set(BACKEND_NAMES))
    assert set(AUTO_ORDER) == EXPECTED and AUTO_ORDER[-1] == "cpu"


@pytest.mark.parametrize("backend", BUILTIN_BACKENDS, ids=lambda b: b.name)
def test_every_builtin_descriptor_is_complete(backend):
    assert backend.description.strip()
    assert backend.device_type and backend.device_type == backend.device_type.lower()
    assert backend.dist_backend
    assert backend.compile_backend
    assert backend.packages and "torch" in backend.packages
    assert backend.primary_package == "torch" or backend.primary_package in backend.packages
    assert all(isinstance(prefix, str) and prefix for prefix in backend.env_prefixes)
    assert callable(backend.unavailable) and callable(backend.synchronize) and callable(backend.device_name)


def test_rocm_reuses_the_cuda_device_type():
    by_name = {b.name: b for b in BUILTIN_BACKENDS}
    assert by_name["rocm"].device_type == "cuda"
    assert by_name["cpu"].dist_backend == "gloo"
    assert by_name["cuda"].dist_backend == "nccl"


def test_resolve_cpu():
    backend, why = resolve_backend("cpu")
    assert backend.name == "cpu"
    assert why == "cpu was requested"
    assert backend.check_available() is None
    assert backend.device() == torch.device("cpu")
    assert backend.device_name()
    backend.synchronize()  # a no-op on the CPU, must not raise


def test_resolving_an_unknown_name_lists_the_choices():
    with pytest.raises(UsageError) as info:
        resolve_backend("gaudi")
    message = str(info.value)
    assert "'gaudi'" in message
    for name in ("auto", *BACKEND_NAMES):
        assert name in message


@pytest.mark.skipif(
    torch.cuda.is_available() or torch.backends.mps.is_available(),
    reason="this machine has an accelerator; auto would rightly pick it",
)
def test_auto_on_this_machine_picks_cpu_and_says_what_was_unavailable():
    backend, why = resolve_backend("auto")
    assert backend.name == "cpu"
    assert why.startswith("auto picked cpu")
    assert "cuda:" in why
    for name in AUTO_ORDER[:-1]:
        assert f"{name}:" in why  # every skipped candidate is named with its reason


def test_tpu_is_unavailable_without_its_plugin():
    backend, _ = resolve_backend("tpu")
    assert "torch_tpu" in backend.check_available()


def fake_backend(name, reason=None, **overrides):
    values = dict(
        name=name,
        description=f"fake {name}",
        device_type="cpu",
        dist_backend="gloo",
        compile_backend="inductor",
        packages=("torch",),
        unavailable=lambda: reason,
    )
    values.update(overrides)
    return Backend(**values)


def test_auto_takes_the_first_usable_backend_in_order(monkeypatch):
    replaced = tuple(
        fake_backend(b.name, None if b.name in ("xpu", "cpu") else f"no {b.name} here") for b in BUILTIN_BACKENDS
    )
    monkeypatch.setattr(backends, "BUILTIN_BACKENDS", replaced)
    backend, why = resolve_backend("auto")
    assert backend.name == "xpu"
    assert why == "auto picked xpu (not available: cuda: no cuda here; rocm: no rocm here)"


def test_auto_when_the_first_candidate_is_usable(monkeypatch):
    monkeypatch.setattr(backends, "BUILTIN_BACKENDS", tuple(fake_backend(b.name) for b in BUILTIN_BACKENDS))
    backend, why = resolve_backend("auto")
    assert backend.name == AUTO_ORDER[0]
    assert "first candidate" in why


def test_auto_with_nothing_usable_is_a_usage_error(monkeypatch):
    monkeypatch.setattr(backends, "BUILTIN_BACKENDS", tuple(fake_backend(b.name, "broken") for b in BUILTIN_BACKENDS))
    with pytest.raises(UsageError, match="no usable backend.*cpu: broken"):
        resolve_backend("auto")


def test_a_plugin_that_raises_is_unavailable_with_the_cause():
    def boom():
        raise RuntimeError("driver mismatch")

    assert fake_backend("x", unavailable=boom).check_available() == "RuntimeError: driver mismatch"


def test_a_backend_needing_a_missing_module_names_it():
    backend = fake_backend("x", modules=("surely_not_an_installed_module",))
    assert backend.check_available() == "package surely_not_an_installed_module is not installed"


# -- requested_backend ---------------------------------------------------------------


def test_requested_backend_defaults_to_cpu(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV_VAR, raising=False)
    assert requested_backend() == "cpu"
    assert requested_backend(None) == "cpu"


def test_requested_backend_reads_the_environment(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV_VAR, "xla")
    assert requested_backend() == "xla"


def test_explicit_backend_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV_VAR, "xla")
    assert requested_backend("cuda") == "cuda"


def test_empty_environment_value_falls_back_to_cpu(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV_VAR, "")
    assert requested_backend() == "cpu"


# -- entry points ----------------------------------------------------------------------


class FakeEntryPoint:
    def __init__(self, name, value):
        self.name = name
        self._value = value

    def load(self):
        return self._value


def patch_entry_points(monkeypatch, *entries):
    seen_groups = []

    def entry_points(**kwargs):
        seen_groups.append(kwargs.get("group"))
        return list(entries)

    monkeypatch.setattr(backends.importlib.metadata, "entry_points", entry_points)
    backends.registered_backends.cache_clear()
    return seen_groups


@pytest.fixture(autouse=True)
def _forget_patched_plugins():
    """Entry points are read once per process; a test that patches them must not leave its backends behind."""
    yield
    backends.registered_backends.cache_clear()


def test_entry_point_backend_is_picked_up(monkeypatch):
    gaudi = fake_backend("gaudi", device_type="hpu", dist_backend="hccl", packages=("torch", "habana-torch-plugin"))
    groups = patch_entry_points(monkeypatch, FakeEntryPoint("gaudi", gaudi))
    assert all_backends()["gaudi"] is gaudi
    assert set(BACKEND_NAMES) <= set(all_backends())
    backend, why = resolve_backend("gaudi")
    assert backend is gaudi and why == "gaudi was requested"
    assert groups and set(groups) == {"torchclaims.backends"}
    with pytest.raises(UsageError) as info:
        resolve_backend("nothing")
    assert "gaudi" in str(info.value)  # the choices include the plugin


def test_entry_point_that_is_not_a_backend_is_a_usage_error(monkeypatch):
    patch_entry_points(monkeypatch, FakeEntryPoint("broken-plugin", {"name": "not a Backend"}))
    with pytest.raises(UsageError, match="'broken-plugin'.*not a torchclaims Backend"):
        all_backends()
    with pytest.raises(UsageError):
        resolve_backend("cpu")


def test_descriptors_are_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        BUILTIN_BACKENDS[0].name = "other"  # type: ignore[misc]


# -- vendor packages on a host without their device ----------------------------------


def test_every_fingerprint_records_the_vendor_plugins_installed(monkeypatch):
    from torchclaims.evidence import fingerprint

    assert {"torch-tpu", "libtpu", "torch-neuronx", "torch_xla"} <= set(backends.VENDOR_PACKAGES)
    cpu = all_backends()["cpu"]
    recorded = fingerprint.recorded_packages(cpu)
    assert recorded[: len(cpu.packages)] == cpu.packages and "torch-tpu" in recorded


@pytest.mark.parametrize(
    ("backend", "packages", "label"),
    [
        (
            "cpu",
            {"torch": "2.13.0", "torch-tpu": "0.2.0", "libtpu": "0.0.52"},
            "torch 2.13.0 + torch-tpu 0.2.0 (vendor package, no TPU)",
        ),
        (
            "cpu",
            {"torch": "2.13.0", "torch-neuronx": "2.14.0"},
            "torch 2.13.0 + torch-neuronx 2.14.0 (vendor package, no Trainium device)",
        ),
        (
            "cpu",
            {"torch": "2.13.0+cpu", "torch-tpu": "0.2.0"},
            "torch 2.13.0+cpu (CPU-only build) + torch-tpu 0.2.0 (vendor package, no TPU)",
        ),
        ("cpu", {"torch": "2.13.0"}, "torch 2.13.0"),
        ("tpu", {"torch": "2.13.0", "torch-tpu": "0.2.0"}, "torch-tpu 0.2.0 on torch 2.13.0"),
        ("xla", {"torch": "2.9.0", "torch_xla": "2.9.0", "libtpu": "0.0.52"}, "torch_xla 2.9.0 on torch 2.9.0"),
        ("xla", {"torch": "2.9.0+cu128", "torch_xla": "2.9.0"}, "torch_xla 2.9.0 on torch 2.9.0+cu128 (CUDA build)"),
    ],
)
def test_a_run_with_a_vendor_package_but_not_its_device_is_a_slice_of_its_own(backend, packages, label):
    from factories import make_environment
    from torchclaims.evidence.store import version_label

    env = make_environment(backend=backend, torch=packages["torch"], packages=packages)
    assert version_label(env) == label
