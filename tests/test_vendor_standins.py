"""Each vendor descriptor against a stand-in of the vendor's documented API
(tests/standins.py): detection, the environment fingerprint, synchronize and
device naming, before the hardware exists. Fixtures only: nothing here is a verdict.

Each backend runs in one child process, because a stand-in changes torch for
good (PrivateUse1 can be renamed once per process): first a host without the
device, then one with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import standins

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.processes  # a child process per stand-in backend

CHILD = """
import json, sys
import standins
backend_name = sys.argv[1]
from torchclaims.evidence.admission import environment_problems
from torchclaims.backends import resolve_backend
from torchclaims.evidence.fingerprint import collect
backend, _ = resolve_backend(backend_name)
standins.install(backend_name, hardware=False)
report = {"absent": backend.check_available()}
standins.install(backend_name, hardware=True)
report.update(reason=backend.check_available(), cuda_reason=resolve_backend("cuda")[0].check_available())
if report["reason"] is None:
    backend.synchronize()
    env = collect(backend)
    report.update(synced=standins.SYNCED, env=env.model_dump(mode="json"), problems=environment_problems(env))
if backend_name in LIBRARY_PATHS:  # the libraries' own detection, running against the stand-in
    from accelerate.utils import is_neuron_available
    from transformers.utils import import_utils as hf
    report["libraries"] = {
        "transformers is_torch_neuron_available": hf.is_torch_neuron_available(),
        "transformers is_torch_tpu_available": hf.is_torch_tpu_available(),
        "transformers get_device_type": hf.get_device_type(),
        "accelerate is_neuron_available": is_neuron_available(),
    }
print(json.dumps(report))
"""
REPORTS: dict[str, dict] = {}
# What transformers 5.24 and accelerate 1.15 decide on each stand-in (their is_* helpers and get_device_type).
LIBRARY_PATHS = {
    "neuron": {
        "transformers is_torch_neuron_available": True,
        "transformers is_torch_tpu_available": False,
        "transformers get_device_type": "neuron",
        "accelerate is_neuron_available": True,
    },
    "tpu": {
        "transformers is_torch_neuron_available": False,
        "transformers is_torch_tpu_available": True,
        "transformers get_device_type": "tpu",
        "accelerate is_neuron_available": False,
    },
    "rocm": {
        "transformers is_torch_neuron_available": False,
        "transformers is_torch_tpu_available": False,
        "transformers get_device_type": "rocm",
        "accelerate is_neuron_available": False,
    },
}


def report_of(tmp_path_factory, backend: str) -> dict:
    """One child process per backend, shared by the tests that read its report."""
    if backend not in REPORTS:
        REPORTS[backend] = run_standin(tmp_path_factory.mktemp(backend), backend, env_vars={EXPECTED[backend][5]: "0"})
    return REPORTS[backend]


def run_standin(tmp_path: Path, backend: str, env_vars: dict | None = None) -> dict:
    site = standins.write_site(tmp_path / "site", backend)
    paths = [str(site), str(ROOT / "src"), str(ROOT / "tests")]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TORCHCLAIMS_")},
        "PYTHONPATH": os.pathsep.join(paths),
        **(env_vars or {}),
    }
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # only the stand-in speaks for the vendor
    run = subprocess.run(
        [sys.executable, "-c", f"LIBRARY_PATHS = {sorted(LIBRARY_PATHS)!r}\n" + CHILD, backend],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


# backend -> (device string, device name, sync call, recorded packages, runtime, an environment variable it records)
EXPECTED = {
    "neuron": (
        "neuron",
        "neuron",
        "torch.accelerator.synchronize",
        {"torch-neuronx": "2.14.0", "neuronx-cc": "2.21.0"},
        None,
        "NEURON_RT_VISIBLE_CORES",
    ),
    "tpu": (
        "tpu",
        standins.DEVICE_NAMES["tpu"],
        "torch.accelerator.synchronize",
        {"torch-tpu": "0.2.0", "libtpu": "0.0.52"},
        None,
        "TPU_VISIBLE_CHIPS",
    ),
    "rocm": ("cuda", standins.DEVICE_NAMES["rocm"], "torch.cuda.synchronize", {}, "hip", "HIP_VISIBLE_DEVICES"),
    "mps": ("mps", None, "torch.mps.synchronize", {}, None, "PYTORCH_ENABLE_MPS_FALLBACK"),
    "xpu": ("xpu", standins.DEVICE_NAMES["xpu"], "torch.xpu.synchronize", {}, None, "ZE_AFFINITY_MASK"),
}


@pytest.mark.parametrize("backend", sorted(EXPECTED))
def test_the_descriptor_detects_names_syncs_and_fingerprints_the_standin(tmp_path_factory, backend):
    device, name, sync, packages, runtime, variable = EXPECTED[backend]
    report = report_of(tmp_path_factory, backend)
    assert report["reason"] is None, f"{backend} not detected on its stand-in: {report['reason']}"
    assert report["synced"] == [sync]
    env = report["env"]
    assert env["backend"] == backend and env["device"] == device
    if name is not None:
        assert env["device_name"] == name
    assert packages.items() <= env["packages"].items()
    assert (runtime in env["accelerator_runtime"]) if runtime else not {"hip"} & set(env["accelerator_runtime"])
    assert env["env_vars"].get(variable) == "0"
    assert report["problems"] == [], "the fingerprint must pass the load checks of a results file"


@pytest.mark.parametrize(
    ("backend", "words"),
    [
        ("neuron", "no Trainium (Neuron) device on this host"),
        ("tpu", "no Google TPU on this host"),
        ("rocm", "torch.cuda.is_available() is False"),
        ("mps", "torch.mps.is_available() is False"),
        ("xpu", "torch.xpu.is_available() is False"),
    ],
)
def test_without_the_device_the_reason_names_what_is_missing(tmp_path_factory, backend, words):
    assert words in report_of(tmp_path_factory, backend)["absent"]


def test_torchtpu_detection_never_calls_the_internal_is_available(tmp_path_factory):
    """The stand-in's torch.tpu.is_available() raises as TorchTPU 0.2.0's does; a
    descriptor that called it would report 'RuntimeError: is_available is internal...'."""
    report = report_of(tmp_path_factory, "tpu")
    assert report["reason"] is None and "internal" not in report["absent"]


def test_a_rocm_build_is_not_mistaken_for_cuda(tmp_path_factory):
    assert report_of(tmp_path_factory, "rocm")["cuda_reason"] == "this torch build is for ROCm (HIP)"


@pytest.mark.parametrize("backend", sorted(LIBRARY_PATHS))
def test_transformers_and_accelerate_detect_the_standin_through_their_own_code(tmp_path_factory, backend):
    assert report_of(tmp_path_factory, backend)["libraries"] == LIBRARY_PATHS[backend]
