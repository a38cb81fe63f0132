"""
ROCm's Composable Kernel BLAS backend must be compiled in and selected explicitly
=================================================================================

:claim-verdict:`rocm-ck-optin`

The claim: on ROCm builds, PyTorch uses Composable Kernel (CK) for BLAS only
when CK was compiled in and is selected with
``torch.backends.cuda.preferred_blas_library('ck')``; if CK was not compiled
in, PyTorch prints a warning and uses the default backend.

On a ROCm build with a GPU, a fresh Python process reads the preferred BLAS
library before anything is set (it must not be CK), then selects ``'ck'``.
It reports the library read back, any exception, and Python warnings; its
standard error is kept too, because ``preferred_blas_library`` prints C++
warnings there rather than raising Python warnings (seen with torch 2.13).
Either the selection takes effect (CK is compiled in; a matmul then runs and is
compared with a float64 CPU reference), or a warning about CK must have been
printed and the default kept. Other builds report unverified: a CPU wheel
accepts ``'ck'`` with no GPU BLAS to apply it to.
"""

import json
import subprocess
import sys

import torch

from torchclaims.verify import verification

v = verification(
    "rocm-ck-optin",
    inputs="torch.backends.cuda.preferred_blas_library('ck') in a fresh process; a 256x256 float32 matmul",
    method="library read back, exception, Python warnings and stderr recorded; matmul against float64 (<= 1e-3)",
)

print(f"torch.version.hip = {torch.version.hip}")

# %%
# The fresh process
# -----------------
# It receives the configured device type as an argument, for the matmul.

CHILD = r"""
import json, sys, warnings, torch
blas = torch.backends.cuda.preferred_blas_library
report = {"initial": str(blas())}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        blas("ck")
        report["raised"] = None
    except RuntimeError as exc:
        report["raised"] = f"RuntimeError: {str(exc).splitlines()[0][:300]}"
report["selected"] = str(blas())
report["python_warnings"] = [str(w.message).splitlines()[0][:200] for w in caught]
report["ck_selected"] = blas() == torch._C._BlasBackend.Ck
if report["ck_selected"]:
    torch.manual_seed(0)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    out = (a.to(sys.argv[1]) @ b.to(sys.argv[1])).cpu().double()
    ref = a.double() @ b.double()
    report["matmul_relative_error"] = ((out - ref).norm() / ref.norm()).item()
print(json.dumps(report))
"""

report = None


def rocm_report(check):
    """Gate on a ROCm GPU run, then run the fresh process once."""
    global report
    check.measure("torch.version.hip", str(torch.version.hip))
    if torch.version.hip is None:
        check.unsupported(f"not a ROCm build of PyTorch (torch.version.cuda is {torch.version.cuda})")
    if v.on_reference:
        check.unsupported("the configured backend is the CPU; this needs the rocm backend and an AMD GPU")
    if report is None:
        command = [sys.executable, "-c", CHILD, v.device.type]
        child = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if child.returncode != 0:
            raise RuntimeError(f"child exited with {child.returncode}: {child.stderr.strip()[-500:]}")
        report = json.loads(child.stdout.strip().splitlines()[-1])
        report["stderr_warnings"] = [line.strip()[:200] for line in child.stderr.splitlines() if "Warning" in line]
        print(json.dumps(report, indent=2))
    return report


# %%
# CK is not the default
# ---------------------

with v.check("CK is not used for BLAS unless selected") as check:
    seen = rocm_report(check)
    check.measure("preferred BLAS library in a fresh process", seen["initial"])
    check.expect(not seen["initial"].endswith("Ck"), "the preferred BLAS library is CK before anything selected it")

# %%
# Selecting CK
# ------------
# The generic "experimental feature" warning is printed for any non-default
# choice, so it does not count as a warning about CK.

with v.check("selecting 'ck' switches to CK, or warns and keeps the default") as check:
    seen = rocm_report(check)
    warned = [w for w in seen["python_warnings"] + seen["stderr_warnings"] if "experimental feature" not in w]
    check.measure("preferred_blas_library('ck') raised", seen["raised"] or "no")
    check.measure("library read back", seen["selected"])
    check.measure("warnings about CK", " | ".join(warned) or "none")
    check.expect(seen["raised"] is None, f"selecting 'ck' raised instead of warning: {seen['raised']}")
    if seen["ck_selected"]:
        error = seen["matmul_relative_error"]
        check.measure("matmul with CK selected: relative error", error, tolerance="<= 1e-3")
        check.expect(error <= 1e-3, f"matmul with CK selected is off by {error:.3g}")
    elif seen["raised"] is None:
        check.expect(bool(warned), f"CK was not selected ({seen['selected']}) and no warning about it was printed")
        check.expect(seen["selected"] == seen["initial"], f"fell back to {seen['selected']}, not {seen['initial']}")

v.finish()
