"""The judged store remembered between builds: kept under a digest of all it is judged from."""

from __future__ import annotations

import os
import pickle
import subprocess
from datetime import timedelta

import pytest

from factories import make_environment, make_record, write_claim, write_results_file, write_script
from torchclaims import limits
from torchclaims.caches import STORE_MEMO_FILE
from torchclaims.caches import store_memo as store_memo_path
from torchclaims.claims import load_claims
from torchclaims.evidence import memo as content_memo
from torchclaims.evidence import store_memo
from torchclaims.evidence.records import now, write_record
from torchclaims.evidence.store import Store, load_store
from torchclaims.evidence.store_memo import remembered_store, store_digest


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    write_claim(root / "claims", "a-claim")
    write_script(root, "a-claim")
    write_results_file(root / "results" / "cpu.json", [make_record("a-claim")])
    write_record(root / "history" / "cpu" / "a-claim.json", make_record("a-claim", environment={"torch": "2.12.0"}))
    return root


def digest(root, **changed):
    inputs = dict(
        claims=load_claims(root / "claims").claims,
        build_records={"a-claim": make_record("a-claim", duration_s=2.0)},
        build_environment=make_environment(),
    )
    inputs.update(changed)
    return store_digest(root, results_dir=root / "results", history_dir=root / "history", **inputs)


def loader(root, calls):
    def load():
        calls.append(1)
        return load_store({}, None, root / "results", root / "history")

    return load


def test_a_store_is_loaded_once_and_then_remembered(project, tmp_path):
    memo, calls = store_memo_path(tmp_path / "doctrees"), []
    first = remembered_store(memo, digest(project), loader(project, calls), attested=False)
    again = remembered_store(memo, digest(project), loader(project, calls), attested=False)
    assert calls == [1]
    assert again.digest(["a-claim"]) == first.digest(["a-claim"])
    assert [e.version for e in again.history("a-claim")] == ["torch 2.13.0", "torch 2.12.0"]
    remembered_store(memo, "another digest", loader(project, calls), attested=False)
    assert calls == [1, 1]


def _edit_results(root):
    path = root / "results" / "cpu.json"
    path.write_text(path.read_text().replace('"test runner"', '"another runner"'))


def _link_results(root):
    path = root / "results" / "cpu.json"
    elsewhere = root.parent / "elsewhere.json"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)  # the same bytes, but the file now leads out of the repository


def _edit_code(root, monkeypatch):
    package = root.parent / "package"
    package.mkdir()
    (package / "judging.py").write_text("# other judging code\n")
    monkeypatch.setattr(store_memo, "PACKAGE_DIR", package)  # the modules it lists
    monkeypatch.setattr(content_memo, "PACKAGE_DIR", package)  # where code_digest reads them


CHANGES = {
    "a results file's bytes": lambda root, mp: _edit_results(root),
    "a results file made a link": lambda root, mp: _link_results(root),
    "a figure beside the results": lambda root, mp: (root / "results" / "figure.svg").write_text("<svg/>"),
    "an earlier build's record": lambda root, mp: (root / "history" / "cpu" / "a-claim.json").write_text("{}"),
    "a gallery script": lambda root, mp: (root / "gallery" / "a_claim.py").write_text("print('changed')\n"),
    "the judging code": _edit_code,
    "the limits": lambda root, mp: mp.setattr(limits, "LIMITS", limits.Limits(json_depth=5)),
}


@pytest.mark.parametrize("change", CHANGES)
def test_every_file_and_code_the_store_is_judged_from_is_in_its_digest(project, monkeypatch, change):
    before = digest(project)
    CHANGES[change](project, monkeypatch)
    assert digest(project) != before


def test_the_claims_the_build_records_and_its_environment_are_in_the_digest(project, tmp_path):
    before = digest(project)
    write_claim(tmp_path / "other-claims", "a-claim", statement="Another statement of the claim.")
    assert digest(project, claims=load_claims(tmp_path / "other-claims").claims) != before
    assert digest(project, build_records={"a-claim": make_record("a-claim", duration_s=3.0)}) != before
    assert digest(project, build_environment=make_environment(torch="2.14.1")) != before
    assert digest(project) == before


def test_the_git_commit_histories_are_read_from_is_in_the_digest(project):
    def git(*args):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one")
    before = digest(project)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "two")
    assert digest(project) != before  # same files, but the histories (added by, last changed) may differ


def test_a_store_that_refused_a_future_date_is_loaded_again_next_time(project, tmp_path):
    later = now() + timedelta(days=1)
    write_results_file(project / "results" / "cpu.json", [make_record("a-claim", started_at=later)], created=later)
    memo, calls = tmp_path / STORE, []
    store = remembered_store(memo, digest(project), loader(project, calls), attested=False)
    assert any("lies in the future" in p.message for p in store.problems)
    remembered_store(memo, digest(project), loader(project, calls), attested=False)
    assert calls == [1, 1]  # tomorrow the same file is admitted


def test_a_store_checked_against_attestations_is_loaded_again_next_time(project, tmp_path):
    memo, calls = tmp_path / STORE, []
    for _ in range(2):
        remembered_store(memo, digest(project), loader(project, calls), attested=True)
    assert calls == [1, 1] and not memo.exists()


MEMOS = {
    "not a pickle": lambda key: b"not a pickle",
    "empty": lambda key: b"",
    "no store under the right digest": lambda key: pickle.dumps((key, {"not": "a store"})),
    "no pair": lambda key: pickle.dumps("no pair"),
}


@pytest.mark.parametrize("memo_text", MEMOS)
def test_a_memo_that_cannot_be_read_or_holds_no_store_is_loaded_afresh(project, tmp_path, memo_text):
    memo, calls = tmp_path / STORE, []
    memo.write_bytes(MEMOS[memo_text](digest(project)))
    store = remembered_store(memo, digest(project), loader(project, calls), attested=False)
    assert calls == [1] and isinstance(store, Store) and store.history("a-claim")
    assert pickle.loads(memo.read_bytes())[0] == digest(project)  # replaced by a good one


def test_a_memo_that_cannot_be_written_costs_only_time(project, tmp_path):
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    store = remembered_store(blocked / STORE, digest(project), loader(project, []), attested=False)
    assert store.history("a-claim")
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


STORE = STORE_MEMO_FILE
