"""Every private torch name the project uses is listed (torchclaims.history.private_names), the probe
says whether each resolves in an environment, and the release sweep keeps each release's answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from private_names import private, uses
from test_releases import ROOT, write
from torchclaims.errors import InvalidFileError
from torchclaims.history import name_answers, name_sweep
from torchclaims.history.name_answers import (
    Answer,
    answer_path,
    lacking,
    problems,
    read_answer,
    read_probe_output,
    write_answer,
)
from torchclaims.history.name_probe import resolve
from torchclaims.history.private_names import NAMES
from torchclaims.history.release_sweep import Sweep
from torchclaims.history.releases import load_releases
from torchclaims.history.sweep_plan import select
from torchclaims.project import Folders

SOURCE = ROOT / "src"


def tensor_attributes() -> dict[str, str]:
    """Private attributes of tensors, which code reads from any tensor (``value._base``): those of
    this torch, and those listed (a release without one is what the probe is for)."""
    import torch

    listed = {name.rsplit(".", 1)[1] for name in NAMES if name.startswith("torch.Tensor.")}
    return {name: f"torch.Tensor.{name}" for name in {*dir(torch.Tensor), *listed} if private(name)}


def used_names() -> dict[str, list[str]]:
    """Each private torch name used in src/ and gallery/ -> where."""
    attributes, found = tensor_attributes(), {}
    for path in sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "gallery").rglob("*.py")]):
        for name, line in uses(path.read_text(encoding="utf-8"), "torch", attributes):
            found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


def unlisted_and_unused(used: dict[str, list[str]], listed) -> tuple[dict[str, list[str]], list[str]]:
    return {name: where for name, where in used.items() if name not in listed}, sorted(set(listed) - set(used))


def test_every_private_torch_name_in_the_engine_and_the_scripts_is_listed_and_every_listed_one_used():
    unlisted, unused = unlisted_and_unused(used_names(), NAMES)
    assert unlisted == {}, "list these in torchclaims/history/private_names.py, with why each is needed"
    assert unused == [], "listed in torchclaims/history/private_names.py but used nowhere: drop them"


def test_a_use_left_off_the_list_and_a_name_no_longer_used_are_both_reported():
    used = used_names()
    listed = {**{name: "" for name in used if name != "torch._dynamo.reset"}, "torch._gone": ""}
    unlisted, unused = unlisted_and_unused(used, listed)
    assert list(unlisted) == ["torch._dynamo.reset"] and unlisted["torch._dynamo.reset"][0].startswith("gallery/")
    assert unused == ["torch._gone"]


def test_each_way_of_reaching_a_private_torch_name_is_found():
    source = '''
import torch
import torch._dynamo as dynamo
import torch.utils.checkpoint
from torch._C import _dispatch_keys as keys
from torch.testing._internal import common_utils
from torch import nn, _C

dynamo.reset()
torch._dynamo.config.patch(x=1)
common_utils.set_rng_seed(0)
getattr(torch._C, "_hidden", None)
hasattr(torch.backends, "_private")
_C._own(keys)
importlib.import_module("torch._inductor.config")
base = value._base
self._base, torch.nn.Module, nn.Linear, torch.Tensor.__add__  # own attribute; public names
CHILD = """
import json, torch
print(torch._C._in_a_child())
"""
'''
    found = sorted({name for name, _ in uses(source, "torch", {"_base": "torch.Tensor._base"})})
    assert found == [
        "torch.Tensor._base",
        "torch._C",
        "torch._C._dispatch_keys",
        "torch._C._hidden",
        "torch._C._in_a_child",
        "torch._C._own",
        "torch._dynamo",
        "torch._dynamo.config.patch",
        "torch._dynamo.reset",
        "torch._inductor.config",
        "torch.backends._private",
        "torch.testing._internal.common_utils",
        "torch.testing._internal.common_utils.set_rng_seed",
    ]
    assert ("torch._C._in_a_child", 20) in uses(source, "torch"), "a child's code is read at its own line"


def test_names_of_other_packages_are_not_counted():
    assert uses("import torch_xla\ntorch_xla._XLAC._xla_sync()\nimport os\nos._exit(0)\n", "torch") == []


def test_the_probe_tells_a_missing_attribute_from_a_missing_module():
    assert resolve("json.decoder.JSONDecoder") == ""
    assert resolve("xml.dom.minidom.parseString") == "", "a submodule not imported yet is imported"
    assert resolve("json.decoder._no_such_name").startswith("AttributeError: ")
    assert resolve("xml._no_such_module").startswith("ModuleNotFoundError: ")
    assert resolve("no_such_package_here.x").startswith("ModuleNotFoundError: ")


def run_probe(output: Path, package: str, *path: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": ":".join(str(p) for p in [*path, SOURCE]), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", name_sweep.PROBE, str(output), package]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.processes
def test_every_listed_name_resolves_in_the_installed_torch(tmp_path):
    import torch

    done = run_probe(tmp_path / "probe.json", "torch")
    assert done.returncode == 0, done.stderr[-2000:]
    answer = read_probe_output(tmp_path / "probe.json")
    assert answer.missing == {}
    assert answer.resolves == sorted(NAMES) and answer.torch == torch.__version__


def fake_torch(folder: Path, version: str = "2.9.0") -> Path:
    """An environment whose torch has tensors and part of torch._C, and nothing else."""
    (folder / "torch").mkdir(parents=True)
    (folder / "torch" / "__init__.py").write_text("from . import _C\n\nclass Tensor:\n    _base = None\n")
    (folder / "torch" / "_C.py").write_text("def _dispatch_dump_table(name):\n    return ''\n")
    (folder / f"torch-{version}.dist-info").mkdir()
    (folder / f"torch-{version}.dist-info" / "METADATA").write_text(f"Name: torch\nVersion: {version}\n")
    return folder


@pytest.fixture
def project(tmp_path) -> Path:
    write(tmp_path)
    (tmp_path / "results").mkdir()
    return tmp_path


def release(root: Path, series: str = "torch", version: str = "2.9.0"):
    return select(load_releases(root), [series], [version])[0]


@pytest.mark.processes
def test_a_release_missing_names_shows_each_and_fails_the_check(project):
    done = run_probe(project / "probe.json", "torch", fake_torch(project / "env"))
    assert done.returncode == 0, done.stderr[-2000:]
    probed = read_probe_output(project / "probe.json")
    assert {"torch.Tensor._base", "torch._C._dispatch_dump_table"} <= set(probed.resolves)
    assert probed.missing["torch._C._dispatch_keys"].startswith("AttributeError: ")
    assert probed.missing["torch._dynamo"].startswith("ModuleNotFoundError: ")
    rel = release(project)
    write_answer(answer_path(Folders(project).results, rel), Answer(**probed.model_dump(), release=rel.name))
    found = problems(Folders(project).results, [rel], [rel])
    assert "torch-2.9.0: torch._C._dispatch_keys does not resolve (AttributeError: " in "\n".join(found)
    assert len(found) == len(probed.missing) == len(NAMES) - 2


def answer(rel, **changes) -> Answer:
    fields = dict(package="torch", version=f"{rel.version}+cpu", torch=f"{rel.version}+cpu", python="3.11.7")
    return Answer(**{**fields, "resolves": sorted(NAMES), "missing": {}, "release": rel.name, **changes})


@pytest.mark.parametrize(
    "change, field",
    [
        ({"release": "torch-2.10.0"}, "release"),
        ({"extra": 1}, "extra"),
        ({"resolves": ["os.path"]}, "resolves.0"),
        ({"missing": {"torch.x": ""}}, "missing.torch.x"),
        ({"resolves": ["torch.x"], "missing": {"torch.x": "gone"}}, "(record)"),
    ],
)
def test_a_malformed_answer_is_refused_naming_its_file_and_field(project, change, field):
    rel = release(project)
    path = answer_path(Folders(project).results, rel)
    path.parent.mkdir()
    path.write_text(json.dumps({**answer(rel).model_dump(), **change}))
    with pytest.raises(InvalidFileError) as raised:
        read_answer(path)
    assert [(p.path, p.field) for p in raised.value.problems] == [(path, field)]


def test_a_bad_answer_takes_no_other_down_and_a_stray_file_is_named(project):
    results = Folders(project).results
    old, new = release(project), release(project, version="2.10.0")
    write_answer(answer_path(results, new), answer(new, resolves=sorted(NAMES)[1:], missing={sorted(NAMES)[0]: "gone"}))
    answer_path(results, old).write_bytes(b"\xff" * 10)
    (results / name_answers.FOLDER / "torch-9.9.9.json").write_text("{}")
    found = problems(results, [old, new], [old, new])
    assert found[0].startswith("torch-2.9.0: its answer cannot be used: ") and "not UTF-8" in found[0]
    assert found[1] == f"torch-2.10.0: {sorted(NAMES)[0]} does not resolve (gone)"
    assert found[2].endswith("torch-9.9.9.json: answers no release of the sweep") and len(found) == 3


def test_an_answer_made_with_another_version_or_before_a_name_was_listed_stands_for_nothing(project, monkeypatch):
    results, rel = Folders(project).results, release(project)
    write_answer(answer_path(results, rel), answer(rel, version="2.10.0"))
    assert problems(results, [rel], [rel]) == ["torch-2.9.0: made with torch 2.10.0, not torch 2.9.0"]
    write_answer(answer_path(results, rel), answer(rel))
    assert problems(results, [rel], [rel]) == [] and lacking(results, [rel]) == []
    monkeypatch.setitem(NAMES, "torch._new_name", "a use added since")
    assert problems(results, [rel], [rel]) == ["torch-2.9.0: its answer predates 1 listed name(s) (torch._new_name...)"]


class Installer:
    """Stands in for pip and the release's interpreter: records each command; the probe writes
    what ``probed`` says, with the version ``version`` (the release's unless given)."""

    def __init__(self, version: str = "", status: int = 0, **probed):
        self.version, self.status, self.probed, self.calls = version, status, probed, []

    def __call__(self, command: list[str], env: dict[str, str]) -> int:
        self.calls.append((command, env))
        if command[1:3] == ["-m", name_sweep.PROBE]:
            package, version = command[4], self.version or self.installed(command[4])
            fields = {"package": package, "version": version, "torch": version, "python": "3.11.7"}
            Path(command[3]).write_text(json.dumps({"resolves": sorted(NAMES), "missing": {}, **fields, **self.probed}))
            return self.status
        return 0

    def installed(self, package: str) -> str:
        return next(c.split("=")[-1] for command, _ in self.calls for c in command if c.startswith(f"{package}="))


def sweep(project: Path, run: Installer) -> Sweep:
    return Sweep(
        project,
        load_releases(project),
        project / ".sweep",
        Folders(project).results,
        run=run,
        python="python3",
        free_bytes=lambda _: 10**12,
    )


def test_the_sweep_probes_each_release_without_an_answer_in_its_own_environment(project):
    run = Installer()
    chosen = select(load_releases(project), ["torch", "torch_xla"], ["2.9.0"])
    measured = name_sweep.probe_missing(sweep(project, run), chosen, log=lambda _: None)
    assert [(m.release.name, m.status) for m in measured] == [("torch-2.9.0", "probed"), ("torch_xla-2.9.0", "probed")]
    venv, install, project_install, probe = (command for command, _ in run.calls[:4])
    assert venv[1:3] == ["-m", "venv"] and install[-1] == "torch===2.9.0" and probe[-1] == "torch"
    assert project_install[-2:] == [f"{project}[claims]", "torch===2.9.0"], "the claims' environment, as verify's"
    assert run.calls[7][0][-1] == "torch_xla" and run.calls[5][0][-2:] == ["torch_xla===2.9.0", "torch==2.9.0"]
    assert read_answer(answer_path(Folders(project).results, chosen[1])).package == "torch_xla"
    assert not (project / ".sweep" / "env").exists() and not (project / ".sweep" / "probe.json").exists()
    again = Installer()
    assert name_sweep.probe_missing(sweep(project, again), chosen, log=lambda _: None) == [] and again.calls == []


def test_a_release_whose_claims_run_is_probed_in_their_environment_before_it_goes(project):
    run = Installer(version="2.9.0")  # as verify installed it for the claims
    rel, env_dir = release(project), project / ".sweep" / "env"
    env_dir.mkdir(parents=True)
    assert "private name(s) resolve" in name_sweep.probe_after_claims(sweep(project, run), rel, env_dir)
    ((probe, _),) = run.calls  # the probe alone: nothing installed a second time
    assert probe[0] == str(env_dir / "bin" / "python") and probe[1:3] == ["-m", name_sweep.PROBE]
    assert read_answer(answer_path(Folders(project).results, rel)).release == rel.name
    again = Installer(version="2.9.0")
    assert name_sweep.probe_after_claims(sweep(project, again), rel, env_dir) == "" and again.calls == []


@pytest.mark.parametrize(
    "installer, why",
    [
        (Installer(status=1), "the private-name probe exited 1"),
        (Installer(version="2.10.0"), "the probe's environment was made with torch 2.10.0, not torch 2.9.0"),
        (Installer(resolves="torch._C"), "the private-name probe wrote no usable answer: "),
    ],
)
def test_a_probe_that_fails_or_answers_for_another_release_keeps_no_answer(project, installer, why):
    (measured,) = name_sweep.probe_missing(sweep(project, installer), [release(project)], log=lambda _: None)
    assert measured.status == "failed" and measured.detail.startswith(why)
    assert lacking(Folders(project).results, [release(project)]) == ["torch-2.9.0"]


def test_a_dry_run_says_which_releases_it_would_probe_and_installs_nothing(project):
    run, lines = Installer(), []
    measured = name_sweep.probe_missing(sweep(project, run), [release(project)], dry_run=True, log=lines.append)
    assert [m.status for m in measured] == ["would probe"] and run.calls == []
    assert lines == [
        "torch-2.9.0: no answer to the private-name probe",
        "  install: torch===2.9.0 and this project [claims] into a new venv, and run the private-name probe there",
    ]


def test_every_answer_the_sweep_wrote_shows_every_listed_name_resolving():
    """The committed answers (results/private-torch-names/): no listed name missing in any release,
    none older than the list, no file for a release the sweep no longer has."""
    releases = load_releases(ROOT)
    every = [r for s in releases.series for r in select(releases, [s], [])]
    assert problems(Folders(ROOT).results, select(releases, [], []), every) == []


def test_every_release_the_sweep_covers_has_an_answer():
    """Each release of the default series (what `torchclaims sweep` runs unasked) has been probed:
    `nox -s sweep` writes the answers it lacks (results/private-torch-names/)."""
    releases = load_releases(ROOT)
    unanswered = lacking(Folders(ROOT).results, select(releases, [], []))
    assert unanswered == [], f"no answer to the private-name probe for {', '.join(unanswered)}: run nox -s sweep"
