"""Runs on an accelerator whose runtime fails the way CUDA's does (tests/cuda_standin.py).

On an NVIDIA H200 a run ended in 0 verdicts: the fork server had started CUDA
before it forked the probe ("Cannot re-initialize CUDA in forked subprocess"),
and inside the sandbox CUDA could not write beneath /proc ("Error 304"). The
stand-in does both, and torch loads it in every process as it loads a vendor's
plugin, so these runs go through the real runner, fork server and sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_standin import DEVICE_NAME, REFUSED, REINIT, write_site
from kb import SRC, write_claim
from kb import write_site as write_project
from torchclaims.run import runner as runner_module
from torchclaims.run import runtimes, sandbox
from torchclaims.run.runner import Runner

pytestmark = pytest.mark.processes

USES_THE_DEVICE = f"""
torch.cuda.init()
torch.cuda.synchronize()
with v.check("the runtime answers in the claim's process") as check:
    check.equal(torch.cuda.get_device_name(0), "{DEVICE_NAME}", "device name")
v.finish()
"""


def landlock_here() -> bool:
    """Whether this kernel has the Landlock these tests judge; under CI it must (the sandbox is required there)."""
    here = sandbox.landlock_abi() >= sandbox.MIN_ABI
    if not here and sandbox.required():
        pytest.fail(f"Landlock ABI {sandbox.landlock_abi()} under CI: the sandbox needs {sandbox.MIN_ABI}")
    return here


def project(tmp_path: Path, claims: int = 1) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    write_project(root)
    for number in range(claims):
        write_claim(root, f"kb-device-{number}", USES_THE_DEVICE, about=("cuda",))
    return root


def torchclaims(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``torchclaims ARGS`` in its own process, on a host whose torch loads the stand-in."""
    site = write_site(tmp_path / "site")
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(SRC)]), **env)
    return subprocess.run(
        [sys.executable, "-m", "torchclaims", *args], env=environment, capture_output=True, text=True, timeout=300
    )


def run_verify(tmp_path: Path, root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return torchclaims(
        tmp_path, "verify", "--root", str(root), "--backend", "cuda", "--output", str(tmp_path / "out"), *args, **env
    )


def records(tmp_path: Path) -> list[dict]:
    (results,) = (tmp_path / "out").glob("*.json")
    return json.loads(results.read_text())["records"]


def test_a_runtime_that_starts_when_torch_loads_it_leaves_every_claim_usable(tmp_path):
    root = project(tmp_path, claims=3)
    run = run_verify(tmp_path, root, "--jobs", "2", CUDA_STANDIN_STARTS="autoload")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "importing torch started an accelerator runtime (torch.cuda.is_initialized() is True)" in run.stdout
    assert "the fork server now imports nothing" in run.stdout
    found = records(tmp_path)
    assert [r["verdict"] for r in found] == ["holds"] * 3
    assert not [r for r in found if REINIT in json.dumps(r)]


def test_a_runtime_that_writes_beneath_proc_works_in_the_sandbox(tmp_path):
    root = project(tmp_path)
    run = run_verify(tmp_path, root)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (record,) = records(tmp_path)
    assert record["verdict"] == "holds", record["reason"]
    if landlock_here():
        assert record["sandbox"].startswith("sandboxed:") and "its own processes' /proc entries" in record["sandbox"]


def test_the_run_stops_in_one_line_naming_the_part_of_the_sandbox_that_stops_the_device(tmp_path):
    if not landlock_here():
        pytest.skip("needs Landlock: the part this test expects to stop the device")
    root = project(tmp_path, claims=2)
    # The runtime writes a lock file in the build's temporary folder: outside the claim's own folder.
    run = run_verify(tmp_path, root, CUDA_STANDIN_LOCK=str(tmp_path / "cuda.lock"))
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if "works outside the sandbox but not inside it" in line]
    assert len(lines) == 1, run.stderr[-3000:]
    assert REFUSED in lines[0] and f"the part that stops it: {sandbox.LANDLOCK}" in lines[0]
    assert "running kb-device" not in run.stdout  # no claim ran, so no error record per claim
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.json"))


def test_doctor_shows_what_each_part_of_the_sandbox_does_to_the_device(tmp_path):
    run = torchclaims(tmp_path, "doctor", "--backend", "cuda")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = {line.split(":", 1)[0].strip(): line for line in run.stdout.splitlines() if ":" in line}
    assert "works" in rows["outside the sandbox"] and DEVICE_NAME in run.stdout
    assert "works" in rows["in the sandbox"]
    if landlock_here():
        assert REFUSED in rows[f"without {sandbox.PROC_WRITES}"]  # the rule is what lets the runtime start


def test_a_preload_group_that_starts_a_runtime_is_dropped_before_anything_forks(tmp_path, monkeypatch):
    """A group whose import starts the runtime (importing torch.utils.cpp_extension
    asks torch.cuda.is_available(), which arms torch's fork check): the server stops
    before any fork, says which module it was, and a server without the group serves the probe."""
    site = write_site(tmp_path / "site")
    (site / "starts_runtime.py").write_text("import torch\ntorch.cuda.init()\n")
    # the fork server is a new interpreter: it finds the stand-in and the module through PYTHONPATH
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(SRC), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(runner_module, "PRELOAD_GROUPS", {"starts_runtime": ("starts_runtime",)})
    said: list[str] = []
    with Runner("cpu", parallel=1, log=said.append) as runner:
        assert runner.preload_for([frozenset({"starts_runtime"})] * 2) == ["starts_runtime"]
        probe = runner.probe()
    assert probe.unavailable is None
    assert len(said) == 1 and "importing the preload groups started an accelerator runtime" in said[0]
    assert "(the groups preloaded: starts_runtime)" in said[0]
    assert "now imports only torch and the harness" in said[0]


def test_on_an_accelerator_the_fork_server_imports_no_group():
    uses = [frozenset({"torch.compile", "transformers"})] * 4
    assert Runner("cpu", parallel=1).preload_for(uses) != []
    for backend in ("cuda", "rocm", "xpu", "mps", "neuron", "tpu", "auto"):
        assert Runner(backend, parallel=1).preload_for(uses) == []


def test_the_signs_of_a_started_runtime_are_read_without_starting_one(tmp_path, monkeypatch):
    assert runtimes.touched() == []
    fake = type(sys)("torch")
    fake.cuda = type(sys)("torch.cuda")
    fake.cuda.is_initialized = lambda: True
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert "torch.cuda.is_initialized() is True" in runtimes.touched()


def test_where_torch_is_built_for_cuda_the_server_leaves_the_groups_to_the_claims():
    """On a CUDA build, importing torch.utils.cpp_extension (the compiler group) asks
    torch.cuda.is_available(): with a GPU that starts CUDA, without one it still arms
    torch's fork check. The server must not import it there (the build flag is all it reads)."""
    code = (
        "import sys, torch\n"
        "torch.backends.cuda.is_built = lambda: True\n"
        "import torchclaims.run.preload.compiler, torchclaims.run.preload.huggingface\n"
        "print(sorted(m for m in ('torch.utils.cpp_extension', 'torch._dynamo', 'transformers') if m in sys.modules))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(SRC))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"


IMPORTS_THROUGH_A_LINK = """
import subprocess, sys
import linked_package
child = subprocess.run([sys.executable, "-c", "import linked_package; print(linked_package.WHERE)"],
                       capture_output=True, text=True)
with v.check("a package reached through a link imports in the script and in a process it starts") as check:
    check.equal(child.returncode, 0, "the child's exit code")
    check.equal(child.stdout.strip(), linked_package.WHERE, "where the child found it")
v.finish()
"""


def test_packages_reached_through_links_under_tmp_stay_importable_in_the_sandbox(tmp_path):
    """A venv whose packages are links to another folder under /tmp (a machine's torch
    linked into a venv, as the bundle's test machine has): the sandbox hides /tmp, and
    binds back the package folders and where their links lead."""
    real = tmp_path / "real" / "linked_package"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text(f"WHERE = {str(real)!r}\n")
    site = tmp_path / "links"
    site.mkdir()
    (site / "linked_package").symlink_to(real)
    root = tmp_path / "project"
    root.mkdir()
    write_project(root)
    write_claim(root, "kb-linked", IMPORTS_THROUGH_A_LINK)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(SRC)]))
    run = subprocess.run(
        [sys.executable, "-m", "torchclaims", "verify", "--root", str(root), "--output", str(tmp_path / "out")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (record,) = records(tmp_path)
    assert record["verdict"] == "holds", record["reason"] + record.get("log_tail", "")
