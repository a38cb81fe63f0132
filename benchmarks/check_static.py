"""How long ``torchclaims check`` takes without a device, per example (the target is 30 s).

Each example of examples/check/ is checked as a user runs it, ``python -m
torchclaims check TARGET`` in a fresh process (torch's import, the committed
results' load checks and the step under the recorder included), three times;
it prints the median and the slowest wall time, the exit status, and the
machine's load average, which on a shared machine moves the figures more than
anything here. It asserts nothing. Usage::

    python benchmarks/check_static.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = [
    "native_mlp.py:mlp",
    "pixel_cnn.py:pixel_cnn_step",
    "fft_model.py:spectral_step",
    "hf_causal_lm.py:tiny_llama_step",
]
TARGET_S = 30.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} before; {runs} runs each; target {TARGET_S:g} s"
    )
    for example in EXAMPLES:
        times, codes = [], set()
        for _ in range(runs):
            began = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "torchclaims", "check", f"examples/check/{example}"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
            )
            times.append(time.perf_counter() - began)
            codes.add(done.returncode)
        median = statistics.median(times)
        print(
            f"{example:<36} median {median:5.1f} s  slowest {max(times):5.1f} s  exit {sorted(codes)}  "
            f"{'within' if median <= TARGET_S else 'OVER'} the target"
        )
    print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
