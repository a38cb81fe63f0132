"""Cache: which files a claim depends on, and why its earlier record is stale."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import torchclaims
from factories import make_environment, make_record
from torchclaims.evidence.records import Verdict
from torchclaims.run.cache import InputScanner, cache_key, script_inputs, staleness

SCRIPT = '''"""Title\n=====\n"""
import torch

import _helper
from torchclaims.verify import verification

v = verification("a-claim")
v.finish()
'''


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def project(tmp_path):
    gallery = tmp_path / "gallery"
    gallery.mkdir()
    (gallery / "a_claim.py").write_text(SCRIPT)
    (gallery / "_helper.py").write_text("from _deep import constant\n\ndef make():\n    return constant\n")
    (gallery / "_deep.py").write_text("constant = 1\n")
    (gallery / "_unused.py").write_text("nothing = 0\n")
    (gallery / "other_claim.py").write_text("import torch\n")
    return tmp_path


def test_script_inputs_include_the_script_and_what_it_imports(project):
    script = project / "gallery" / "a_claim.py"
    inputs = script_inputs(script, project)
    assert inputs["gallery/a_claim.py"] == sha(script)
    assert inputs["gallery/_helper.py"] == sha(project / "gallery" / "_helper.py")
    assert inputs["gallery/_deep.py"] == sha(project / "gallery" / "_deep.py")  # imported by the helper


def test_script_inputs_include_torchclaims_modules_transitively(project):
    inputs = script_inputs(project / "gallery" / "a_claim.py", project)
    package = Path(torchclaims.__file__).parent
    assert inputs["torchclaims/verify/__init__.py"] == sha(package / "verify" / "__init__.py")
    # imported by torchclaims.verify through relative imports, and from there on
    for module in ("evidence/records.py", "backends.py", "errors.py", "evidence/fingerprint.py", "__init__.py"):
        assert f"torchclaims/{module}" in inputs


def test_script_inputs_leave_out_what_is_not_imported(project):
    inputs = script_inputs(project / "gallery" / "a_claim.py", project)
    assert "gallery/_unused.py" not in inputs
    assert "gallery/other_claim.py" not in inputs
    assert "torchclaims/cli/__init__.py" not in inputs
    assert not any("torch/" in name and not name.startswith("torchclaims/") for name in inputs)


def test_script_inputs_of_a_script_that_imports_nothing_of_the_project(project):
    script = project / "gallery" / "other_claim.py"
    inputs = script_inputs(script, project)
    assert inputs["gallery/other_claim.py"] == sha(script)
    # the harness the script runs in counts too: changing it may change any result
    assert set(inputs) - {"gallery/other_claim.py"} >= {"torchclaims/run/_child.py", "torchclaims/run/runner.py"}


def test_script_inputs_survive_an_import_cycle_and_a_syntax_error(project):
    gallery = project / "gallery"
    (gallery / "_deep.py").write_text("import _helper\nconstant = 1\n")
    (gallery / "_broken.py").write_text("def (:\n")
    (gallery / "a_claim.py").write_text(SCRIPT + "import _broken\n")
    inputs = script_inputs(gallery / "a_claim.py", project)
    assert {"gallery/_helper.py", "gallery/_deep.py", "gallery/_broken.py"} <= set(inputs)


def test_a_scripts_own_imports_leave_out_the_harness_and_keep_its_helpers(project):
    """The harness imports torch_xla (its descriptor gets the XLA device) for every script: only a
    script, or a helper it imports, that imports a package uses it (the version strips name only such packages)."""
    gallery = project / "gallery"
    (gallery / "_deep.py").write_text("import transformers\nconstant = 1\n")
    scanner = InputScanner(project)
    assert "torch_xla" in scanner.uses_of(gallery / "other_claim.py")  # through the harness
    assert scanner.uses_of(gallery / "other_claim.py", harness=False) == {"torch"}
    assert "transformers" in scanner.uses_of(gallery / "a_claim.py", harness=False)  # through _helper, then _deep


# -- staleness ---------------------------------------------------------------------------


@pytest.fixture
def current(project):
    """(inputs, environment, key, previous record) for an up-to-date claim."""
    inputs = script_inputs(project / "gallery" / "a_claim.py", project)
    environment = make_environment()
    key = cache_key(inputs, environment)
    previous = make_record("a-claim", Verdict.HOLDS, inputs=inputs, cache_key=key, environment=environment)
    return inputs, environment, key, previous


def test_no_earlier_record_is_stale():
    state = staleness(None, {"gallery/a.py": "1"}, make_environment(), "key")
    assert state.stale
    assert state.reasons == ("no earlier result",)


@pytest.mark.parametrize("verdict", [Verdict.HOLDS, Verdict.REFUTED, Verdict.UNVERIFIED])
def test_unchanged_record_is_not_stale(current, verdict):
    inputs, environment, key, previous = current
    previous = previous.model_copy(update={"verdict": verdict})
    state = staleness(previous, inputs, environment, key)
    assert not state.stale
    assert str(state) == "up to date"


def test_cache_key_is_stable_and_depends_on_inputs_and_environment(current):
    inputs, environment, key, _ = current
    assert cache_key(dict(reversed(list(inputs.items()))), make_environment()) == key
    assert cache_key({**inputs, "gallery/a_claim.py": "0"}, environment) != key
    assert cache_key(inputs, make_environment(torch="2.14.1")) != key


def test_changed_script_is_named(project, current):
    _, environment, _, previous = current
    (project / "gallery" / "a_claim.py").write_text(SCRIPT + "# edited\n")
    inputs = script_inputs(project / "gallery" / "a_claim.py", project)
    state = staleness(previous, inputs, environment, cache_key(inputs, environment))
    assert state.stale
    assert state.reasons == ("changed: gallery/a_claim.py",)


def test_changed_helper_is_named(project, current):
    _, environment, _, previous = current
    (project / "gallery" / "_deep.py").write_text("constant = 2\n")
    inputs = script_inputs(project / "gallery" / "a_claim.py", project)
    state = staleness(previous, inputs, environment, cache_key(inputs, environment))
    assert state.reasons == ("changed: gallery/_deep.py",)


def test_newly_imported_helper_is_named(project, current):
    _, environment, _, previous = current
    (project / "gallery" / "_extra.py").write_text("x = 1\n")
    (project / "gallery" / "a_claim.py").write_text(SCRIPT + "import _extra\n")
    inputs = script_inputs(project / "gallery" / "a_claim.py", project)
    state = staleness(previous, inputs, environment, cache_key(inputs, environment))
    assert state.reasons == ("changed: gallery/_extra.py, gallery/a_claim.py",)


def test_changed_environment_names_the_versions(current):
    inputs, _, _, previous = current
    upgraded = make_environment(torch="2.14.1")
    state = staleness(previous, inputs, upgraded, cache_key(inputs, upgraded))
    assert state.stale
    (reason,) = state.reasons
    assert reason.startswith("environment changed: ")
    assert "torch 2.13.0 -> 2.14.1" in reason


def test_several_reasons_are_all_given(project, current):
    _, _, _, previous = current
    (project / "gallery" / "_helper.py").write_text("def make():\n    return 2\n")
    inputs = script_inputs(project / "gallery" / "a_claim.py", project)
    upgraded = make_environment(packages={"torch": "2.13.0", "numpy": "2.5.0"})
    state = staleness(previous, inputs, upgraded, cache_key(inputs, upgraded))
    text = str(state)
    assert "gallery/_helper.py" in text and "gallery/_deep.py" in text  # the helper no longer imports _deep
    assert "packages.numpy 2.4.6 -> 2.5.0" in text


def test_earlier_error_re_runs_even_when_nothing_changed(current):
    inputs, environment, key, previous = current
    errored = previous.model_copy(update={"verdict": Verdict.ERROR, "reason": "killed after 300 s"})
    state = staleness(errored, inputs, environment, key)
    assert state.stale
    assert state.reasons == ("the earlier run was an error",)


def test_record_without_inputs_re_runs_with_a_reason(current):
    inputs, environment, key, previous = current
    legacy = previous.model_copy(update={"cache_key": "", "inputs": {}})
    state = staleness(legacy, inputs, environment, key)
    assert state.stale
    assert "changed: " in str(state) and "gallery/a_claim.py" in str(state)


def test_key_change_without_a_visible_cause_still_re_runs(current):
    inputs, environment, _, previous = current
    state = staleness(previous, inputs, environment, "a-different-key")
    assert state.reasons == ("cache key changed",)
