"""The release sweep, with pip and the claims replaced by a recorder: what it decides and what it leaves on disk."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from datetime import timedelta
from pathlib import Path

import pytest

from factories import STARTED, make_environment, make_kb, make_record, write_results_file
from test_releases import ROOT, write
from torchclaims.claims import load_claims
from torchclaims.cli import main
from torchclaims.errors import UsageError
from torchclaims.evidence.admission import Admission
from torchclaims.evidence.fingerprint import COMMON_ENV_PREFIXES
from torchclaims.evidence.freshness import outdated_results
from torchclaims.evidence.output import write_run
from torchclaims.evidence.records import ScriptInfo
from torchclaims.evidence.results import build_results, figures_dir, read_results
from torchclaims.history.release_sweep import Sweep
from torchclaims.history.releases import load_releases
from torchclaims.history.sweep_plan import plan, select
from torchclaims.history.sweep_report import Measured, report

HELD = {"numpy": "2.4.6", "transformers": "5.24.0"}
LATER = STARTED + timedelta(days=1)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    # The plan compares a file's fingerprint with the variables set here: the tests'
    # files record none, so none may be set (a user's shell may set TORCHINDUCTOR_CACHE_DIR).
    for key in [key for key in os.environ if key.startswith(COMMON_ENV_PREFIXES)]:
        monkeypatch.delenv(key)
    make_kb(tmp_path, "alpha", "beta")
    write(tmp_path)
    (tmp_path / "results").mkdir()
    return tmp_path


def sha(root: Path, claim_id: str) -> str:
    return hashlib.sha256((root / "gallery" / f"{claim_id}.py").read_bytes()).hexdigest()


def sweep_label(series: str, version: str, root: Path | None = None) -> str:
    releases = load_releases(root or ROOT)
    return next(r for r in select(releases, [series], [version])).label


HERE = {
    "python": platform.python_version(),
    "machine": platform.machine(),
    "os": f"{platform.system()} {platform.release()}",
}


def run_environment(version: str, backend: str = "cpu", build: str = "cu128", **overrides):
    """A run's fingerprint as this machine records it (its interpreter, machine and kernel)."""
    overrides = {**HERE, **overrides}
    if backend == "xla":
        torch = {"2.8.1": "2.8.0", "2.9.0": "2.9.0"}[version]
        return make_environment(
            backend="xla",
            device="xla:0",
            device_name="XLA CPU",
            torch=f"{torch}+cu128",
            packages={"torch": torch, "torch_xla": version, **HELD},
            **overrides,
        )
    return make_environment(torch=f"{version}+{build}", packages={"torch": version, **HELD}, **overrides)


def commit_run(
    root: Path,
    version: str,
    claims=("alpha", "beta"),
    stamp: str = "1",
    label: str | None = None,
    backend: str = "cpu",
    **packages,
) -> Path:
    """A results file of the sweep (unless ``label`` says otherwise), each record with a figure."""
    series = "torch_xla" if backend == "xla" else "torch"
    env = run_environment(version, backend)
    if packages:
        env = env.model_copy(update={"packages": {**env.packages, **packages}})
    path = root / "results" / f"{backend}-torch{version}-{stamp}.json"
    records = []
    for c in claims:
        figure = f"figures/{path.stem}/{c}/plot.png"
        (root / "results" / figure).parent.mkdir(parents=True, exist_ok=True)
        (root / "results" / figure).write_bytes(b"old " + c.encode())
        records.append(
            make_record(
                c, environment=env, script=ScriptInfo(path=f"gallery/{c}.py", sha256=sha(root, c)), figures=[figure]
            )
        )
    return write_results_file(path, records, env, label=sweep_label(series, version, root) if label is None else label)


def dry_run(project: Path) -> int:
    """The command line's dry run of torch 2.9.0 in ``project``."""
    return main(
        [
            "sweep",
            "--root",
            str(project),
            "--dry-run",
            "--work-dir",
            str(project / ".sweep"),
            "--series",
            "torch",
            "--versions",
            "2.9.0",
        ]
    )


def decisions(root: Path, *versions: str) -> dict[str, str]:
    releases = load_releases(root)
    return {
        p.release.version: p.why
        for p in plan(root, releases, root / "results", select(releases, ["torch"], list(versions)))
    }


def test_a_release_is_current_only_with_every_claim_current_scripts_and_the_held_versions(project):
    commit_run(project, "2.9.0")
    commit_run(project, "2.10.0", claims=("alpha",))
    commit_run(project, "2.15.0", numpy="1.26.4")
    why = decisions(project)
    assert why["2.9.0"] == "current: cpu-torch2.9.0-1.json"
    assert (
        why["2.10.0"]
        == "1 new claim(s) (beta): they run and merge into cpu-torch2.10.0-1.json, which keeps 1 record(s)"
    )
    assert why["2.15.0"] == "no results file of the sweep for this release: all 2 claims run"
    (project / "gallery" / "beta.py").write_text((project / "gallery" / "beta.py").read_text() + "\n# changed\n")
    assert decisions(project, "2.9.0")["2.9.0"].startswith(
        "1 script(s) changed (beta): they run and merge into cpu-torch2.9.0-1.json"
    )


class Recorder:
    """Stands in for pip and the claims: records each command; for ``verify``, writes the
    records of the claims it names through the real output.write_run, as verify does."""

    def __init__(self, root: Path, fail_on: str = "", verify_status: int = 0, build: str = "", **environment):
        self.root, self.fail_on, self.verify_status, self.environment, self.calls = (
            root,
            fail_on,
            verify_status,
            environment,
            [],
        )
        self.build = build  # the torch build pip took; by default what the sweep asked for

    def __call__(self, command: list[str], env: dict[str, str]) -> int:
        self.calls.append((command, env))
        if self.fail_on and self.fail_on in " ".join(command):
            return 1
        if command[1:3] == ["-m", "venv"]:
            (Path(command[3]) / "bin").mkdir(parents=True)
            (Path(command[3]) / "bin" / "big-library.so").write_bytes(b"\0" * 4096)
        if len(command) > 1 and command[1] == "verify":
            if self.verify_status not in (0, 1):
                return self.verify_status
            self.verify(command)
        return 0

    def verify(self, command: list[str]) -> None:
        option = lambda name: command[command.index(name) + 1]  # noqa: E731
        claims = command[2 : command.index("--root")] or [c.id for c in load_claims(self.root / "claims").executable()]
        installed = [c for command, _ in self.calls for c in command if "==" in c]
        package = "torch_xla" if option("--backend") == "xla" else "torch"
        version = next(c.split("=")[-1] for c in reversed(installed) if c.split("=")[0] == package)
        build = self.build or ("cpu" if any("--extra-index-url" in command for command, _ in self.calls) else "cu128")
        env = run_environment(version, option("--backend"), build, **self.environment)
        records_dir = Path(option("--records-dir"))
        records = []
        for c in claims:
            (records_dir / c).mkdir(parents=True, exist_ok=True)
            (records_dir / c / "plot.png").write_bytes(b"new " + c.encode())
            records.append(
                make_record(
                    c,
                    environment=env,
                    started_at=LATER,
                    figures=[f"{c}/plot.png"],
                    script=ScriptInfo(path=f"gallery/{c}.py", sha256=sha(self.root, c)),
                )
            )
        results = build_results(records, env, label=option("--label"))
        executable = {c.id for c in load_claims(self.root / "claims").executable()}
        write_run(results, Path(option("--output")), records_dir, executable, log=lambda _: None)

    def verified(self) -> list[list[str]]:
        """The claim ids of each verify run (empty: every claim)."""
        return [command[2 : command.index("--root")] for command, _ in self.calls if command[1:2] == ["verify"]]


def sweep(project: Path, recorder: Recorder, free: int = 100 * 10**9) -> Sweep:
    return Sweep(
        project,
        load_releases(project),
        project / ".sweep",
        project / "results",
        run=recorder,
        python="python3",
        free_bytes=lambda _: free,
    )


def only_file(project: Path, pattern: str = "cpu-torch2.9.0-*.json") -> Path:
    files = sorted((project / "results").glob(pattern))
    assert len(files) == 1, files
    return files[0]


def test_a_release_runs_in_its_own_environment_which_is_removed_afterwards(project):
    old = commit_run(project, "2.10.0", claims=("alpha",))
    recorder = Recorder(project)
    measured = sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0", "2.10.0"]))
    assert [(m.release.version, m.status) for m in measured] == [("2.9.0", "ran"), ("2.10.0", "ran")]
    assert not (project / ".sweep" / "env").exists() and not (project / ".sweep" / "tmp").exists()
    assert not old.exists(), "the new run's file takes the older file's records and replaces it"
    assert measured[1].detail == f"merged into the records of {old.name}" and measured[0].env_bytes >= 4096
    assert recorder.verified() == [[], ["beta"]], "2.9.0 had no file: every claim; 2.10.0 lacked beta only"
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


def test_a_changed_script_reruns_only_its_claim_and_merges_into_the_releases_file(project):
    """On another machine of the same kind (another kernel build), too: the kept records keep their fingerprint."""
    make_kb(project, "gamma")  # a new claim
    old = commit_run(project, "2.9.0", claims=("alpha", "beta"))
    (project / "gallery" / "beta.py").write_text((project / "gallery" / "beta.py").read_text() + "\n# changed\n")
    recorder = Recorder(project, os=HERE["os"].split("-", 1)[0] + "-another-build")
    measured = sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))
    assert recorder.verified() == [["beta", "gamma"]]
    assert [(m.status, m.claims) for m in measured] == [("ran", 2)]
    new = only_file(project)
    assert not old.exists() and not figures_dir(old).exists()
    results = read_results(new)
    by_id = {r.claim_id: r for r in results.records}
    assert sorted(by_id) == ["alpha", "beta", "gamma"]
    assert by_id["alpha"].started_at < by_id["beta"].started_at == by_id["gamma"].started_at
    assert by_id["alpha"].environment.os == HERE["os"] and by_id["beta"].environment.os.endswith("-another-build")
    assert by_id["beta"].script.sha256 == sha(project, "beta")
    assert (project / "results" / by_id["alpha"].figures[0]).read_bytes() == b"old alpha"  # kept, beside the new file
    assert (project / "results" / by_id["beta"].figures[0]).read_bytes() == b"new beta"
    assert Admission.for_project(project, load_claims(project / "claims").claims).check(new, results).problems == []
    assert outdated_results(project, project / "results") == {}
    again = Recorder(project)
    assert [m.status for m in sweep(project, again).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))] == [
        "current"
    ]
    assert again.calls == []


def test_claims_asked_to_run_again_run_although_current_and_an_unknown_one_is_refused(project):
    """After a change to project code a script imports (a harness), which its digest does not see."""
    commit_run(project, "2.9.0", claims=("alpha", "beta"))
    recorder = Recorder(project)
    measured = sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0"]), rerun=("beta",))
    assert recorder.verified() == [["beta"]]
    assert [(m.status, m.claims) for m in measured] == [("ran", 1)]
    assert sorted(r.claim_id for r in read_results(only_file(project)).records) == ["alpha", "beta"]
    with pytest.raises(UsageError, match="no-such-claim"):
        sweep(project, Recorder(project)).sweep(
            select(load_releases(project), ["torch"], ["2.9.0"]), rerun=("no-such-claim",)
        )


def test_an_environment_that_differs_beyond_the_kernel_build_runs_every_claim(project):
    """verify merges only into a file of the same environment; the sweep then runs the rest, and
    replaces the old file."""
    old = commit_run(project, "2.9.0")
    (project / "gallery" / "beta.py").write_text((project / "gallery" / "beta.py").read_text() + "\n# changed\n")
    recorder = Recorder(project, python="3.13.1")
    measured = sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))
    assert recorder.verified() == [["beta"], ["alpha"]]
    assert measured[0].status == "ran" and measured[0].claims == 2 and measured[0].detail == f"replaced {old.name}"
    results = read_results(only_file(project))
    assert {r.claim_id for r in results.records} == {"alpha", "beta"} and {
        r.environment.python for r in results.records
    } == {"3.13.1"}


def test_a_machine_known_to_record_another_configuration_runs_every_claim_from_the_start(project, monkeypatch):
    """Another Python, or a variable the fingerprint records set here: the dry run says so, and nothing is merged."""
    old = commit_run(project, "2.9.0")
    (project / "gallery" / "beta.py").write_text((project / "gallery" / "beta.py").read_text() + "\n# changed\n")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    why = decisions(project, "2.9.0")["2.9.0"]
    assert f"another configuration than {old.name} (OMP_NUM_THREADS=(unset) here 3), so all 2 claims run" in why
    recorder = Recorder(project)
    sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))
    assert recorder.verified() == [[]] and not old.exists()


def test_files_others_made_for_a_release_are_neither_current_nor_replaced(project, capsys):
    """A contributor's file for torch 2.9.0: their own label, or a +cpu build where the sweep takes the index's."""
    theirs = commit_run(project, "2.9.0", stamp="theirs", label="my laptop")
    cpu_build = commit_run(project, "2.9.0", stamp="cpu")
    cpu_build.write_text(cpu_build.read_text().replace("2.9.0+cu128", "2.9.0+cpu"))
    assert decisions(project, "2.9.0")["2.9.0"].startswith("no results file of the sweep for this release")
    recorder = Recorder(project)
    sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0"]), dry_run=True)
    assert f"left as they are (not made by the sweep): {cpu_build.name}, {theirs.name}" in capsys.readouterr().out
    sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))
    assert theirs.exists() and cpu_build.exists() and figures_dir(theirs).exists()
    assert len(list((project / "results").glob("cpu-torch2.9.0-*.json"))) == 3


def test_a_failed_verify_keeps_the_sweeps_file(project):
    old = commit_run(project, "2.9.0")
    (project / "gallery" / "beta.py").write_text("# changed\n")
    measured = sweep(project, Recorder(project, verify_status=2)).sweep(
        select(load_releases(project), ["torch"], ["2.9.0"])
    )
    assert measured[0].status == "failed" and "kept" in measured[0].detail
    assert old.exists() and only_file(project) == old


def test_torch_xla_releases_rerun_only_the_changed_claims_too(project):
    old = commit_run(project, "2.8.1", backend="xla")
    (project / "gallery" / "alpha.py").write_text((project / "gallery" / "alpha.py").read_text() + "\n# changed\n")
    recorder = Recorder(project)
    measured = sweep(project, recorder).sweep(select(load_releases(project), ["torch_xla"], ["2.8.1"]))
    assert measured[0].status == "ran" and recorder.verified() == [["alpha"]]
    torch_install = recorder.calls[1][0]
    assert torch_install[-2:] == ["torch_xla===2.8.1", "torch==2.8.0"]
    verify, env = next((c, e) for c, e in recorder.calls if c[1:2] == ["verify"])
    assert verify[verify.index("--backend") + 1] == "xla" and env["PJRT_DEVICE"] == "CPU"
    assert not old.exists() and {r.claim_id for r in read_results(only_file(project, "xla-*.json")).records} == {
        "alpha",
        "beta",
    }


def test_records_of_removed_claims_are_dropped_without_installing(project):
    old = commit_run(project, "2.9.0")
    (project / "claims" / "beta.toml").unlink()
    recorder = Recorder(project)
    measured = sweep(project, recorder).sweep(select(load_releases(project), ["torch"], ["2.9.0"]))
    assert measured[0].status == "pruned" and recorder.calls == []
    assert [r.claim_id for r in read_results(old).records] == ["alpha"] and not (figures_dir(old) / "beta").exists()


def test_a_broken_claim_record_stops_the_sweep_before_anything_runs(project, capsys):
    commit_run(project, "2.9.0")
    (project / "claims" / "beta.toml").write_text("not = [valid")
    assert (
        main(["sweep", "--root", str(project), "--dry-run", "--work-dir", str(project / ".sweep"), "--series", "torch"])
        == 2
    )
    assert "beta.toml" in capsys.readouterr().err


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
    measured = sweep(project, Recorder(project, fail_on="torch===2.9.0")).sweep(
        select(load_releases(project), ["torch"], ["2.9.0"])
    )
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
    assert torch_install[-3:] == [
        "--extra-index-url",
        sw.torch_index,
        "torch==2.9.0",
    ]  # the index's +cpu build may be taken
    assert read_results(only_file(project)).environment.torch == "2.9.0+cpu"
    assert decisions(project, "2.9.0")["2.9.0"].startswith("no results file of the sweep"), (
        "a +cpu file is not the index build's"
    )


def test_the_command_line_dry_run_plans_without_installing(project, capsys):
    commit_run(project, "2.9.0")
    assert (
        main(["sweep", "--root", str(project), "--dry-run", "--work-dir", str(project / ".sweep"), "--series", "torch"])
        == 0
    )
    out = capsys.readouterr().out
    assert "torch-2.9.0: current" in out and "torch-2.10.0: no results file" in out
    assert not (project / ".sweep" / "env").exists()
    assert main(["sweep", "--root", str(project), "--series", "nope", "--dry-run"]) == 2
    json.loads((project / "results" / "cpu-torch2.9.0-1.json").read_text())  # untouched
    (project / "gallery" / "beta.py").write_text((project / "gallery" / "beta.py").read_text() + "\n# changed\n")
    assert dry_run(project) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == [
        "torch-2.9.0: 1 script(s) changed (beta): they run and merge into cpu-torch2.9.0-1.json, "
        "which keeps 1 record(s)",
        "  install: torch===2.9.0 and this project [claims] into a new venv, other packages at sweep/constraints.txt",
        "  download: torch 2.9.0 from the package index "
        "(torch's CUDA build on Linux, several GB) and the held packages; "
        "pip keeps no cache and the venv is removed afterwards",
        "  run: 1 claim(s): beta on cpu, 300 s each at most",
    ]
    assert "torch-2.9.0: no answer to the private-name probe; the probe runs in the environment of its claims" in out
    assert "dry run: 1 release(s) would run 1 claim run(s) in all; nothing was installed" in out


def test_the_summary_prints_the_figures_beside_the_targets(project):
    releases = select(load_releases(project), ["torch"], ["2.9.0", "2.10.0"])
    ran = [
        Measured(releases[0], "ran", install_s=120, verify_s=150, env_bytes=6 * 10**9),
        Measured(releases[1], "current", "current: x.json"),
    ]
    lines = report(ran, wall_s=300, peak_bytes=8 * 10**9)
    assert lines[0].split() == [
        "torch-2.9.0",
        "ran",
        "(install",
        "2.0",
        "min,",
        "verify",
        "2.5",
        "min,",
        "environment",
        "6.0",
        "GB)",
    ]
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


def test_the_sessions_index_words_mean_the_package_index_to_the_sweep(project, capsys, monkeypatch):
    """TORCHCLAIMS_TORCH_INDEX=auto (or pypi) chooses the CPU build for the nox sessions; the
    sweep's releases stay the index's builds."""
    commit_run(project, "2.9.0")
    for word in ("auto", "pypi"):
        monkeypatch.setenv("TORCHCLAIMS_TORCH_INDEX", word)
        assert dry_run(project) == 0
        assert "torch-2.9.0: current: cpu-torch2.9.0-1.json" in capsys.readouterr().out


def test_a_run_that_does_not_stand_for_its_release_fails_and_names_its_file(project):
    """pip took another build than the sweep pins: verify's file is named, the sweep's file kept."""
    old = commit_run(project, "2.9.0")
    (project / "gallery" / "beta.py").write_text("# changed\n")
    measured = sweep(project, Recorder(project, build="cpu")).sweep(
        select(load_releases(project), ["torch"], ["2.9.0"])
    )
    assert measured[0].status == "failed" and "does not stand for torch-2.9.0" in measured[0].detail
    assert old.exists()


def test_a_file_made_before_the_fingerprint_recorded_a_field_runs_every_claim(project):
    old = commit_run(project, "2.9.0")
    data = json.loads(old.read_text())
    del data["environment"][
        "accelerator_runtime"
    ]  # as a file written before the field existed would be (read with its default)
    (project / "gallery" / "beta.py").write_text((project / "gallery" / "beta.py").read_text() + "\n# changed\n")
    old.write_text(json.dumps(data))
    assert "(accelerator_runtime not recorded in it), so all 2 claims run" in decisions(project, "2.9.0")["2.9.0"]
