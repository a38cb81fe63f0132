"""The release sweep, with pip and the claims replaced by a recorder: what it decides and what it leaves on disk."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from factories import make_environment, make_kb, make_record, write_results_file
from test_releases import write
from torchclaims.cli import main
from torchclaims.release_sweep import Measured, Sweep, plan, report, select
from torchclaims.releases import load_releases
from torchclaims.records import ScriptInfo

HELD = {"numpy": "2.4.6", "transformers": "5.24.0"}


@pytest.fixture
def project(tmp_path) -> Path:
    make_kb(tmp_path, "alpha", "beta")
    write(tmp_path)
    (tmp_path / "results").mkdir()
    return tmp_path


def sha(root: Path, claim_id: str) -> str:
    return hashlib.sha256((root / "gallery" / f"{claim_id}.py").read_bytes()).hexdigest()


def commit_run(root: Path, version: str, claims=("alpha", "beta"), stamp: str = "1", **packages) -> Path:
    env = make_environment(torch=version, packages={"torch": version, **HELD, **packages})
    records = [make_record(c, environment=env, script=ScriptInfo(path=f"gallery/{c}.py", sha256=sha(root, c))) for c in claims]
    return write_results_file(root / "results" / f"cpu-torch{version}-{stamp}.json", records, env)


def decisions(root: Path, *versions: str) -> dict[str, str]:
    releases = load_releases(root)
    return {p.release.version: p.why for p in plan(root, releases, root / "results", select(releases, ["torch"], list(versions)))}


def test_a_release_is_current_only_with_every_claim_current_scripts_and_the_held_versions(project):
    commit_run(project, "2.9.0")
    commit_run(project, "2.10.0", claims=("alpha",))
    commit_run(project, "2.15.0", numpy="1.26.4")
    why = decisions(project)
    assert why["2.9.0"].startswith("current: cpu-torch2.9.0-1.json")
    assert why["2.10.0"] == "cpu-torch2.10.0-1.json has no record of 1 claim(s): beta"
    assert why["2.15.0"] == "no results file of this release with the held versions"
    (project / "gallery" / "beta.py").write_text((project / "gallery" / "beta.py").read_text() + "\n# changed\n")
    assert "1 records from older scripts (beta…)" in decisions(project, "2.9.0")["2.9.0"]


class Recorder:
    """Stands in for pip and the claims: records each command, writes the results file verify would."""

    def __init__(self, root: Path, fail_on: str = ""):
        self.root, self.fail_on, self.calls = root, fail_on, []

    def __call__(self, command: list[str], env: dict[str, str]) -> int:
        self.calls.append((command, env))
        if self.fail_on and self.fail_on in " ".join(command):
            return 1
        if command[1:3] == ["-m", "venv"]:
            (Path(command[3]) / "bin").mkdir(parents=True)
            (Path(command[3]) / "bin" / "big-library.so").write_bytes(b"\0" * 4096)
        if len(command) > 1 and command[1] == "verify":
            version = next(c.split("==")[-1].lstrip("=") for command, _ in reversed(self.calls) for c in command if c.startswith("torch=="))
            commit_run(self.root, version, stamp="new")
        return 0


def sweep(project: Path, recorder: Recorder, free: int = 100 * 10**9) -> Sweep:
    return Sweep(project, load_releases(project), project / ".sweep", project / "results", run=recorder, python="python3", free_bytes=lambda _: free)


def test_a_release_runs_in_its_own_environment_which_is_removed_afterwards(project):
    old = commit_run(project, "2.10.0", claims=("alpha",))
    recorder = Recorder(project)
    measured = sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0", "2.10.0"]))
    assert [(m.release.version, m.status) for m in measured] == [("2.9.0", "ran"), ("2.10.0", "ran")]
    assert not (project / ".sweep" / "env").exists() and not (project / ".sweep" / "tmp").exists()
    assert not old.exists(), "the new run replaces the older file of the same release"
    assert measured[1].detail == f"replaced {old.name}" and measured[0].env_bytes >= 4096
    venv, torch, project_install, verify = (command for command, _ in recorder.calls[:4])
    assert venv[1:3] == ["-m", "venv"] and torch[-1] == "torch===2.9.0"  # the index's build, never a local one
    assert project_install[-2:] == [f"{project}[claims]", "torch===2.9.0"]
    assert verify[1] == "verify" and verify[verify.index("--backend") + 1] == "cpu"
    assert verify[verify.index("--timeout") + 1] == "300"
    assert "--workflow-run" not in verify  # made on this machine: a file submitted by hand
    env = recorder.calls[1][1]
    assert env["PIP_NO_CACHE_DIR"] == "1" and env["TMPDIR"].startswith(str(project / ".sweep"))
    held = Path(env["PIP_CONSTRAINT"]).read_text()
    assert "transformers==5.24.0" in held and "torch==" not in held


def test_a_second_sweep_with_nothing_changed_installs_nothing(project):
    recorder = Recorder(project)
    sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))
    again = Recorder(project)
    measured = sweep(project, again).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))
    assert [m.status for m in measured] == ["current"] and again.calls == []


def test_the_transformers_series_lifts_its_own_pin_and_holds_torch(project):
    recorder = Recorder(project)
    sw = sweep(project, recorder)
    sw.run_release(select(load_releases(project), ["transformers"], ["4.57.6"])[0])
    torch_install, env = recorder.calls[1]
    assert torch_install[-2:] == ["transformers===4.57.6", "torch==2.13.0"]
    assert "transformers==" not in Path(env["PIP_CONSTRAINT"]).read_text()


def test_a_failed_install_keeps_the_committed_files_and_the_disk_clean(project):
    old = commit_run(project, "2.9.0", claims=("alpha",))
    measured = sweep(project, Recorder(project, fail_on="torch===2.9.0")).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))
    assert measured[0].status == "failed" and old.exists()
    assert not (project / ".sweep" / "env").exists()


def test_too_little_free_disk_stops_before_installing(project):
    recorder = Recorder(project)
    measured = sweep(project, recorder, free=3 * 10**9).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))
    assert measured[0].status == "failed" and "GB free" in measured[0].detail and recorder.calls == []


def test_the_cpu_index_is_used_for_cpu_series_only(project):
    recorder = Recorder(project)
    sw = sweep(project, recorder)
    sw.torch_index = "https://download.pytorch.org/whl/cpu"
    for release in select(load_releases(project), ["torch", "torch_xla"], ["2.9.0"]):
        assert ("--extra-index-url" in sw.index_args(release)) is (release.series.backend == "cpu")
    sw.run_release(select(load_releases(project), ["torch"], ["2.9.0"])[0])
    torch_install = recorder.calls[1][0]
    assert torch_install[-3:] == ["--extra-index-url", sw.torch_index, "torch==2.9.0"]  # the index's +cpu build may be taken


def test_the_command_line_dry_run_plans_without_installing(project, capsys):
    commit_run(project, "2.9.0")
    assert main(["sweep", "--root", str(project), "--dry-run", "--work-dir", str(project / ".sweep"), "--series", "torch"]) == 0
    out = capsys.readouterr().out
    assert "torch-2.9.0: current" in out and "torch-2.10.0: no results file" in out
    assert not (project / ".sweep" / "env").exists()
    assert main(["sweep", "--root", str(project), "--series", "nope", "--dry-run"]) == 2
    json.loads((project / "results" / "cpu-torch2.9.0-1.json").read_text())  # untouched


def test_the_summary_prints_the_figures_beside_the_targets(project):
    releases = select(load_releases(project), ["torch"], ["2.9.0", "2.10.0"])
    ran = [Measured(releases[0], "ran", install_s=120, verify_s=150, env_bytes=6 * 10**9), Measured(releases[1], "current", "current: x.json")]
    lines = report(ran, wall_s=300, peak_bytes=8 * 10**9)
    assert lines[0].split() == ["torch-2.9.0", "ran", "(install", "2.0", "min,", "verify", "2.5", "min,", "environment", "6.0", "GB)"]
    assert "1 environment(s) run, 1 current, 0 failed, in 5.0 min" in lines
    assert "peak disk of the sweep's folder: 8.0 GB (target < 15 GB)" in lines
    assert report([ran[1]], wall_s=4.2, peak_bytes=0)[-1] == "nothing to run: 4.2 s (target < 120 s)"


def test_a_series_may_give_its_claims_more_time(project):
    recorder = Recorder(project)
    xla = select(load_releases(project), ["torch_xla"], ["2.9.0"])[0]
    sweep(project, recorder).run_release(xla)
    verify = next(command for command, _ in recorder.calls if command[1:2] == ["verify"])
    env = next(env for command, env in recorder.calls if command[1:2] == ["verify"])
    assert verify[verify.index("--timeout") + 1] == "2400" and env["PJRT_DEVICE"] == "CPU"
