"""
nll_loss of an unbatched input returns the loss
===============================================

:claim-verdict:`xla-nll-loss-unbatched`

The claim: ``torch.nn.functional.nll_loss`` accepts an unbatched input of
shape ``(C)`` with a 0-d target, as PyTorch documents, and returns the CPU's
loss on the configured device.

The operator sweep found the process running it on torch_xla 2.9 killed by a
segmentation fault. A crash cannot be caught in the script's own process, so
each call runs in a fresh Python process on the configured backend; its exit
status and output are the evidence. A batched call of the same values is run
the same way as a control.
"""

import json
import os
import signal
import subprocess
import sys

import torch
import torch.nn.functional as F

from torchclaims.verify import verification

CALL = """
import json, sys, torch, torch.nn.functional as F
from torchclaims.verify import resolve_backend
backend, _ = resolve_backend(sys.argv[1])
backend.import_modules()
device = backend.device()
scores, target, batched = torch.tensor(json.loads(sys.argv[2])), torch.tensor(int(sys.argv[3])), sys.argv[4] == "1"
if batched:
    scores, target = scores.unsqueeze(0), target.unsqueeze(0)
loss = F.nll_loss(scores.to(device), target.to(device), reduction="sum")
print(json.dumps(loss.cpu().item()))
"""

v = verification(
    "xla-nll-loss-unbatched",
    inputs="log_softmax of 3 scores from torch.manual_seed(0); target 1; unbatched (3,) and (), and batched (1, 3) "
    "and (1,)",
    method="each call in a fresh Python process on the configured backend (its exit status is recorded); "
    "the loss against the CPU (rtol 1e-6)",
)

torch.manual_seed(0)
scores = torch.log_softmax(torch.randn(3), 0)
TARGET = 1


def on_device(batched: bool):
    """(loss or None, how the process ended) for one call in a fresh process."""
    args = [v.backend.name, json.dumps(scores.tolist()), str(TARGET), "1" if batched else "0"]
    done = subprocess.run(
        [sys.executable, "-c", CALL, *args], capture_output=True, text=True, timeout=240, env=dict(os.environ)
    )
    if done.returncode < 0:
        return None, f"killed by {signal.Signals(-done.returncode).name}"
    if done.returncode:
        return None, f"exited with code {done.returncode}: {done.stderr.strip().splitlines()[-1][:200]}"
    return json.loads(done.stdout.strip().splitlines()[-1]), "exited normally"


# %%
# The unbatched call, and the batched control
# -------------------------------------------

for batched in (False, True):
    shape = "batched (1, 3) input" if batched else "unbatched (3,) input"
    with v.check(
        f"nll_loss of an {shape} returns the CPU's loss"
        if not batched
        else f"nll_loss of a {shape} returns the CPU's loss"
    ) as check:
        if v.on_reference:
            check.unsupported("the configured backend is the CPU reference itself; the comparison needs another device")
        loss, ended = on_device(batched)
        check.measure("process running the call", ended, tolerance="exited normally")
        expected = F.nll_loss(scores, torch.tensor(TARGET), reduction="sum")
        if check.expect(loss is not None, f"the process running the call {ended}"):
            check.close(torch.tensor(loss), expected, rtol=1e-6, atol=1e-7, what="loss")

v.finish()
