"""Provenance: how a results file was made, the attestation that backs a workflow
run, and how far each source is trusted on the site."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from datetime import timedelta

import pytest

from factories import STARTED, make_kb, make_record, script_info, write_results_file
from hostile import assert_clean_exit, cli
from torchclaims.claims import load_claims
from torchclaims.errors import UsageError
from torchclaims.evidence.admission import Admission
from torchclaims.evidence.attestation import Verifier, verifier_from
from torchclaims.evidence.attestation_answers import build_verifier
from torchclaims.evidence.provenance import Provenance, Trust, from_github_actions
from torchclaims.evidence.results import read_results
from torchclaims.evidence.store import load_store

REPOSITORY = "torchclaims/torchclaims"
COMMIT = "c" * 40
GITHUB = {
    "GITHUB_REPOSITORY": REPOSITORY,
    "GITHUB_WORKFLOW_REF": f"{REPOSITORY}/.github/workflows/accelerators.yml@refs/heads/main",
    "GITHUB_RUN_ID": "4242",
    "GITHUB_RUN_ATTEMPT": "1",
    "GITHUB_SHA": COMMIT,
    "RUNNER_NAME": "gpu-box-1",
}
STARTED_LATER = STARTED + timedelta(days=1)
RUN = Provenance(
    kind="workflow",
    repository=REPOSITORY,
    workflow=".github/workflows/accelerators.yml",
    run_id="4242",
    run_attempt="1",
    commit=COMMIT,
    runner="gpu-box-1",
)


def test_a_workflow_run_is_described_by_the_github_variables():
    assert from_github_actions(GITHUB) == RUN
    assert RUN.run_url == f"https://github.com/{REPOSITORY}/actions/runs/4242/attempts/1"


def test_outside_a_workflow_the_run_cannot_be_stated():
    with pytest.raises(UsageError, match="GITHUB_SHA"):
        from_github_actions({k: v for k, v in GITHUB.items() if k != "GITHUB_SHA"})


@pytest.mark.processes
def test_verify_states_the_run_in_the_results_file(tmp_path):
    make_kb(tmp_path, "a-claim")
    run = cli("verify", "--root", str(tmp_path), "--workflow-run", "--output", str(tmp_path / "out"), env=GITHUB)
    assert run.returncode == 0, run.stderr
    (path,) = (tmp_path / "out").glob("*.json")
    assert read_results(path).provenance == RUN


def test_a_file_without_provenance_is_read_as_submitted_by_hand(tmp_path):
    path = write_results_file(tmp_path / "old.json", [make_record("a-claim")])
    data = json.loads(path.read_text())
    data["schema_version"] = 1
    del data["provenance"]
    path.write_text(json.dumps(data))
    (entry,) = load_store({}, None, tmp_path).entries["a-claim"]
    assert entry.source.trust is Trust.BY_HAND


# -- attestations -------------------------------------------------------------------


def fake_gh(tmp_path, answer: str, code: int = 0):
    """A ``gh`` that answers ``attestation verify`` as GitHub's CLI would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    gh = bin_dir / "gh"
    gh.write_text(f"#!/bin/sh\ncat <<'EOF'\n{answer}\nEOF\nexit {code}\n")
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def verification(digest: str, repository: str = REPOSITORY, run_id: str = "4242") -> str:
    certificate = {
        "sourceRepositoryURI": f"https://github.com/{repository}",
        "sourceRepositoryDigest": COMMIT,
        "runInvocationURI": f"https://github.com/{repository}/actions/runs/{run_id}/attempts/1",
        "buildSignerURI": f"https://github.com/{repository}/.github/workflows/accelerators.yml@refs/heads/main",
        "runnerEnvironment": "github-hosted",
    }
    statement = {"subject": [{"name": "cpu.json", "digest": {"sha256": digest}}]}
    return json.dumps([{"verificationResult": {"statement": statement, "signature": {"certificate": certificate}}}])


@pytest.fixture
def sent(tmp_path):
    make_kb(tmp_path, "a-claim")
    path = write_results_file(
        tmp_path / "sent.json", [make_record("a-claim", script=script_info(tmp_path, "a-claim"))], provenance=RUN
    )
    return tmp_path, path, hashlib.sha256(path.read_bytes()).hexdigest()


def merge(root, path, env):
    return cli(
        "merge",
        str(path),
        "--into",
        str(root / "results"),
        "--root",
        str(root),
        "--verify-attestation",
        REPOSITORY,
        env=env,
    )


def entry_of(root, verifier=None):
    admission = Admission.for_project(root, load_claims(root / "claims").claims)
    store = load_store({}, None, root / "results", admission=admission, verifier=verifier)
    return store, store.entries.get("a-claim", [None])[0]


def use_gh(monkeypatch, env):
    monkeypatch.setenv("PATH", env["PATH"])


def test_a_file_is_attested_only_when_this_process_verified_it(sent, monkeypatch):
    root, path, digest = sent
    run = merge(root, path, fake_gh(root, verification(digest)))
    assert_clean_exit(run)
    assert run.returncode == 0, run.stderr
    assert "attestation verified, run 4242" in run.stdout
    assert not (
        root / "results" / "attestations"
    ).exists()  # merge leaves no note that could stand in for a verification
    store, entry = entry_of(root)
    assert store.problems == [] and entry.source.trust is Trust.BY_HAND  # nothing verified it in this load
    assert "no attestation verified by this build" in entry.source.describe()
    use_gh(monkeypatch, fake_gh(root, verification(digest)))
    store, entry = entry_of(root, Verifier(REPOSITORY))
    assert store.problems == []
    assert entry.source.trust is Trust.ATTESTED and entry.source.mark == "project workflow, attested"
    assert '"sourceRepositoryDigest"' in entry.source.attestation.evidence  # gh's answer, kept as the evidence


def test_a_forged_attestation_note_is_refused_with_one_line(sent, monkeypatch):
    """A hand-written note repeating the file's digest and provenance is never evidence."""
    root, path, digest = sent
    assert merge(root, path, fake_gh(root, verification(digest))).returncode == 0
    (copy,) = (root / "results").glob("*.json")
    note = root / "results" / "attestations" / copy.name
    note.parent.mkdir()
    note.write_text(
        json.dumps(
            {
                "format": "torchclaims-attestation",
                "results_sha256": digest,
                "repository": REPOSITORY,
                "signer_workflow": ".github/workflows/accelerators.yml",
                "commit": COMMIT,
                "run_url": f"https://github.com/{REPOSITORY}/actions/runs/4242/attempts/1",
                "verified_at": "2026-03-01T12:00:00Z",
                "verified_with": "gh attestation verify",
            }
        )
    )
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    store, entry = entry_of(root)
    assert entry.source.trust is Trust.BY_HAND and entry.source.mark == "submitted by hand, not reproduced"
    (problem,) = store.problems
    assert problem.path == note and "cannot attest" in problem.message
    run = cli("show", "--root", str(root), "a-claim")
    assert (
        "GitHub artifact attestation verified" not in run.stdout
        and "no attestation verified by this build" in run.stdout
    )
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_a_file_changed_after_merge_fails_the_builds_verification(sent, monkeypatch):
    root, path, digest = sent
    assert merge(root, path, fake_gh(root, verification(digest))).returncode == 0
    (copy,) = (root / "results").glob("*.json")
    copy.write_text(copy.read_text().replace('"label": "test runner"', '"label": "edited"'))
    use_gh(monkeypatch, fake_gh(root, verification(digest)))  # gh attests the old bytes only
    store, entry = entry_of(root, Verifier(REPOSITORY))
    assert entry.source.trust is Trust.BY_HAND
    assert [p.field for p in store.problems] == ["attestation"] and store.problems[0].path == copy


def test_the_verification_setting_is_checked_once(monkeypatch, tmp_path):
    assert verifier_from("") is None
    with pytest.raises(UsageError, match="OWNER/REPO"):
        verifier_from("not a repository")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match="GitHub CLI"):
        verifier_from(REPOSITORY)


@pytest.mark.parametrize(
    "answer, code, says",
    [
        ("", 1, "gh attestation verify failed"),
        ('unknown command "attestation" for "gh"', 1, "gh attestation verify failed"),  # Debian's gh 2.23
        ("[]", 0, "cannot read"),
        (verification("0" * 64), 0, "cannot read"),  # attests other content
        (verification("{digest}", repository="someone/else"), 0, "attested for someone/else"),
        (verification("{digest}", run_id="1"), 0, "the attestation names torchclaims/torchclaims run 1"),
    ],
)
def test_a_failed_or_mismatched_attestation_keeps_the_file_out(sent, answer, code, says):
    root, path, digest = sent
    run = merge(root, path, fake_gh(root, answer.replace("{digest}", digest), code))
    assert_clean_exit(run)
    assert run.returncode == 3 and says in run.stderr, run.stderr
    assert list(root.glob("results/*.json")) == []


# -- what the repository knows of a committed file --------------------------------------


def git(root, *args):
    import subprocess

    subprocess.run(
        ["git", "-c", "user.name=Ada Maintainer", "-c", "user.email=ada@example.org", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def test_a_committed_file_names_its_commit_author_and_the_command_its_label_gives(tmp_path):
    from torchclaims.evidence.provenance import SWEEP_LABEL_PREFIX
    from torchclaims.history.sweep_plan import LABEL_PREFIX

    assert LABEL_PREFIX == SWEEP_LABEL_PREFIX
    make_kb(tmp_path, "a-claim", "b-claim")
    info = lambda claim_id: script_info(tmp_path, claim_id)  # noqa: E731
    write_results_file(
        tmp_path / "results" / "sweep.json",
        [make_record("a-claim", script=info("a-claim"))],
        label="sweep: torch 2.13.0 on cpu",
    )
    write_results_file(
        tmp_path / "results" / "sent.json", [make_record("b-claim", script=info("b-claim"))], label="my laptop"
    )
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "results")
    write_results_file(
        tmp_path / "results" / "new.json",
        [make_record("b-claim", script=info("b-claim"), started_at=STARTED_LATER)],
        created=STARTED_LATER,
    )
    store = load_store(
        {},
        None,
        tmp_path / "results",
        admission=Admission.for_project(tmp_path, load_claims(tmp_path / "claims").claims),
    )
    (sweep,) = store.entries["a-claim"]
    sent, new = sorted(store.entries["b-claim"], key=lambda e: e.origin)[::-1]
    assert sweep.source.mark == "sweep run, not reproduced"
    assert "made by torchclaims sweep, as its label “sweep: torch 2.13.0 on cpu” says" in sweep.source.describe()
    assert "added in commit" in sweep.source.describe() and "by Ada Maintainer on" in sweep.source.describe()
    assert sent.origin == "sent.json" and sent.source.mark == "submitted by hand, not reproduced"
    assert (
        "submitted by hand (labelled “my laptop”); not reproduced by the project; added in commit"
        in sent.source.describe()
    )
    assert new.origin == "new.json" and "no commit adding it is known in this checkout" in new.source.describe()
    # A later change by someone else is named too, and so is an edit not committed yet.
    sweep_file = tmp_path / "results" / "sweep.json"
    sweep_file.write_text(sweep_file.read_text().replace('"duration_s": 1.5', '"duration_s": 2.5'))
    subprocess.run(
        ["git", "-c", "user.name=Someone Else", "-c", "user.email=s@e", "commit", "-qam", "edit"],
        cwd=tmp_path,
        check=True,
    )
    sweep_file.write_text(sweep_file.read_text().replace('"duration_s": 2.5', '"duration_s": 3.5'))
    store = load_store(
        {},
        None,
        tmp_path / "results",
        admission=Admission.for_project(tmp_path, load_claims(tmp_path / "claims").claims),
    )
    described = store.entries["a-claim"][0].source.describe()
    assert "added in commit" in described and "by Ada Maintainer" in described
    assert (
        "last changed in commit" in described
        and "by Someone Else" in described
        and "changed since, not committed" in described
    )


def test_a_pages_digest_moves_when_only_the_source_of_its_record_moves():
    from torchclaims.evidence.provenance import Commit, FileHistory, Source
    from torchclaims.evidence.store import Entry, Store

    record = make_record("a-claim")
    digests = []
    for committed in (None, FileHistory(Commit("c" * 40, "Ada", "2026-03-01"))):
        store = Store()
        store.add(
            Entry(
                record,
                "x.json",
                "sweep: torch 2.13.0",
                Source(Trust.BY_HAND, "x.json", "sweep: torch 2.13.0", committed=committed),
            )
        )
        digests.append(store.digest(["a-claim"]))
    assert digests[0] != digests[1]


def test_the_evidence_of_a_verification_is_published_beside_the_file(sent, monkeypatch):
    from torchclaims.sphinxext.views.downloads import download_for, write_downloads

    root, path, digest = sent
    assert merge(root, path, fake_gh(root, verification(digest))).returncode == 0
    use_gh(monkeypatch, fake_gh(root, verification(digest)))
    store, entry = entry_of(root, Verifier(REPOSITORY))
    site = root / "site"
    write_downloads(site, store, None, root / "results")
    evidence = json.loads((site / download_for(entry).attestation).read_text())
    assert evidence["results_sha256"] == digest and json.loads(evidence["evidence"])[0]["verificationResult"]
    write_downloads(site, store, None, root / "results")  # a second build keeps it
    assert (site / download_for(entry).attestation).is_file()
    unverified, _ = entry_of(root)
    write_downloads(site, unverified, None, root / "results")  # a build that verified nothing publishes no evidence
    assert not (site / download_for(entry).attestation).exists()


# -- answers verified in one step, judged in a build without a token -----------------------


@pytest.fixture
def answered(sent, tmp_path_factory):
    """A merged file whose attestation `torchclaims attest` verified, its answers outside the project."""
    root, path, digest = sent
    assert merge(root, path, fake_gh(root, verification(digest))).returncode == 0
    answers = tmp_path_factory.mktemp("runner-temp") / "attestations.json"
    run = cli(
        "attest", REPOSITORY, "--output", str(answers), "--root", str(root), env=fake_gh(root, verification(digest))
    )
    assert_clean_exit(run)
    assert run.returncode == 0 and "1 attestation(s) verified" in run.stdout, run.stderr
    return root, answers


def without_gh(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "no-gh"))  # the build step has neither gh nor a token


def test_a_build_attests_from_the_answers_a_verification_step_wrote(answered, monkeypatch, tmp_path):
    root, answers = answered
    without_gh(monkeypatch, tmp_path)
    store, entry = entry_of(root, build_verifier(REPOSITORY, str(answers), root))
    assert store.problems == []
    assert entry.source.trust is Trust.ATTESTED and entry.source.mark == "project workflow, attested"
    assert '"sourceRepositoryDigest"' in entry.source.attestation.evidence  # gh's answer, kept as the evidence
    env = {"TORCHCLAIMS_VERIFY_ATTESTATIONS": REPOSITORY, "TORCHCLAIMS_ATTESTATIONS": str(answers)}
    run = cli("show", "--root", str(root), "a-claim", env={**env, "PATH": str(tmp_path / "no-gh")})
    assert_clean_exit(run)
    assert run.returncode == 0 and "GitHub artifact attestation verified" in run.stdout, run.stderr


def test_answers_about_other_bytes_attest_nothing(answered, monkeypatch, tmp_path):
    root, answers = answered
    (copy,) = (root / "results").glob("*.json")
    copy.write_text(copy.read_text().replace('"label": "test runner"', '"label": "edited"'))
    without_gh(monkeypatch, tmp_path)
    store, entry = entry_of(root, build_verifier(REPOSITORY, str(answers), root))
    assert entry.source.trust is Trust.BY_HAND
    (problem,) = store.problems
    assert problem.path == copy and problem.field == "attestation" and "no verified attestation" in problem.message


def test_answers_for_another_repository_attest_nothing(answered, monkeypatch, tmp_path):
    root, answers = answered
    document = json.loads(answers.read_text())
    document["attestations"][0]["repository"] = "someone/else"
    answers.write_text(json.dumps(document))
    without_gh(monkeypatch, tmp_path)
    store, entry = entry_of(root, build_verifier(REPOSITORY, str(answers), root))
    assert entry.source.trust is Trust.BY_HAND
    assert [p.message for p in store.problems] == ["attested for someone/else, not torchclaims/torchclaims"]


def test_a_malformed_entry_is_reported_and_spoils_no_other(answered, monkeypatch, tmp_path):
    root, answers = answered
    document = json.loads(answers.read_text())
    document["attestations"].insert(0, {**document["attestations"][0], "results_sha256": "forged"})
    document["attestations"].insert(0, "not an entry")
    answers.write_text(json.dumps(document))
    without_gh(monkeypatch, tmp_path)
    store, entry = entry_of(root, build_verifier(REPOSITORY, str(answers), root))
    assert entry.source.trust is Trust.ATTESTED
    assert [(p.path, p.field) for p in store.problems] == [
        (answers, "attestations.0.(record)"),
        (answers, "attestations.1.results_sha256"),
    ]


@pytest.mark.parametrize(
    "content, field",
    [("{not json", ""), (json.dumps({"format": "other", "attestations": []}), "format"), (None, "")],
)
def test_an_unreadable_answers_file_attests_nothing(answered, monkeypatch, tmp_path, content, field):
    root, answers = answered
    if content is None:
        answers.unlink()
    else:
        answers.write_text(content)
    without_gh(monkeypatch, tmp_path)
    store, entry = entry_of(root, build_verifier(REPOSITORY, str(answers), root))
    assert entry.source.trust is Trust.BY_HAND
    (copy,) = (root / "results").glob("*.json")
    assert [(p.path, p.field) for p in store.problems] == [(answers, field), (copy, "attestation")]


def test_answers_inside_the_project_are_ignored(answered, monkeypatch, tmp_path):
    """Like a note under results/: anyone can commit a file that repeats a digest."""
    root, answers = answered
    committed = root / "results" / "attestations.txt"
    committed.write_bytes(answers.read_bytes())
    without_gh(monkeypatch, tmp_path)
    store, entry = entry_of(root, build_verifier(REPOSITORY, str(committed), root))
    assert entry.source.trust is Trust.BY_HAND
    (copy,) = (root / "results").glob("*.json")
    assert [p.path for p in store.problems] == [committed, copy] and "cannot attest" in store.problems[0].message
    run = cli("attest", REPOSITORY, "--output", str(committed), "--root", str(root))
    assert run.returncode == 2 and "inside the project" in run.stderr


def test_answers_need_the_repository_they_attest(tmp_path):
    with pytest.raises(UsageError, match="TORCHCLAIMS_VERIFY_ATTESTATIONS"):
        build_verifier("", str(tmp_path / "attestations.json"), tmp_path)


def test_the_site_build_reads_the_answers_its_settings_name(answered, monkeypatch, tmp_path):
    from types import SimpleNamespace

    from sphinx.errors import ConfigError

    from torchclaims.evidence.attestation_answers import AnswersVerifier
    from torchclaims.sphinxext.build.settings import checked_settings

    root, answers = answered
    without_gh(monkeypatch, tmp_path)
    settings = dict(timeout="60", parallel="1", force="0", execute="0", max_age_days="30")
    config = SimpleNamespace(
        **{f"torchclaims_{k}": v for k, v in settings.items()},
        torchclaims_backend="cpu",
        torchclaims_claims_dir="claims",
        torchclaims_results_dir="results",
        torchclaims_gallery_output="docs/auto_gallery",
        torchclaims_verify_attestations=REPOSITORY,
        torchclaims_attestations=str(answers),
    )
    verifier = checked_settings(config, root).verifier
    assert isinstance(verifier, AnswersVerifier) and verifier.source == answers and len(verifier.answers) == 1
    config.torchclaims_verify_attestations = ""
    with pytest.raises(ConfigError, match="TORCHCLAIMS_ATTESTATIONS needs"):
        checked_settings(config, root)
