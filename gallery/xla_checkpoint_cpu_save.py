"""
torch_xla checkpoints saved through the CPU load anywhere
=========================================================

:claim-verdict:`xla-checkpoint-cpu-save`

The claim: on torch_xla, a state_dict saved with
``torch_xla.core.xla_model.save`` (``xm.save``), or after moving the tensors to
the CPU, contains CPU tensors: it loads in a process that does not import
torch_xla, without ``map_location``, and its values equal the XLA tensors
copied to the CPU.

We build a small model on the XLA device, take one SGD step there (so the
weights are results of XLA computation, not just uploaded values), and save its
state_dict three ways: with ``xm.save``, with ``torch.save`` after ``.cpu()``,
and, as a contrast, with ``torch.save`` of the XLA tensors themselves. A fresh
Python process that imports only torch (checked: ``torch_xla`` is not in
``sys.modules``) loads each file without ``map_location`` and reports the
devices and values. Other backends report unverified.
"""

import json
import os
import subprocess
import sys
import tempfile

import torch

from torchclaims.verify import verification

v = verification(
    "xla-checkpoint-cpu-save",
    model="Linear(8, 4) + Linear(4, 2), float32, seed 0, after one SGD step on the XLA device",
    inputs="batch of 16 random inputs, MSE loss",
    method="save with xm.save / torch.save of .cpu() copies / torch.save of XLA tensors (contrast); "
    "torch.load without map_location in a fresh process that imports only torch; values compared bit for bit",
)

ON_XLA = v.backend.name == "xla"
if ON_XLA:
    # Only when torch_xla is the configured backend: elsewhere it may not be installed.
    import torch_xla.core.xla_model as xm

NOT_XLA = (
    f"torch_xla is not the configured backend (backend is {v.backend.name}); the claim is about saving "
    "torch_xla tensors"
)

# %%
# A model trained one step on the device
# --------------------------------------

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).to(v.device)
inputs, targets = torch.randn(16, 8).to(v.device), torch.randn(16, 2).to(v.device)
torch.nn.functional.mse_loss(model(inputs), targets).backward()
torch.optim.SGD(model.parameters(), lr=0.1).step()
v.sync()
state = model.state_dict()
expected = {name: t.cpu() for name, t in state.items()}  # the XLA tensors copied to the CPU
print({name: str(t.device) for name, t in state.items()})

# %%
# Loading in a process without torch_xla
# --------------------------------------
# The loader runs with the same Python, imports torch only, and prints what it
# found as JSON. It never passes ``map_location``.

LOADER = """
import json, sys
import torch
out = {"torch_xla imported": "torch_xla" in sys.modules}
try:
    sd = torch.load(sys.argv[1])
    out["devices"] = sorted({str(t.device) for t in sd.values()})
    torch.save({k: t.cpu() for k, t in sd.items()}, sys.argv[2])
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
out["torch_xla imported after load"] = "torch_xla" in sys.modules
print(json.dumps(out))
"""


def load_elsewhere(path):
    """torch.load(path) in a fresh process; returns its report and the tensors it saw."""
    roundtrip = path + ".seen"
    env = {k: val for k, val in os.environ.items() if not k.startswith(("PJRT_", "XLA_", "TORCHCLAIMS_"))}
    done = subprocess.run(
        [sys.executable, "-c", LOADER, path, roundtrip], capture_output=True, text=True, env=env, timeout=240
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"loader process failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    report = json.loads(lines[-1])
    seen = torch.load(roundtrip) if "error" not in report else None
    return report, seen


workdir = tempfile.mkdtemp(prefix="xla-checkpoint-")
SAVERS = {
    "xm.save(state_dict)": lambda path: xm.save(state, path),
    "torch.save of .cpu() copies": lambda path: torch.save({k: t.cpu() for k, t in state.items()}, path),
}


def verify_saver(check, label):
    if not ON_XLA:
        check.unsupported(NOT_XLA)
    path = os.path.join(workdir, label.split("(")[0].replace(" ", "_").replace(".", "_") + ".pt")
    SAVERS[label](path)
    report, seen = load_elsewhere(path)
    check.measure("torch_xla in sys.modules of the loading process", report["torch_xla imported after load"])
    check.expect(
        not report["torch_xla imported after load"], "the loading process imported torch_xla; it cannot show the claim"
    )
    if "error" in report:
        check.expect(False, f"torch.load without map_location raised {report['error']}")
        return
    check.measure("devices of the loaded tensors", ", ".join(report["devices"]))
    check.expect(report["devices"] == ["cpu"], f"the file holds tensors on {report['devices']}, not only cpu")
    check.equal(sorted(seen), sorted(expected), "state_dict keys")
    for name in expected:
        check.equal(seen[name], expected[name], f"{name} equals the XLA tensor copied to the CPU")


with v.check(
    "a state_dict saved with xm.save loads without torch_xla and without map_location, with equal values"
) as check:
    verify_saver(check, "xm.save(state_dict)")

with v.check("a state_dict saved after moving the tensors to the CPU does the same") as check:
    verify_saver(check, "torch.save of .cpu() copies")

# %%
# The contrast: saving the XLA tensors themselves
# -----------------------------------------------
# Not part of the claim; it shows why the advice exists. ``torch.save`` of XLA
# tensors records their device, and ``torch.load`` without ``map_location``
# tries to recreate them on XLA, which needs torch_xla in the loading process.

if ON_XLA:
    path = os.path.join(workdir, "xla_tensors.pt")
    torch.save(state, path)
    report, _ = load_elsewhere(path)
    print(f"torch.save of XLA tensors, loaded without torch_xla and without map_location: {report}")

v.finish()
