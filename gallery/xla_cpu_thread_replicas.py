"""
Thread replicas on XLA's CPU devices all-reduce across devices
==============================================================

:claim-verdict:`xla-cpu-thread-replicas`

Our finding (no source claims it): ``xmp.spawn`` on the PJRT CPU runtime with
``CPU_NUM_DEVICES=2`` runs one replica per CPU device (threads of one process,
since PJRT CPU is a single-process runtime), and when both replicas start at
once, ``xm.all_reduce`` across them returns the sum on both replicas.

This is one of the two ways torch_xla offers to run more than one replica on
the CPU (the other, two processes joining one ``xla`` process group, is
xla-process-group-two-processes). In a fresh Python process (a failed
rendezvous aborts the process) the two replicas start together, with no wait
before the collective, and all-reduce ``(ordinal + 1) * [1, 2, 3, 4]``; the
exit status and what each replica printed are the evidence. Replicas started
some seconds apart are not what this checks. The replicas'
program is written to a file first: ``xmp.spawn`` starts its worker with
``spawn``, which imports ``__main__`` from a file.
"""

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from torchclaims.verify import verification

DEVICES = 2
REPLICAS = """
import torch, torch_xla, torch_xla.core.xla_model as xm, torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp
def replica(index):
    t = (xr.global_ordinal() + 1) * torch.arange(1, 5, dtype=torch.float32).to(torch_xla.device())
    total = xm.all_reduce(xm.REDUCE_SUM, t).cpu().tolist()
    print("replica", xr.global_ordinal(), "of", xr.world_size(), total, flush=True)
if __name__ == "__main__":
    xmp.spawn(replica)
"""

v = verification(
    "xla-cpu-thread-replicas",
    model="none: one 4-element float32 tensor per replica",
    inputs=f"replica r contributes (r + 1) * [1, 2, 3, 4]; CPU_NUM_DEVICES={DEVICES}",
    method="xmp.spawn(replica) in a fresh Python process with PJRT_DEVICE=CPU; xm.all_reduce(REDUCE_SUM); "
    "exit status and each replica's printed result (the program is run from a file)",
)

# %%
# Two replicas, one all_reduce
# ----------------------------

expected = str([float(sum(r + 1 for r in range(DEVICES)) * k) for k in range(1, 5)])
with v.check(f"{DEVICES} thread replicas all-reduce to the sum") as check:
    if v.backend.name != "xla":
        check.unsupported(
            f"the claim is about torch_xla's replicas on PJRT CPU devices; the configured backend is {v.backend.name}"
        )
    env = dict(os.environ, CPU_NUM_DEVICES=str(DEVICES))
    with tempfile.TemporaryDirectory() as folder:  # a file, not -c: xmp.spawn's workers import __main__ from it
        script = Path(folder, "replicas.py")
        script.write_text(REPLICAS)
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("replica")]
    ended = (
        f"killed by {signal.Signals(-done.returncode).name}" if done.returncode < 0 else f"exit code {done.returncode}"
    )
    check.measure("process running the replicas", ended, tolerance="exit code 0")
    fatal = [line.strip() for line in done.stderr.splitlines() if "rendezvous" in line.lower() or "Error" in line]
    if fatal:
        check.note("last error printed: " + fatal[-1][-300:])
    check.measure("replicas that printed a result", len(lines), tolerance=f"== {DEVICES}")
    check.expect(
        done.returncode == 0 and len(lines) == DEVICES,
        f"the process ended with {ended} after {len(lines)} of {DEVICES} replicas printed a result",
    )
    for line in lines:
        print(line)
        check.expect(line.endswith(expected), f"{line} (the sum is {expected})")

v.finish()
