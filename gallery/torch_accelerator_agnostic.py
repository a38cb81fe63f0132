"""
torch.accelerator finds the backend without naming it
=====================================================

:claim-verdict:`torch-accelerator-agnostic`

The claim: device-agnostic code can find the configured backend through
``torch.accelerator``: ``current_accelerator(check_available=True)`` returns
its device, ``is_available()`` is True and ``device_count()`` is at least 1;
with no accelerator it returns None and ``is_available()`` is False.

The first half asks ``torch.accelerator`` in this process, where the
configured backend is loaded, and compares the answer with the configured
device type. The second half runs in a fresh process that sees no accelerator:
GPUs are hidden with ``CUDA_VISIBLE_DEVICES``/``HIP_VISIBLE_DEVICES`` and
out-of-tree backends are not autoloaded. That process first asks each
backend's own ``is_available()`` whether anything is still visible, then asks
``torch.accelerator``.
"""

import json
import os
import subprocess
import sys

import torch

from torchclaims.verify import verification

v = verification(
    "torch-accelerator-agnostic",
    inputs="torch.accelerator.current_accelerator(check_available=True), is_available(), device_count()",
    method="answers compared with the configured device type; "
    "the no-accelerator branch in a fresh process with devices hidden",
)

# %%
# The configured backend
# ----------------------

with v.check("torch.accelerator finds the configured accelerator") as check:
    found = torch.accelerator.current_accelerator(check_available=True)
    check.measure("current_accelerator(check_available=True)", str(found))
    check.measure("is_available()", torch.accelerator.is_available())
    check.measure("device_count()", torch.accelerator.device_count())
    if v.on_reference:
        check.unsupported("the configured backend is the CPU: there is no accelerator for torch.accelerator to find")
    matches = found is not None and found.type == v.device.type
    check.expect(matches, f"current_accelerator returned {found}; the configured device type is {v.device.type}")
    check.expect(torch.accelerator.is_available(), "is_available() is False")
    check.expect(torch.accelerator.device_count() >= 1, f"device_count() is {torch.accelerator.device_count()}")

# %%
# A process with no accelerator
# -----------------------------
# The ground truth comes from the backends' own ``is_available()`` functions
# (module names used as data), plus the PrivateUse1 backend if one was loaded.

NO_ACCELERATOR = r"""
import json, torch
present = []
names = ["cuda", "xpu", "mps", "mtia"]
privateuse1 = torch._C._get_privateuse1_backend_name()
if privateuse1 != "privateuseone":
    names.append(privateuse1)
for name in names:
    module = getattr(torch, name, None)
    try:
        if module is not None and module.is_available():
            present.append(name)
    except Exception:
        pass
found = torch.accelerator.current_accelerator(check_available=True)
print(json.dumps({
    "still visible": present,
    "current_accelerator(check_available=True)": None if found is None else str(found),
    "current_accelerator()": str(torch.accelerator.current_accelerator()),
    "is_available()": torch.accelerator.is_available(),
    "device_count()": torch.accelerator.device_count(),
}))
"""
hidden = {
    "CUDA_VISIBLE_DEVICES": "",
    "HIP_VISIBLE_DEVICES": "",
    "ROCR_VISIBLE_DEVICES": "",
    "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
}
command = [sys.executable, "-c", NO_ACCELERATOR]
child = subprocess.run(command, env={**os.environ, **hidden}, capture_output=True, text=True, timeout=180)
if child.returncode != 0:
    raise RuntimeError(f"child exited with {child.returncode}: {child.stderr.strip()[-500:]}")
answer = json.loads(child.stdout.strip().splitlines()[-1])
print(json.dumps(answer, indent=2))

with v.check("with no accelerator, current_accelerator(check_available=True) is None, is_available() False") as check:
    visible = answer["still visible"]
    if visible:
        check.unsupported(f"{visible} stays visible with GPUs hidden and autoload off: no accelerator-free process")
    found = answer["current_accelerator(check_available=True)"]
    check.equal(found, None, "current_accelerator(check_available=True)")
    check.equal(answer["is_available()"], False, "is_available()")
    check.measure("device_count()", answer["device_count()"])
    build_answer = answer["current_accelerator()"]
    check.measure("current_accelerator() without check_available (the build's answer)", build_answer)

v.finish()
