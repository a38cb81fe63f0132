"""The offline bundle end to end: pack, install with pip's index disabled, verify.

Packs the bundle for this Python, makes a fresh venv that has only torch and
what torch brings (as tests/test_bundle.py does), and times run.sh twice: the
first call makes its venv and installs from wheels/ (verify --help then
returns at once), the second runs the claims. Prints figures; asserts nothing.

    python benchmarks/offline_bundle.py [claim ids]   (default: privateuse1-named-device)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from test_bundle import machine_with_torch  # noqa: E402
from torchclaims.run.bundle import bundle  # noqa: E402


def timed(command: list, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(claims: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        packed = bundle(
            ROOT,
            Path(tmp) / "bundle",
            f"{sys.version_info.major}.{sys.version_info.minor}",
            log=lambda m: None,
            allow_uncommitted=True,  # what is measured is packing and running, edits included
        )
        pack_s = time.perf_counter() - started
        python = machine_with_torch(Path(tmp))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "TORCHCLAIMS_"))}
        env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, PYTHON=str(python))
        script = str(packed.path / "run.sh")
        install_s = timed([script, "--help"], env)
        verify_s = timed([script, "--backend", "cpu", "--output", str(Path(tmp) / "out"), *claims], env)
    print(
        f"bundle: {len(packed.wheels)} wheels, {packed.size / 2**20:.1f} MB, packed in {pack_s:.0f} s "
        f"(CPython {sys.version_info.major}.{sys.version_info.minor})"
    )
    print(f"run.sh, first call (venv + install, no index): {install_s:.0f} s")
    print(f"run.sh --backend cpu {' '.join(claims)}: {verify_s:.0f} s")
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["privateuse1-named-device"])
