"""What isolation costs: N tiny torch claims run three ways.

1. in one process, one after the other (no isolation; sphinx-gallery's default);
2. each as its own ``python`` process (isolation by paying a torch import each);
3. through torchclaims' runner (a fork server with torch imported, N children),
   with each script sandboxed (torchclaims.run.sandbox), and with the sandbox off.

Prints wall-clock figures; it asserts nothing. Usage:

    python benchmarks/runner_overhead.py [N]
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

from kb import write_claim  # noqa: E402
from torchclaims.claims import load_claims  # noqa: E402
from torchclaims.run.execution import Settings, verify  # noqa: E402
from torchclaims.run.sandbox import SWITCH_ENV  # noqa: E402


def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in range(count):
            write_claim(root, f"bench-{i}", "holds")
        scripts = sorted((root / "gallery").glob("*.py"))
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), TORCHCLAIMS_RECORDS_DIR=str(root / "direct"))

        start = time.perf_counter()
        code = "import runpy, sys\nfor path in sys.argv[1:]:\n    runpy.run_path(path, run_name='__main__')\n"
        subprocess.run([sys.executable, "-c", code, *map(str, scripts)], env=env, check=True, capture_output=True)
        in_process = time.perf_counter() - start

        start = time.perf_counter()
        for script in scripts:
            subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True)
        per_process = time.perf_counter() - start

        claims = load_claims(root / "claims").executable()
        runner = {}
        for sandbox in ("on", "off"):
            os.environ[SWITCH_ENV] = sandbox
            start = time.perf_counter()
            outcome = verify(claims, Settings(root=root, force=True), log=lambda m: None)
            runner[sandbox] = time.perf_counter() - start
            assert all(r.verdict.value == "holds" for r in outcome.records.values())
            assert all(r.unconfined == (sandbox == "off") for r in outcome.records.values())
        os.environ.pop(SWITCH_ENV)

    print(f"{count} tiny torch claims on {os.cpu_count()} cores")
    print(f"  one process, no isolation        {in_process:6.1f} s")
    print(f"  one python process per claim     {per_process:6.1f} s")
    print(
        f"  torchclaims runner (fork server) {runner['on']:6.1f} s  "
        "(includes fork-server start and the environment probe)"
    )
    print(f"  the same, sandbox off            {runner['off']:6.1f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 12)
