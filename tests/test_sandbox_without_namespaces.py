"""A host with Landlock but without unprivileged user namespaces (some
distributions and containers turn them off): a claim that compiles still runs,
confined by Landlock alone, and its record says it ran without the sandbox and
why; under CI=true it does not run. Such a host is made here by running the
build in a user namespace that may hold no other (max_user_namespaces 0).

Imported in the fork server, inductor fixes its precompiled headers' folder in
the shared cache, which Landlock leaves read-only: without a mount namespace to
show the claim's own there, every compilation failed ("Permission denied:
.../precompiled_headers/locks/..."), so on such a host the server does not
preload the compiler (torchclaims.run.runner.Runner.preload_for)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kb import write_claim
from torchclaims.run import sandbox
from torchclaims.run.compiler_caches import shared_inductor_dir

TESTS = Path(__file__).resolve().parent
# A user namespace in which no other may be made; the command runs as its root.
NO_OTHER = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
NO_NAMESPACES = ["unshare", "--user", "--map-root-user", "sh", "-c", NO_OTHER, "sh"]


def _host_can_be_made() -> bool:
    try:
        return subprocess.run([*NO_NAMESPACES, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


pytestmark = [
    pytest.mark.processes,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Landlock and namespaces are Linux's"),
    pytest.mark.skipif(sandbox.landlock_abi() < sandbox.MIN_ABI, reason="the case is a host with Landlock"),
    pytest.mark.skipif(not _host_can_be_made(), reason="no user namespace to turn the others off in"),
]

DRIVER = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})

def main():
    from hostile import run_claims
    records = run_claims(Path(sys.argv[1]), timeout=300, parallel=1).records
    print(json.dumps({{
        claim: [r.verdict.value, r.reason, r.sandbox, {{m.name: m.value for c in r.checks for m in c.measurements}}]
        for claim, r in records.items()
    }}))

if __name__ == "__main__":
    main()
"""
COMPILES = """
import os
import torch
from torch._inductor import codecache
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    open(os.path.join(ROOT, "claims", "planted.txt"), "w").close()
    repository = "written"
except OSError as exc:
    repository = exc.strerror
compiled = torch.compile(lambda x: x.sin() + 1)
x = torch.randn(8)
with v.check("compiles") as check:
    check.measure("headers' folder", codecache._HEADER_DIR)
    check.measure("a write to the repository", repository)
    check.expect(bool(torch.allclose(compiled(x), x.sin() + 1)), "compiled matches eager")
v.finish()
"""


def verify_without_namespaces(root: Path, ci: bool) -> dict:
    driver = root.parent / "driver.py"
    driver.write_text(DRIVER.format(tests=str(TESTS)))
    env = {k: v for k, v in os.environ.items() if k != sandbox.REQUIRED_ENV}
    env.update(PYTHONPATH=str(TESTS.parent / "src"), **({sandbox.REQUIRED_ENV: "true"} if ci else {}))
    done = subprocess.run(
        [*NO_NAMESPACES, sys.executable, str(driver), str(root)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_compiling_claim_runs_under_landlock_alone_and_says_it_ran_without_the_sandbox(tmp_path):
    root = tmp_path / "kb"
    for n in (1, 2):  # more claims that compile than workers: the server would preload the compiler
        write_claim(root, f"kb-compiles-{n}", COMPILES)
    records = verify_without_namespaces(root, ci=False)
    for claim, (verdict, reason, sandboxed, measured) in records.items():
        assert verdict == "holds", (claim, reason)
        assert sandboxed.startswith(f"{sandbox.WITHOUT}: unshare(user, PID and network namespaces) failed"), sandboxed
        assert "still confined its writes" in sandboxed
        assert not measured["headers' folder"].startswith(shared_inductor_dir()), measured
        assert measured["a write to the repository"] != "written"
    assert not (root / "claims" / "planted.txt").exists()


def test_under_ci_a_claim_on_such_a_host_does_not_run_and_says_why(tmp_path):
    root = tmp_path / "kb"
    write_claim(root, "kb-holds", "holds")
    verdict, reason, _, _ = verify_without_namespaces(root, ci=True)["kb-holds"]
    assert verdict == "error"
    assert reason.startswith("the sandbox is required here (CI=true) but unshare(user, PID and network namespaces)")
