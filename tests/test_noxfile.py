"""The nox sessions' install: where torch comes from, and a no-change run that installs nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def loaded():
    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # registers its sessions with nox: once
    return module


@pytest.fixture
def noxfile(loaded, monkeypatch, tmp_path):
    """The noxfile as a module, run from a copy of the files an install reads."""
    for name in loaded.INSTALL_INPUTS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    return loaded


class Session:
    """What the noxfile uses of nox.Session: its venv, install, log and warn."""

    def __init__(self, venv: Path):
        self.bin = str(venv / "bin")
        (venv / "bin").mkdir(parents=True, exist_ok=True)
        self.installs, self.logs, self.warnings = [], [], []

    def install(self, *args):
        self.installs.append(list(args))

    def log(self, message):
        self.logs.append(message)

    def warn(self, message):
        self.warnings.append(message)


def where_from(noxfile, monkeypatch, tmp_path, wheel: bool, answers: bool) -> Session:
    checked = []
    monkeypatch.setattr(noxfile, "local_wheel", lambda session, requirement: wheel)
    monkeypatch.setattr(
        noxfile, "unreachable", lambda url: checked.append(url) or ("" if answers else "Name or service not known")
    )
    session = Session(tmp_path / "venv")
    noxfile.install(session, "torch==2.13.0", "docs,claims")
    session.checked = checked
    return session


def test_a_local_wheel_that_satisfies_the_pin_is_installed_as_it_is(noxfile, monkeypatch, tmp_path):
    session = where_from(noxfile, monkeypatch, tmp_path, wheel=True, answers=True)
    torch, project = session.installs
    assert torch[0] == "torch==2.13.0" and "--no-index" in torch and "--extra-index-url" not in torch
    assert session.checked == [], "no index is asked when a local wheel will do"
    assert project[:2] == ["-e", ".[docs,claims]"] and session.warnings == []


def test_without_a_local_wheel_the_cpu_builds_index_is_used_when_it_answers(noxfile, monkeypatch, tmp_path):
    session = where_from(noxfile, monkeypatch, tmp_path, wheel=False, answers=True)
    assert session.installs[0][-2:] == ["--extra-index-url", noxfile.CPU_INDEX] and session.warnings == []


def test_where_only_the_package_index_answers_one_line_says_a_cuda_build_comes(noxfile, monkeypatch, tmp_path):
    session = where_from(noxfile, monkeypatch, tmp_path, wheel=False, answers=False)
    assert "--extra-index-url" not in session.installs[0] and "--no-index" not in session.installs[0]
    (line,) = session.warnings
    assert "CUDA build" in line and "Name or service not known" in line and noxfile.CPU_INDEX in line


def test_an_install_with_nothing_changed_installs_nothing(noxfile, monkeypatch, tmp_path):
    where_from(noxfile, monkeypatch, tmp_path, wheel=True, answers=True)
    again = where_from(noxfile, monkeypatch, tmp_path, wheel=True, answers=True)
    assert again.installs == [] and "nothing changed" in again.logs[0]
    other_extras = Session(tmp_path / "venv")
    noxfile.install(other_extras, "torch==2.13.0", "docs,claims,test")
    assert len(other_extras.installs) == 2
    (tmp_path / "sweep" / "constraints.txt").write_text("numpy==2.4.6\n")
    moved = where_from(noxfile, monkeypatch, tmp_path, wheel=True, answers=True)
    assert len(moved.installs) == 2, "a changed constraints file installs again"


def test_a_failed_install_leaves_no_stamp(noxfile, monkeypatch, tmp_path):
    monkeypatch.setattr(noxfile, "local_wheel", lambda session, requirement: True)
    session = Session(tmp_path / "venv")
    session.install = lambda *args: (_ for _ in ()).throw(RuntimeError("pip failed"))
    with pytest.raises(RuntimeError):
        noxfile.install(session, "torch==2.13.0", "docs,claims")
    assert not (tmp_path / "venv" / noxfile.STAMP).exists()


def test_the_local_wheel_check_asks_pip_without_any_index(noxfile, monkeypatch, tmp_path):
    (tmp_path / "links").mkdir()
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "links"))
    session = Session(tmp_path / "venv")
    session.bin = str(Path(sys.executable).parent)
    assert noxfile.local_wheel(session, "no-such-distribution-anywhere==1.0") is False


class NoxSession(Session):
    """A nox session of one of the shared environment's sessions: it records what it runs, by program name."""

    def __init__(self, venv: Path, *posargs: str):
        super().__init__(venv)
        self.name, self.posargs, self.runs = "shared", list(posargs), []

    def run(self, program, *args, **options):
        self.runs.append([Path(program).name, *args])
        return ""


def shared_session(noxfile, monkeypatch, tmp_path, *posargs: str) -> NoxSession:
    """A session whose shared environment exists already (a fake one: nothing in it runs)."""
    monkeypatch.setattr(noxfile, "local_wheel", lambda session, requirement: True)
    python = tmp_path / noxfile.SHARED_VENV / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.touch()
    return NoxSession(tmp_path / "unused-venv", *posargs)


def pip_installs(session: NoxSession) -> list[list[str]]:
    return [run for run in session.runs if run[:4] == ["python", "-m", "pip", "install"]]


def test_docs_and_tests_share_one_environment_and_install_it_once(noxfile, monkeypatch, tmp_path):
    first = shared_session(noxfile, monkeypatch, tmp_path)
    noxfile.docs(first)
    assert len(pip_installs(first)) == 2  # torch, then the project with every shared extra
    assert f".[{noxfile.SHARED_EXTRAS}]" in pip_installs(first)[1]
    later = shared_session(noxfile, monkeypatch, tmp_path)
    noxfile.tests(later)
    assert pip_installs(later) == [], "tests installed again into the shared environment"


def test_the_shared_environment_is_made_where_it_is_missing(noxfile, tmp_path):
    session = NoxSession(tmp_path / "unused-venv")
    shared = noxfile.Shared(session)
    assert session.runs == [[Path(sys.executable).name, "-m", "venv", str((tmp_path / noxfile.SHARED_VENV).resolve())]]
    assert shared.bin == str((tmp_path / noxfile.SHARED_VENV / "bin").resolve())


class LintSession(Session):
    def run(self, *args):
        self.runs.append(list(args))


def test_lint_runs_the_quick_path_then_ruff_on_the_code_with_the_pinned_ruff(noxfile, tmp_path):
    import tomllib

    session = LintSession(tmp_path / "venv")
    session.runs = []
    noxfile.lint(session)
    assert session.installs == [["-e", ".[lint]"]]  # no torch: CI's lint job installs in seconds
    paths = list(noxfile.RUFF_PATHS)
    assert session.runs == [["torchclaims", "lint"], ["ruff", "format", "--check", *paths], ["ruff", "check", *paths]]
    assert all((ROOT / path).exists() for path in paths), "every path ruff is given exists"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("ruff==") for r in extras["lint"]), "ruff is pinned in the lint extra"
    assert "lint" in noxfile.SHARED_EXTRAS.split(","), "the quick path finds the same ruff in the shared environment"


def test_the_fast_lane_leaves_out_every_slow_lane_and_nothing_else(noxfile, monkeypatch, tmp_path):
    import re
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    lanes = {line.split(":")[0] for line in declared} - {
        "own_process"
    }  # own_process says how a test runs, not how long
    assert set(re.findall(r"[a-z_]+", noxfile.FAST_LANE)) - {"not", "or", "and"} == lanes
    session = shared_session(noxfile, monkeypatch, tmp_path, "--fast", "-x")
    noxfile.tests(session)
    session.posargs = ["tests/test_lint.py"]
    noxfile.tests(session)
    ran = [run for run in session.runs if run[0] == "pytest"]
    assert ran == [["pytest", "-m", noxfile.FAST_LANE, "-x"], ["pytest", "tests/test_lint.py"]]


def test_the_speed_benchmark_builds_the_site_as_the_docs_session_does(loaded, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))  # the benchmark puts src/ and tests/ first on it
    spec = importlib.util.spec_from_file_location("build_speed_under_test", ROOT / "benchmarks" / "build_speed.py")
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    assert benchmark.SITE_BUILD == loaded.SPHINX_BUILD
    assert benchmark.sphinx(ROOT)[3:] == list(loaded.SPHINX_BUILD)  # python -m sphinx, then the docs session's
