"""
Stock PyTorch has no 'neuron' or 'tpu' device; an out-of-tree backend must add it
=================================================================================

:claim-verdict:`privateuse1-named-device`

The claim: in stock PyTorch, ``torch.device('neuron')`` and
``torch.device('tpu')`` raise ``RuntimeError`` and the PrivateUse1 slot is
called ``'privateuseone'``. ``torch.utils.rename_privateuse1_backend('foo')``
makes ``'foo'`` parse as a device string, but no tensor can be created on it
until a backend implementation is registered.

Both halves run in fresh Python processes. The first is started with
``TORCH_DEVICE_BACKEND_AUTOLOAD=0``, so that even on a host where torch-neuronx
or torch_tpu is installed it sees PyTorch without the backend package; the
second calls the rename, which cannot be undone. The name the PrivateUse1
slot has in this process, where the configured backend is loaded, is recorded
too (on Trainium it is the name torch-neuronx gave it).
"""

import json
import os
import subprocess
import sys

import torch

from torchclaims.verify import verification

v = verification(
    "privateuse1-named-device",
    inputs="device strings 'neuron' and 'tpu'; rename_privateuse1_backend('foo')",
    method="two fresh Python processes (autoload off) report what parses and what allocates",
)

# %%
# Two fresh processes
# -------------------
# Each child prints one JSON line. The device names are data under test: they
# are written into the child's code, never used as a device in this process.

STOCK_CHILD = r"""
import json, sys
import torch
report = {"privateuse1_name": torch._C._get_privateuse1_backend_name(), "parse": {}}
for name in ("neuron", "tpu"):
    try:
        torch.device(name)
        report["parse"][name] = "parsed"
    except Exception as exc:
        report["parse"][name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
report["backend_modules_loaded"] = sorted(m for m in ("torch_neuronx", "torch_tpu") if m in sys.modules)
print(json.dumps(report))
"""

RENAME_CHILD = r"""
import json
import torch
report = {}
torch.utils.rename_privateuse1_backend("foo")
report["name_after_rename"] = torch._C._get_privateuse1_backend_name()
try:
    report["parsed_as"] = str(torch.device("foo:0"))
except Exception as exc:
    report["parsed_as"] = None
    report["parse_error"] = f"{type(exc).__name__}: {exc}"
for label, make in (("torch.empty", lambda: torch.empty(2, device="foo")),
                    ("Tensor.to", lambda: torch.ones(2).to("foo"))):
    try:
        make()
        report[label] = "created"
    except Exception as exc:
        report[label] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
print(json.dumps(report))
"""


def start(code):
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    return subprocess.Popen([sys.executable, "-c", code], env=env, **pipes)


def result(process):
    out, err = process.communicate(timeout=120)
    if process.returncode != 0:
        raise RuntimeError(f"child exited with {process.returncode}: {err.strip()[-500:]}")
    return json.loads(out.strip().splitlines()[-1])


# Started together, so the two torch imports overlap.
stock_process, rename_process = start(STOCK_CHILD), start(RENAME_CHILD)
stock, renamed = result(stock_process), result(rename_process)
print(json.dumps({"stock": stock, "renamed": renamed}, indent=2))

# %%
# Without a backend package
# -------------------------

with v.check("without a backend package, 'neuron' and 'tpu' do not parse and the slot is 'privateuseone'") as check:
    if stock["backend_modules_loaded"]:
        loaded = stock["backend_modules_loaded"]
        check.unsupported(f"{loaded} loaded even with autoload off; no stock process to observe")
    for name, outcome in stock["parse"].items():
        check.measure(f"torch.device({name!r})", outcome, tolerance="RuntimeError")
        check.expect(outcome.startswith("RuntimeError"), f"torch.device({name!r}) gave: {outcome}")
    check.equal(stock["privateuse1_name"], "privateuseone", "PrivateUse1 name in a stock process")
    # Recorded, not judged: on Trainium torch-neuronx has claimed the slot in
    # this process; a stock build keeps 'privateuseone'.
    here = torch._C._get_privateuse1_backend_name()
    check.measure(f"PrivateUse1 name in this process ({v.device.type} backend loaded)", here)
    if here == v.device.type:
        check.note(f"the configured device type '{here}' is the renamed PrivateUse1 slot")

# %%
# After renaming the PrivateUse1 slot
# -----------------------------------
# The rename makes the name parse; allocating still needs a backend (with
# torch 2.13 the failure is a ModuleNotFoundError for ``torch.foo``).

with v.check("after rename_privateuse1_backend('foo'), 'foo' parses but no tensor can be created") as check:
    check.equal(renamed["name_after_rename"], "foo", "PrivateUse1 name after the rename")
    check.equal(renamed["parsed_as"], "foo:0", "torch.device('foo:0')")
    for label in ("torch.empty", "Tensor.to"):
        check.measure(f"{label} on 'foo'", renamed[label], tolerance="raises")
        check.expect(renamed[label] != "created", f"{label} created a tensor on 'foo' with no backend registered")

v.finish()
