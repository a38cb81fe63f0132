"""
torch-tpu installed on a host without a TPU: autoloaded, inert, and what it offers
==================================================================================

:claim-verdict:`torchtpu-package-without-tpu`

The claim: installed as a user would (``pip install torch-tpu``) on a machine
that has no TPU, TorchTPU is loaded by ``import torch``, registers nothing,
and tells callers to ask ``torch.accelerator``; its wheel names the torch
releases it accepts and ships a compiled layer for each; its default eager
mode and CPU-fallback setting can be read; ``torch.tpu`` mirrors part of
``torch.cuda``; and transformers' TorchTPU detection answers without raising.

Every check reads the installed package itself. The run is evidence about the
vendor's package, never about TPU hardware: it happens on the CPU backend with
``torch_tpu`` importable. Without torch-tpu every check reports unverified.
"""

import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import torch

from torchclaims.verify import verification

v = verification(
    "torchtpu-package-without-tpu",
    inputs="the installed torch-tpu distribution, a fresh process per autoload setting",
    method="entry points, the wheel's metadata and files, and torch / torch.tpu / transformers calls, each read on "
    "this host",
)

PACKAGE = "torch-tpu"
TPU = "tpu"  # the device string TorchTPU registers: data under test, never the device this script runs on
try:
    VERSION = importlib.metadata.version(PACKAGE)
except importlib.metadata.PackageNotFoundError:
    VERSION = None
print(f"{PACKAGE}: {VERSION or 'not installed'}; torch {torch.__version__}; configured: {v.backend.name}")


def require_package(check):
    check.measure(f"{PACKAGE} installed", VERSION or "no")
    if VERSION is None:
        check.unsupported(f"{PACKAGE} is not installed in this environment (pip install torch-tpu==0.2.0 to check it)")


def tpu_present():
    current = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    return current is not None and current.type == TPU


def require_no_tpu(check):
    require_package(check)
    if tpu_present():
        check.unsupported("this host has a TPU: the check is about a host without one")


# %%
# Autoload through the entry point
# --------------------------------
# Two fresh processes run a bare ``import torch``, one with
# ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``; each says whether ``torch_tpu`` was imported.

CHILD = "import sys, torch; print(__import__('json').dumps('torch_tpu' in sys.modules))"


def normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()  # the wheel's dist-info says torch_tpu


def imported_by_bare_import(autoload):
    env = {k: val for k, val in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    if autoload is not None:
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = autoload
    run = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"child exited with {run.returncode}: {run.stderr.strip()[-400:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


with v.check("import torch loads torch_tpu through its torch.backends entry point; autoload off stops it") as check:
    require_package(check)
    entry_points = [
        e
        for e in importlib.metadata.entry_points(group="torch.backends")
        if e.dist and normalized(e.dist.name) == PACKAGE
    ]
    check.measure(
        "torch.backends entry points of torch-tpu", ", ".join(f"{e.name} = {e.value}" for e in entry_points) or "none"
    )
    check.expect(bool(entry_points), "torch-tpu declares no torch.backends entry point")
    check.equal(imported_by_bare_import(None), True, "torch_tpu imported by a bare import torch")
    check.equal(imported_by_bare_import("0"), False, "torch_tpu imported with TORCH_DEVICE_BACKEND_AUTOLOAD=0")

# %%
# The torch releases the wheel accepts
# ------------------------------------
# The requirement in the wheel's metadata against the compiled layers it ships
# (``torch_tpu/_internal/env_<major>_<minor>_<patch>.so``).


def release(text):
    return tuple(int(part) for part in text.split("+")[0].split(".")[:2])


with v.check(
    "the wheel's torch requirement and its compiled layers name the same releases, this torch among them"
) as check:
    require_package(check)
    requirement = next((r for r in importlib.metadata.requires(PACKAGE) or [] if re.match(r"torch\s*[<>=!]", r)), "")
    check.measure("torch requirement in the metadata", requirement or "none")
    bounds = re.fullmatch(r"torch\s*>=\s*([\d.]+)\s*,\s*<=\s*([\d.]+)", requirement.split(";")[0].strip())
    if not bounds:
        check.unsupported(f"the requirement {requirement!r} is not of the form torch>=A,<=B that this check reads")
    low, high = release(bounds[1]), release(bounds[2])
    package_dir = Path(importlib.util.find_spec("torch_tpu").submodule_search_locations[0])
    layers = sorted(
        {
            release(m[1].replace("_", "."))
            for m in (
                re.fullmatch(r"env_(\d+_\d+)_\d+\..*so", p.name) for p in (package_dir / "_internal").glob("env_*.so")
            )
            if m
        }
    )
    check.measure("compiled layers (torch releases)", ", ".join(f"{a}.{b}" for a, b in layers) or "none")
    wanted = [(low[0], minor) for minor in range(low[1], high[1] + 1)] if low[0] == high[0] else None
    check.expect(wanted is not None and layers == wanted, f"layers {layers} do not match the range {low}..{high}")
    check.expect(release(torch.__version__) in layers, f"no compiled layer for the installed torch {torch.__version__}")

# %%
# What it registers without a TPU
# -------------------------------

with v.check("without a TPU it registers no device, and torch.tpu.is_available() points to torch.accelerator") as check:
    require_no_tpu(check)
    check.equal(torch._C._get_privateuse1_backend_name(), "privateuseone", "PrivateUse1 backend name")
    try:
        parsed = str(torch.device(TPU))
    except RuntimeError as exc:
        parsed = f"RuntimeError: {str(exc).splitlines()[0][:120]}"
    check.measure("torch.device('tpu')", parsed)
    check.expect(parsed.startswith("RuntimeError"), f"torch.device('tpu') parsed as {parsed}")
    check.equal(torch.accelerator.is_available(), False, "torch.accelerator.is_available()")
    check.equal(str(torch.accelerator.current_accelerator()), "None", "torch.accelerator.current_accelerator()")
    try:
        answer = f"returned {torch.tpu.is_available()!r}"
    except RuntimeError as exc:
        answer = f"RuntimeError: {exc}"
    check.measure("torch.tpu.is_available()", answer[:300])
    check.expect(
        answer.startswith("RuntimeError") and "torch.accelerator" in answer, f"torch.tpu.is_available() {answer[:200]}"
    )

# %%
# Default execution settings
# --------------------------
# The eager mode through the public ``torch.tpu.eager_mode``; the CPU fallback
# setting only through the internal ``torch_tpu._internal.execution_mode``.

with v.check("default eager mode is DEFER_NEVER and CPU fallback is off") as check:
    require_package(check)
    from torch_tpu._internal import execution_mode

    mode = torch.tpu.eager_mode
    check.equal(getattr(mode, "name", str(mode)), "DEFER_NEVER", "torch.tpu.eager_mode")
    check.equal(execution_mode.enable_cpu_fallback, False, "execution_mode.enable_cpu_fallback")

# %%
# torch.cuda-style calls
# ----------------------

CUDA_STYLE = (
    "synchronize",
    "current_device",
    "set_device",
    "get_device_name",
    "get_device_properties",
    "manual_seed",
    "manual_seed_all",
    "get_rng_state",
    "set_rng_state",
    "Stream",
    "Event",
    "current_stream",
    "stream",
)
MEMORY = (
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "empty_cache",
    "mem_get_info",
    "reset_peak_memory_stats",
    "memory_stats",
)

with v.check(
    "torch.tpu offers torch.cuda's device, stream, event and RNG calls but none of its memory counters"
) as check:
    require_package(check)
    check.expect(
        all(hasattr(torch.cuda, name) for name in CUDA_STYLE + MEMORY), "the list names a call torch.cuda lacks"
    )
    offered = [name for name in CUDA_STYLE if hasattr(torch.tpu, name)]
    counters = [name for name in MEMORY if hasattr(torch.tpu, name)]
    check.measure("torch.cuda-style calls in torch.tpu", f"{len(offered)} of {len(CUDA_STYLE)}")
    check.measure("memory counters in torch.tpu", ", ".join(counters) or "none")
    check.equal(sorted(set(CUDA_STYLE) - set(offered)), [], "torch.cuda-style calls missing from torch.tpu")
    check.equal(counters, [], "torch.cuda memory counters in torch.tpu")

# %%
# transformers' detection
# -----------------------

with v.check("transformers' is_torch_tpu_available() answers False without raising") as check:
    require_no_tpu(check)
    import transformers
    from transformers import utils as hf_utils

    check.measure("transformers", transformers.__version__)
    if not hasattr(hf_utils, "is_torch_tpu_available"):
        check.unsupported(f"transformers {transformers.__version__} has no is_torch_tpu_available (5.24 has it)")
    check.equal(hf_utils.is_torch_tpu_available(), False, "transformers.utils.is_torch_tpu_available()")

v.finish()
