"""
On Apple MPS, CPU fallback for missing operators is opt-in
==========================================================

:claim-verdict:`mps-fallback-opt-in`

The claim: on Apple MPS, an operator without an MPS kernel raises
``NotImplementedError`` by default, the message names the
``PYTORCH_ENABLE_MPS_FALLBACK=1`` environment variable, and with that variable
set before the process starts the operator runs on the CPU instead.

Which operators lack an MPS kernel changes with every release, so the script
asks the dispatcher: among candidate aten operators, those with no kernel for
the ``MPS`` dispatch key (and no composite kernel that would decompose them)
are the ones under test. The variable is read when torch starts, so each
operator runs in two fresh Python processes, one without the variable and one
with it. Other backends report unverified: the fallback switch is MPS's.
"""

import json
import os
import subprocess
import sys

import torch

from torchclaims.verify import verification

v = verification(
    "mps-fallback-opt-in",
    inputs="8 candidate operators on a float32 vector of 16 (seed 0); the first without an MPS kernel is tested",
    method="dispatcher introspection picks the operator; it runs in a fresh process without and with "
    "PYTORCH_ENABLE_MPS_FALLBACK=1; outputs compared with the CPU (rtol 1e-4, atol 1e-5)",
)

MPS = "mps"  # the device type the claim is about (data under test)
VARIABLE = "PYTORCH_ENABLE_MPS_FALLBACK"

# Candidate operators (aten name, Python expression on a 16-element tensor ``t``).
CANDIDATES = {
    "aten::linalg_eig": "torch.view_as_real(torch.linalg.eigvals(t.reshape(4, 4)))",
    "aten::linalg_householder_product": "torch.linalg.householder_product(t.reshape(4, 4), t[:3])",
    "aten::_linalg_eigh": "torch.linalg.eigvalsh(t.reshape(4, 4) + t.reshape(4, 4).T)",
    "aten::_fft_r2c": "torch.view_as_real(torch.fft.rfft(t))",
    "aten::mode": "torch.mode(t.round()).values",
    "aten::histc": "torch.histc(t, bins=4, min=-2, max=2)",
    "aten::bincount": "torch.bincount((t.abs() * 3).long())",
    "aten::_unique2": "torch.unique(t.round())",
}

# %%
# Which candidates have no MPS kernel?
# ------------------------------------

key = torch._C._dispatch_key_for_device(MPS)
OWN_OR_COMPOSITE = (key, "CompositeImplicitAutograd", "CompositeExplicitAutograd")
without_kernel = [
    name
    for name in CANDIDATES
    if not any(torch._C._dispatch_has_kernel_for_dispatch_key(name, k) for k in OWN_OR_COMPOSITE)
]
print(f"candidates without an {key} kernel in this torch build: {without_kernel}")

# %%
# One operator, two fresh processes
# ---------------------------------
# The child gets the device type and the expression as arguments and prints
# what happened as JSON.

CHILD = """
import json, sys
import torch
device, expression = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
t = torch.randn(16)
reference = eval(expression)
out = {}
try:
    t = t.to(device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        result = eval(expression)
    out["device"] = str(result.device)
    # at::native::cpu_fallback copies the inputs with aten::_to_cpu and runs the CPU kernel.
    out["to_cpu_seen"] = any(e.name == "aten::_to_cpu" for e in prof.events())
    out["max_abs_error"] = (result.cpu().double() - reference.double()).abs().max().item()
    out["reference_magnitude"] = reference.double().abs().max().item()
except Exception as exc:
    out["error_type"] = type(exc).__name__
    out["message"] = str(exc)[:1000]
print(json.dumps(out))
"""


def run_child(expression, fallback):
    env = {k: val for k, val in os.environ.items() if k != VARIABLE}
    if fallback:
        env[VARIABLE] = "1"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, v.device.type, expression], capture_output=True, text=True, env=env, timeout=240
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"child process failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    return json.loads(lines[-1])


def operator_under_test(check):
    check.measure("torch.backends.mps.is_built()", torch.backends.mps.is_built())
    check.measure("torch.backends.mps.is_available()", torch.backends.mps.is_available())
    if v.device.type != MPS:
        check.unsupported(
            f"the configured backend is {v.backend.name}, not mps; the fallback switch is MPS's and needs an Apple "
            "silicon Mac"
        )
    check.measure(f"candidates without an {key} kernel", ", ".join(without_kernel) or "none")
    if not without_kernel:
        check.unsupported(f"every candidate has an {key} kernel in torch {torch.__version__}; none would fall back")
    check.measure("operator under test", without_kernel[0])
    return without_kernel[0]


with v.check(f"by default the operator raises NotImplementedError naming {VARIABLE}=1") as check:
    name = operator_under_test(check)
    seen = run_child(CANDIDATES[name], fallback=False)
    check.measure("outcome without the variable", seen.get("error_type") or f"ran on {seen.get('device')}")
    check.expect(seen.get("error_type") == "NotImplementedError", f"{name} without {VARIABLE}: {seen}")
    check.expect(f"{VARIABLE}=1" in seen.get("message", ""), f"the error message does not name {VARIABLE}=1")

with v.check(f"with {VARIABLE}=1 set before the process starts, the operator runs on the CPU") as check:
    name = operator_under_test(check)
    seen = run_child(CANDIDATES[name], fallback=True)
    if "error_type" in seen:
        check.expect(False, f"{name} with {VARIABLE}=1 raised {seen['error_type']}: {seen['message'][:200]}")
    else:
        check.measure("device of the result", seen["device"])
        check.measure("aten::_to_cpu seen by the profiler (inputs copied to the CPU)", seen["to_cpu_seen"])
        check.expect(seen["to_cpu_seen"], "the profiler saw no aten::_to_cpu: no sign that the CPU ran the operator")
        tolerance = 1e-5 + 1e-4 * seen["reference_magnitude"]
        check.measure("max abs error against the CPU", seen["max_abs_error"], tolerance=f"<= {tolerance:.3g}")
        check.expect(seen["max_abs_error"] <= tolerance, f"result differs from the CPU by {seen['max_abs_error']:.3g}")

v.finish()
