"""
Out-of-tree backends load automatically through the torch.backends entry point
==============================================================================

:claim-verdict:`backend-autoload`

The claim: ``import torch`` loads every installed backend package that
declares an entry point in the ``torch.backends`` group, so code needs no
``import torch_neuronx``; ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns this off.

We start two fresh Python processes that differ only in
``TORCH_DEVICE_BACKEND_AUTOLOAD`` (unset, and ``0``). Both have a throwaway
demonstration plugin on their path, which declares a ``torch.backends`` entry
point, so the mechanism is seen on every machine. Each process reports, after
a bare ``import torch``: whether the demonstration plugin was called, which
installed entry-point modules were imported, and whether a tensor can be
created on the configured device type.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from torchclaims.verify import verification

v = verification(
    "backend-autoload",
    inputs="a throwaway plugin with a torch.backends entry point, plus whatever backend packages are installed",
    method="two fresh processes, TORCH_DEVICE_BACKEND_AUTOLOAD unset and =0, each reporting after a bare import torch",
)

# %%
# A throwaway plugin
# ------------------
# An installed distribution is just a ``*.dist-info`` folder next to its code:
# the ``entry_points.txt`` below is what a backend package such as
# torch-neuronx ships, reduced to the one line autoload reads.

DEMO = "torchclaims_demo_backend"
plugin_dir = Path(tempfile.mkdtemp(prefix="autoload-"))
(plugin_dir / f"{DEMO}.py").write_text("CALLED = False\n\ndef autoload():\n    global CALLED\n    CALLED = True\n")
dist_info = plugin_dir / f"{DEMO}-0.1.dist-info"
dist_info.mkdir()
(dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DEMO}\nVersion: 0.1\n")
(dist_info / "entry_points.txt").write_text(f"[torch.backends]\n{DEMO} = {DEMO}:autoload\n")

# %%
# Two fresh processes
# -------------------
# The child is given the configured device type as an argument and never
# imports a backend package itself.

CHILD = r"""
import importlib.metadata, json, sys
entry_points = list(importlib.metadata.entry_points(group="torch.backends"))
import torch
demo = sys.modules.get("torchclaims_demo_backend")
report = {
    "demo_called": bool(getattr(demo, "CALLED", False)),
    "entry_points": [
        {"name": e.name, "module": e.module, "dist": e.dist.name if e.dist else None,
         "imported": e.module in sys.modules}
        for e in entry_points if e.module != "torchclaims_demo_backend"
    ],
}
try:
    report["device"] = str(torch.empty(1, device=sys.argv[1]).device)
except Exception as exc:
    report["device_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
print(json.dumps(report))
"""


def start(autoload):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get("PYTHONPATH")]))}
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    if autoload is not None:
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = autoload
    cmd = [sys.executable, "-c", CHILD, v.device.type]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(process):
    out, err = process.communicate(timeout=180)
    if process.returncode != 0:
        raise RuntimeError(f"child exited with {process.returncode}: {err.strip()[-500:]}")
    return json.loads(out.strip().splitlines()[-1])


default_process, off_process = start(None), start("0")
default, off = result(default_process), result(off_process)
shutil.rmtree(plugin_dir)
print(json.dumps({"TORCH_DEVICE_BACKEND_AUTOLOAD unset": default, "TORCH_DEVICE_BACKEND_AUTOLOAD=0": off}, indent=2))

# %%
# The mechanism itself
# --------------------

with v.check("import torch calls a torch.backends entry point; TORCH_DEVICE_BACKEND_AUTOLOAD=0 skips it") as check:
    check.equal(default["demo_called"], True, "demo plugin called (autoload unset)")
    check.equal(off["demo_called"], False, "demo plugin called (TORCH_DEVICE_BACKEND_AUTOLOAD=0)")

# %%
# The backend packages installed here
# -----------------------------------

installed = default["entry_points"]
with v.check("every installed torch.backends entry point is imported by import torch, none with autoload off") as check:
    listed = ", ".join(f"{e['name']} ({e['dist']})" for e in installed)
    check.measure("installed torch.backends entry points", listed or "none")
    if not installed:
        check.unsupported("no installed package declares a torch.backends entry point; nothing to autoload here")
    for entry, entry_off in zip(installed, off["entry_points"], strict=True):
        check.equal(entry["imported"], True, f"{entry['module']} imported (autoload unset)")
        check.equal(entry_off["imported"], False, f"{entry_off['module']} imported (TORCH_DEVICE_BACKEND_AUTOLOAD=0)")

# %%
# The configured device after a bare ``import torch``
# ---------------------------------------------------
# A device type that works with autoload off is built into torch (cpu,
# cuda): no backend package is involved and the check does not apply.


def normalized(name):
    return re.sub(r"[-_.]+", "-", name or "").lower()


with v.check("the configured device needs no explicit import of its backend package") as check:
    check.measure("tensor on the configured device, autoload unset", default.get("device") or default["device_error"])
    check.measure("tensor on the configured device, autoload off", off.get("device") or off["device_error"])
    package = v.backend.primary_package
    declares = normalized(package) in {normalized(e["dist"]) for e in installed}
    if "device" in off:
        check.unsupported(f"'{v.device.type}' is built into torch (usable with autoload off): no backend package")
    if "device" not in default and not declares:
        check.unsupported(
            f"'{v.device.type}' is not usable after a bare import torch and {package} declares no torch.backends "
            "entry point, so it must be imported explicitly; the statement covers only packages that declare one"
        )
    error = default.get("device_error")
    check.expect("device" in default, f"{package} declares an entry point, yet after import torch: {error}")

v.finish()
