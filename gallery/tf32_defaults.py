"""
PyTorch does not use TF32 for float32 matmuls by default, but cuDNN may
=======================================================================

:claim-verdict:`tf32-defaults`

The claim: in a fresh process PyTorch does not use TF32 for float32 matmuls:
``torch.get_float32_matmul_precision()`` is ``'highest'`` and
``torch.backends.cuda.matmul.allow_tf32`` is False, while
``torch.backends.cudnn.allow_tf32`` is True. On NVIDIA Ampere or newer, a
float32 matmul at default settings is measurably closer to a float64 reference
than after ``set_float32_matmul_precision('high')``.

The flags are read in a fresh Python process, on any backend. The numeric half
multiplies two 1024x1024 float32 matrices on the configured device at the
default setting and at ``'high'``, and compares each with a float64 CPU
reference; it is judged only on an NVIDIA GPU of compute capability 8.0 or
newer ("measurably closer" is taken as at least 10 times smaller error).
"""

import json
import subprocess
import sys

import matplotlib.pyplot as plt
import torch
from _tf32 import matmul_relative_error

from torchclaims.verify import verification

v = verification(
    "tf32-defaults",
    inputs="two 1024x1024 float32 matrices, seed 0",
    method="flags read in a fresh process; relative Frobenius error against float64, default vs 'high'",
)

CUDA = "cuda"  # the device type TF32 matmuls are claimed for (data under test)
FACTOR = 10  # "measurably closer": at least this many times smaller error

# %%
# The flags in a fresh process
# ----------------------------
# Only the legacy getters are read: with torch 2.13, reading them after the
# newer ``fp32_precision`` setters have been used raises.

FRESH = r"""
import json, torch
print(json.dumps({
    "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
    "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
}))
"""
child = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, timeout=180)
if child.returncode != 0:
    raise RuntimeError(f"child exited with {child.returncode}: {child.stderr.strip()[-500:]}")
flags = json.loads(child.stdout.strip().splitlines()[-1])
print(json.dumps(flags, indent=2))

with v.check("defaults in a fresh process: 'highest', matmul TF32 off, cuDNN TF32 on") as check:
    check.equal(flags["torch.get_float32_matmul_precision()"], "highest", "torch.get_float32_matmul_precision()")
    check.equal(flags["torch.backends.cuda.matmul.allow_tf32"], False, "torch.backends.cuda.matmul.allow_tf32")
    check.equal(flags["torch.backends.cudnn.allow_tf32"], True, "torch.backends.cudnn.allow_tf32")

# %%
# Default against 'high' on the configured device
# -----------------------------------------------

# The measurement is in gallery/_tf32.py: a seeded 1024 x 1024 float32 matmul on
# the device against the float64 product on the CPU (relative Frobenius error).


errors = {"default ('highest')": matmul_relative_error(v, "highest"), "'high'": matmul_relative_error(v, "high")}
print({k: f"{e:.3g}" for k, e in errors.items()})

with v.check("on NVIDIA Ampere or newer, the default matmul is measurably closer to float64 than 'high'") as check:
    check.measure("relative error, default", errors["default ('highest')"])
    check.measure("relative error, 'high'", errors["'high'"])
    if v.device.type != CUDA or v.on_reference or torch.version.hip is not None:
        check.unsupported(f"needs an NVIDIA GPU; the configured backend is {v.backend.name}")
    capability = torch.cuda.get_device_capability(v.device)
    check.measure("compute capability", f"{capability[0]}.{capability[1]}")
    if capability < (8, 0):
        check.unsupported(f"compute capability {capability[0]}.{capability[1]} is older than Ampere (8.0)")
    ratio = errors["'high'"] / errors["default ('highest')"]
    check.measure("error ratio 'high' / default", ratio, tolerance=f">= {FACTOR}")
    check.expect(ratio >= FACTOR, f"'high' is only {ratio:.3g} times less accurate than the default")

# %%
# The two errors
# --------------

fig, ax = plt.subplots(figsize=(5, 2.6))
ax.bar(list(errors), list(errors.values()))
ax.set_yscale("log")
ax.set_ylabel("relative error vs float64")
ax.set_title(f"float32 1024x1024 matmul on {v.device.type}")
fig.tight_layout()

v.finish()
