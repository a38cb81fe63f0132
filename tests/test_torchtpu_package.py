"""The tpu descriptor against the real torch-tpu package, on a host without a TPU.

Where torch-tpu is not installed these tests are skipped, and say so; ``nox -s tpu``
installs it and sets TORCHCLAIMS_REQUIRE_VENDOR=torch_tpu, so that there a missing
package fails instead of skipping.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MISSING = importlib.util.find_spec("torch_tpu") is None
if MISSING and os.environ.get("TORCHCLAIMS_REQUIRE_VENDOR") == "torch_tpu":
    raise RuntimeError("TORCHCLAIMS_REQUIRE_VENDOR=torch_tpu, but torch-tpu is not installed in this environment")
pytestmark = pytest.mark.skipif(MISSING, reason="torch-tpu is not installed here (nox -s tpu installs it)")

NO_TPU = "no Google TPU on this host: torch.accelerator.is_available() is False"


def test_detection_goes_through_torch_accelerator_and_names_the_missing_tpu():
    from torchclaims.backends import resolve_backend

    backend, _ = resolve_backend("tpu")
    assert backend.check_available() == NO_TPU


def test_the_internal_is_available_still_raises():
    """Why the descriptor never calls torch.tpu.is_available(): if a release stops
    raising, this test says the stand-in (tests/standins.py) needs updating too."""
    import torch

    with pytest.raises(RuntimeError, match=r"internal to TorchTPU.*torch\.accelerator\.is_available"):
        torch.tpu.is_available()


def test_verify_on_tpu_exits_2_with_one_line_naming_the_missing_tpu(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchclaims",
            "verify",
            "--backend",
            "tpu",
            "--jobs",
            "1",
            "--records-dir",
            str(tmp_path / "records"),
            "--output",
            str(tmp_path / "out"),
            "privateuse1-named-device",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 2, run.stderr[-2000:]
    ours = [line for line in run.stderr.splitlines() if line.startswith("torchclaims: backend tpu is not usable")]
    assert ours == [f"torchclaims: backend tpu is not usable here: {NO_TPU}"]
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists(), "no results file for a backend that could not run"


def test_a_cpu_run_records_torch_tpu_and_is_shown_as_vendor_package_no_tpu():
    from torchclaims.backends import resolve_backend
    from torchclaims.evidence.fingerprint import collect
    from torchclaims.evidence.store import version_label

    env = collect(resolve_backend("cpu")[0])
    version = importlib.metadata.version("torch-tpu")
    assert env.packages["torch-tpu"] == version and "libtpu" in env.packages
    assert version_label(env).endswith(f" + torch-tpu {version} (vendor package, no TPU)")
