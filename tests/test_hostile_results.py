"""Hostile results files: malformed, oversized, forged or misplaced, each is
reported with its file and field, never shown as evidence, never written
outside its folder, and never stops a reader (or costs the other files)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import factories
from factories import STARTED, make_environment, make_kb, make_record, make_results, script_info, write_results_file
from hostile import PAYLOAD, assert_clean_exit, cli, run_claims
from kb import write_claim
from torchclaims import limits
from torchclaims.claims import load_claims
from torchclaims.errors import InvalidFileError
from torchclaims.evidence.admission import Admission
from torchclaims.evidence.provenance import Trust
from torchclaims.evidence.records import CheckResult, ScriptInfo, Verdict, now, read_record
from torchclaims.evidence.results import read_results, write_results
from torchclaims.evidence.store import THIS_BUILD, load_store
from torchclaims.text_safety import quoted, shown

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CUDA = dict(backend="cuda", device="cuda:0", device_name="NVIDIA H100 80GB HBM3", accelerator_runtime={"cuda": "12.8"})


@pytest.fixture
def kb(tmp_path):
    make_kb(tmp_path, "a-claim", "b-claim")
    (tmp_path / "results").mkdir()
    return tmp_path


def admission(root) -> Admission:
    return Admission.for_project(root, load_claims(root / "claims").claims)


def record(root, claim_id="a-claim", verdict="holds", **overrides):
    return make_record(claim_id, verdict, script=script_info(root, claim_id), **overrides)


def rejected(root, results, name="x.json") -> list:
    path = root / "results" / name
    write_results(path, results)
    return admission(root).check(path, read_results(path)).problems


def fields(problems) -> set[str]:
    return {p.field for p in problems}


# -- unreadable files --------------------------------------------------------------


@FAST
@given(data=st.binary(max_size=4000))
def test_random_bytes_are_an_invalid_file(tmp_path, data):
    path = tmp_path / "random.json"
    path.write_bytes(data)
    with pytest.raises(InvalidFileError) as raised:
        read_results(path)
    assert all(p.path == path for p in raised.value.problems)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)
# Values a field's type nearly accepts: dates with and without a time zone, valid verdicts, numbers as text.
NEAR_MISSES = (
    st.datetimes().map(datetime.isoformat)
    | st.datetimes(timezones=st.just(UTC)).map(datetime.isoformat)
    | st.sampled_from(["holds", "refuted", "unverified", "error", "cpu", "1.5", "", "2026-03-01"])
)
VALUES = JSON | NEAR_MISSES


def assert_shown_or_reported(store, path, fields: tuple[str, ...], claim_id: str | None = "a-claim") -> None:
    """The file loads without a problem and its record is shown, or a problem names the
    file and a field within one of ``fields`` and the record is left out: never lost
    without a word. ``claim_id`` None: the fuzzed value replaced the records themselves."""
    problems = [str(p) for p in store.problems]
    assert all(p.path == path for p in store.problems), problems
    if not problems:
        assert claim_id is None or claim_id in store.entries, (
            "the file loaded without a problem, but its record is not shown"
        )
        return
    assert claim_id not in store.entries, f"a record shown despite a problem with its file: {problems}"
    assert any(p.field == f or p.field.startswith(f"{f}.") for p in store.problems for f in fields), (
        f"the record is left out, but no problem names {' or '.join(fields)}: {problems}"
    )


@FAST
@given(
    key=st.sampled_from(["created", "label", "provenance", "environment", "records", "format", "schema_version"]),
    value=VALUES,
)
def test_any_value_in_any_top_level_field_is_reported_or_accepted(tmp_path, key, value):
    data = make_results([make_record("a-claim")]).model_dump(mode="json")
    data[key] = value
    path = tmp_path / "fuzzed.json"
    path.write_text(json.dumps(data))
    # A file-wide value can also make the record disagree with it (started after the file was created).
    assert_shown_or_reported(
        load_store({}, None, tmp_path), path, (key, "records.0"), None if key == "records" else "a-claim"
    )


@FAST
@given(
    field=st.sampled_from(
        ["claim_id", "verdict", "checks", "started_at", "script", "environment", "figures", "conditions"]
    ),
    value=VALUES,
)
def test_any_value_in_any_record_field_is_reported_or_accepted(tmp_path, field, value):
    data = make_results([make_record("a-claim")]).model_dump(mode="json")
    data["records"][0][field] = value
    path = tmp_path / "fuzzed.json"
    path.write_text(json.dumps(data))
    # Changed checks can also make the stated verdict disagree with them (it is judged again from the checks).
    assert_shown_or_reported(
        load_store({}, None, tmp_path),
        path,
        (f"records.0.{field}", "records.0.verdict"),
        claim_id=value if field == "claim_id" and isinstance(value, str) else "a-claim",
    )


@pytest.mark.parametrize("field", ["created", "records.0.started_at"])
def test_a_time_without_a_time_zone_is_reported_not_compared(tmp_path, field):
    """The dates are checked against the clock: a naive one would raise TypeError there."""
    data = make_results([make_record("a-claim")]).model_dump(mode="json")
    where = data["records"][0] if field.startswith("records") else data
    where[field.rsplit(".", 1)[-1]] = "2026-03-01T12:00:00"
    path = tmp_path / "naive.json"
    path.write_text(json.dumps(data))
    store = load_store({}, None, tmp_path)
    assert "a-claim" not in store.entries
    assert [(p.path, p.field) for p in store.problems] == [(path, field)]
    assert "timezone" in store.problems[0].message


@pytest.mark.parametrize("depth", [40, 5000, 200_000])
def test_deep_nesting_is_refused_before_parsing(tmp_path, depth):
    path = tmp_path / "deep.json"
    path.write_text('{"format": "torchclaims-results", "x": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(InvalidFileError) as raised:
        read_results(path)
    assert f"deeper than {limits.LIMITS.json_depth} levels" in raised.value.problems[0].message


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(limits.LIMITS.results_file_bytes + 1)  # sparse: costs no disk
    with pytest.raises(InvalidFileError) as raised:
        read_results(path)
    assert f"the limit is {limits.LIMITS.results_file_bytes:,}" in raised.value.problems[0].message


def test_oversized_text_is_cut_with_a_mark_and_counts_are_bounded(tmp_path):
    long = "x" * (limits.RECORD_TEXT_CHARS * 3)
    results = make_results([make_record("a-claim", "unverified", reason=long, conditions={"model": long})])
    write_results(tmp_path / "long.json", results)
    loaded = read_results(tmp_path / "long.json").records[0]
    assert len(loaded.reason) == limits.RECORD_TEXT_CHARS and "more characters cut" in loaded.reason
    assert len(loaded.conditions["model"]) == limits.RECORD_TEXT_CHARS
    data = results.model_dump(mode="json")
    data["records"][0]["checks"] = data["records"][0]["checks"] * (limits.MAX_CHECKS + 1)
    (tmp_path / "many.json").write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as raised:
        read_results(tmp_path / "many.json")
    assert raised.value.problems[0].field == "records.0.checks"


@FAST
@given(text=st.text(min_size=1, max_size=300) | st.just(PAYLOAD))
def test_html_and_any_text_in_every_text_field_loads_as_plain_data(tmp_path, text):
    environment = make_environment(device_name=text, os=text, env_vars={"TORCH_X": text})
    check = CheckResult(name=text, outcome=Verdict.HOLDS, detail=text)
    results = make_results(
        [make_record("a-claim", checks=[check], conditions={text[:50]: text}, log_tail=text, environment=environment)],
        environment,
        label=text,
    )
    write_results(tmp_path / "text.json", results)
    store = load_store({}, None, tmp_path)
    assert store.problems == []
    (entry,) = store.entries["a-claim"]
    name = entry.record.checks[0].name  # as text_safety shows it: one character for one
    assert name == shown(text)[: limits.RECORD_NAME_CHARS] or "cut" in name


# -- forged and inconsistent records -------------------------------------------------


@pytest.mark.parametrize(
    "verdict, checks, says",
    [
        ("holds", [], "checks (none) give error"),
        ("holds", [Verdict.HOLDS, Verdict.REFUTED], "give refuted"),
        ("holds", [Verdict.UNVERIFIED], "give unverified"),
        ("refuted", [Verdict.HOLDS], "give holds"),
        ("unverified", [], "give error"),
    ],
)
def test_a_verdict_that_does_not_follow_from_its_checks_is_rejected(kb, verdict, checks, says):
    forged = record(kb, verdict=verdict, checks=[CheckResult(name=f"c{i}", outcome=o) for i, o in enumerate(checks)])
    problems = rejected(kb, make_results([forged, record(kb, "b-claim")]))
    assert [p.field for p in problems] == ["records.0.verdict"]
    assert says in problems[0].message and "a-claim" in problems[0].message


@pytest.mark.parametrize(
    "environment, field",
    [
        (dict(CUDA, accelerator_runtime={}), "environment.accelerator_runtime"),  # a CPU-only torch
        (dict(CUDA, device="cpu"), "environment.device"),
        (dict(CUDA, device_name="cpu"), "environment.device_name"),
        (dict(CUDA, accelerator_runtime={"hip": "6.4"}), "environment.accelerator_runtime"),
        (
            dict(backend="rocm", device="cuda:0", device_name="AMD MI300X", accelerator_runtime={"cuda": "12.8"}),
            "environment.accelerator_runtime",
        ),
        (dict(backend="xla", device="xla:0", device_name="XLA CPU"), "environment.packages"),
        (dict(backend="cuda", device="(unavailable)", device_name="(unavailable)"), "environment.device"),
        (dict(backend="no-such-backend"), "environment.backend"),
        (dict(packages={"torch": "2.1.0"}), "environment.packages.torch"),
    ],
)
def test_an_environment_that_does_not_fit_its_backend_rejects_the_file(kb, environment, field):
    env = make_environment(**environment)
    problems = rejected(kb, make_results([record(kb, environment=env)], env))
    assert field in fields(problems), problems


@pytest.mark.parametrize("torch", ["2.13.0", "2.13.0+cu128"])  # the distribution's version has no +local tag
def test_a_consistent_cuda_file_passes(kb, torch):
    env = make_environment(**CUDA, torch=torch, packages={"torch": "2.13.0"})
    assert rejected(kb, make_results([record(kb, environment=env)], env)) == []


def test_future_dates_are_rejected(kb):
    future = now() + timedelta(days=3)
    assert "created" in fields(rejected(kb, make_results([record(kb, started_at=future)], created=future)))
    assert "records.0.started_at" in fields(
        rejected(kb, make_results([record(kb, started_at=future)], created=STARTED))
    )


def test_unknown_claims_and_unknown_script_versions_are_rejected(kb):
    other = record(kb, "b-claim").model_copy(
        update={"script": script_info(kb, "b-claim").model_copy(update={"sha256": "b" * 64})}
    )
    problems = rejected(kb, make_results([record(kb, "a-claim"), other, make_record("gone-claim")]))
    assert fields(problems) == {"records.1.script.sha256", "records.2.claim_id"}
    assert "no version of gallery/b_claim.py" in next(
        p.message for p in problems if p.field == "records.1.script.sha256"
    )


def test_a_record_from_another_environment_than_its_file_is_rejected(kb):
    moved = record(kb, environment=make_environment(torch="2.14.1"))
    assert "records.0.environment" in fields(rejected(kb, make_results([moved], make_environment())))


def test_a_results_file_never_outranks_the_builds_own_record(kb):
    env = make_environment()
    build = record(kb, verdict="refuted", started_at=STARTED)
    newer_forgery = record(kb, started_at=STARTED + timedelta(days=30))
    write_results_file(kb / "results" / "same-env.json", [newer_forgery], env, created=STARTED + timedelta(days=30))
    store = load_store({"a-claim": build}, env, kb / "results", admission=admission(kb))
    (shown,) = store.latest_by_column("a-claim").values()
    assert shown.origin == THIS_BUILD and shown.record.verdict is Verdict.REFUTED
    hand = next(e for e in store.history("a-claim") if e.origin == "same-env.json")
    assert hand.source.trust is Trust.BY_HAND and hand.source.mark == "submitted by hand, not reproduced"


def test_a_declared_workflow_run_without_attestation_counts_as_submitted_by_hand(kb):
    from torchclaims.evidence.provenance import Provenance

    declared = Provenance(
        kind="workflow", repository="torchclaims/torchclaims", workflow=".github/workflows/accelerators.yml", run_id="1"
    )
    write_results_file(kb / "results" / "ci.json", [record(kb)], provenance=declared)
    store = load_store({}, None, kb / "results", admission=admission(kb))
    (entry,) = store.entries["a-claim"]
    assert entry.source.trust is Trust.BY_HAND
    assert (
        "declares workflow" in entry.source.describe()
        and "no attestation verified by this build" in entry.source.describe()
    )


# -- merge -------------------------------------------------------------------------


@pytest.mark.parametrize("torch", ["../../../escaped", "2.13.0/../../x", "..", "a\\b"])
def test_merge_never_writes_outside_its_folder(kb, torch):
    env = make_environment(torch=torch, packages={"torch": torch})
    source = write_results_file(kb / "sent.json", [record(kb, environment=env)], env)
    run = cli("merge", str(source), "--into", str(kb / "results"), "--root", str(kb))
    assert_clean_exit(run)
    assert run.returncode == 3 and "[environment.torch]" in run.stderr and "is not a version (PEP 440)" in run.stderr, (
        run.stderr
    )
    assert [p for p in kb.rglob("*.json") if p.name != "sent.json"] == []


@pytest.mark.parametrize("torch", ["2.13.0/../../x", "../../../escaped"])
def test_a_name_made_from_data_never_leaves_its_folder(tmp_path, torch):
    """Behind admission, the file name itself is confined (defence in depth)."""
    from torchclaims.evidence.results import destination

    env = make_environment(torch=torch, packages={"torch": torch})
    path = destination(tmp_path, make_results([make_record("a-claim", environment=env)], env))
    assert path.parent == tmp_path.resolve() and ".." not in path.name


def test_merge_refuses_a_forged_file_whole_and_copies_nothing(kb):
    source = write_results_file(kb / "sent.json", [record(kb), record(kb, "b-claim", verdict="holds", checks=[])])
    run = cli("merge", str(source), "--into", str(kb / "results"), "--root", str(kb))
    assert_clean_exit(run)
    assert run.returncode == 3
    assert "[records.1.verdict]" in run.stderr and "sent.json" in run.stderr
    assert list((kb / "results").iterdir()) == []


def test_merge_with_attestation_needs_gh_and_says_so(kb, monkeypatch):
    source = write_results_file(kb / "sent.json", [record(kb)])
    run = cli(
        "merge",
        str(source),
        "--into",
        str(kb / "results"),
        "--root",
        str(kb),
        "--verify-attestation",
        "o/r",
        env={"PATH": "/nonexistent"},
    )
    assert_clean_exit(run)
    assert run.returncode == 2 and "GitHub CLI (gh)" in run.stderr


@pytest.mark.processes
def test_a_corrupt_earlier_record_is_replaced_not_fatal(tmp_path):
    write_claim(tmp_path, "kb-holds", "holds")
    corrupt = tmp_path / "_build" / "records" / "cpu" / "kb-holds.json"
    corrupt.parent.mkdir(parents=True)
    corrupt.write_bytes(b"\xff\xfe not a record" + b"[" * 100_000)
    outcome = run_claims(tmp_path, timeout=120)
    assert outcome.records["kb-holds"].verdict is Verdict.HOLDS
    assert read_record(corrupt).verdict is Verdict.HOLDS  # a valid record again


# -- identifiers: markup and path characters -----------------------------------------

MARKUP = "2.9 <img src=x onerror=alert(document.domain)>"
TRAVERSAL = "9.9.9/../../../../tmp/x"


@pytest.mark.parametrize("value", [MARKUP, TRAVERSAL, "2.9.0\n# Title", "`{raw} html`"])
@pytest.mark.parametrize(
    "where, field",
    [
        (lambda v: dict(torch=v, packages={"torch": v}), "environment.torch"),
        (lambda v: dict(packages={"torch": "2.13.0", "torch_xla": v}), "environment.packages.torch_xla"),
        (lambda v: dict(packages={"torch": "2.13.0", v: "1.0"}), "environment.packages"),
        (lambda v: dict(python=v), "environment.python"),
        (lambda v: dict(torchclaims=v), "environment.torchclaims"),
        (lambda v: dict(accelerator_runtime={"cuda": v}), "environment.accelerator_runtime"),
        (lambda v: dict(device=v), "environment.device"),
    ],
)
def test_markup_or_a_path_in_an_identifier_rejects_the_file(kb, value, where, field):
    env = make_environment(**where(value))
    problems = rejected(kb, make_results([record(kb, environment=env), record(kb, "b-claim", environment=env)], env))
    assert field in fields(problems), problems
    line = next(str(p) for p in problems if p.field == field)
    assert "x.json" in line and "\n" not in line.replace(repr(value), "")  # one line, naming file and field


def test_a_results_file_with_markup_in_a_version_is_refused_by_merge_and_changes_nothing(kb):
    env = make_environment(packages={"torch": "2.13.0", "torch_xla": MARKUP})
    source = write_results_file(kb / "sent.json", [record(kb, environment=env)], env)
    before = {p: p.read_bytes() for p in kb.rglob("*") if p.is_file()}
    run = cli("merge", str(source), "--into", str(kb / "results"), "--root", str(kb))
    assert_clean_exit(run)
    assert run.returncode == 3
    (line,) = [line for line in run.stderr.splitlines() if "[environment.packages.torch_xla]" in line]
    assert "sent.json" in line and "is not a version (PEP 440)" in line
    assert {p: p.read_bytes() for p in kb.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("version", ["2.13.0", "2.13.0+cu128", "2.9.0rc1", "2.10.0.dev20260101+cpu", "1!2.0"])
def test_every_pep_440_version_is_admitted(kb, version):
    env = make_environment(packages={"torch": "2.13.0", "transformers": version})
    assert rejected(kb, make_results([record(kb, environment=env)], env)) == []


def test_a_cuda_file_with_a_cpu_build_of_torch_is_refused(kb):
    env = make_environment(**CUDA, torch="2.13.0+cpu", packages={"torch": "2.13.0"})
    problems = rejected(kb, make_results([record(kb, environment=env)], env))
    assert fields(problems) == {"environment.torch"} and "CPU-only build" in problems[0].message


def test_a_nan_duration_is_refused_with_its_field(tmp_path):
    path = write_results_file(tmp_path / "nan.json", [make_record("a-claim")])
    path.write_text(path.read_text().replace('"duration_s": 1.5', '"duration_s": NaN'))
    with pytest.raises(InvalidFileError) as raised:
        read_results(path)
    assert [p.field for p in raised.value.problems] == ["records.0.duration_s"]


@pytest.mark.parametrize("path", ["README.md", "/etc/hostname", "gallery/b_claim.py", "gallery/../claims/a-claim.toml"])
def test_a_record_whose_script_is_not_its_claims_script_is_rejected(kb, path):
    """The history of another file would vouch for nothing: the digest of README.md matches README.md."""
    (kb / "README.md").write_text("read me")
    target = kb / path if not path.startswith("/") else Path(path)
    digest = hashlib.sha256(target.read_bytes()).hexdigest() if target.is_file() else "0" * 64
    forged = record(kb).model_copy(update={"script": ScriptInfo(path=path, sha256=digest)})
    problems = rejected(kb, make_results([forged]))
    assert fields(problems) == {"records.0.script.path"}
    assert "is not the claim's script, gallery/a_claim.py" in problems[0].message


def test_bidi_controls_in_text_are_neutralised(kb):
    check = CheckResult(name="abc\u202edcba", outcome=Verdict.HOLDS)
    path = kb / "results" / "bidi.json"
    write_results(path, make_results([record(kb, checks=[check], reason="\u2067x\u2069")], label="\u202egnp.exe"))
    results = read_results(path)
    assert results.label == "\ufffdgnp.exe" and results.records[0].checks[0].name == "abc\ufffddcba"
    factories.write_claim(kb / "claims", "c-claim", title="Title \u202eTXET")
    assert load_claims(kb / "claims").claims["c-claim"].title == "Title \ufffdTXET"


def test_titles_and_labels_hide_nothing_and_keep_to_one_line(kb):
    """Zero-width characters, the BOM and line separators, as a hostile run put them in titles and labels."""
    path = kb / "results" / "hidden.json"
    write_results(path, make_results([record(kb)], label="\ufeffmy\u200blaptop\u2028\nproject workflow, attested"))
    assert read_results(path).label == "\ufffdmy\ufffdlaptop project workflow, attested"
    factories.write_claim(kb / "claims", "c-claim", title="\ufeffTitle\u200d with\u2029 a\nbreak")
    assert load_claims(kb / "claims").claims["c-claim"].title == "\ufffdTitle\ufffd with a break"


def test_a_label_is_shown_as_the_submitters_words():
    from torchclaims.evidence.provenance import Source

    source = Source(Trust.BY_HAND, "sent.json", "project workflow, attested · this build")
    assert source.describe().startswith(
        "sent.json: submitted by hand (labelled “project workflow, attested · this build”)"
    )
    assert quoted("say “done”") == '“say "done"”'  # its own marks cannot close the quotation


# -- links out of the repository -----------------------------------------------------


def test_links_out_of_the_repository_are_refused_with_one_line_each(kb, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    secret = outside / "secret.py"
    secret.write_text("SECRET = 1\n")
    (kb / "gallery" / "a_claim.py").unlink()
    (kb / "gallery" / "a_claim.py").symlink_to(secret)
    elsewhere = write_results_file(outside / "linked.json", [record(kb, "b-claim")])
    (kb / "results" / "linked.json").symlink_to(elsewhere)
    factories.write_claim(outside, "c-claim")
    (kb / "claims" / "c-claim.toml").symlink_to(outside / "c-claim.toml")
    (kb / "results" / "inside.json").symlink_to(
        write_results_file(kb / "kept.json", [record(kb, "b-claim", verdict="refuted")])
    )

    claims = load_claims(kb / "claims")
    (claim_problem,) = claims.problems
    assert claim_problem.path.name == "c-claim.toml" and "outside the repository" in claim_problem.message
    from torchclaims.run.execution import unrunnable

    assert "outside the repository" in unrunnable(kb / "gallery" / "a_claim.py", "gallery/a_claim.py")
    store = load_store({}, None, kb / "results", admission=admission(kb))
    (results_problem,) = store.problems
    assert results_problem.path.name == "linked.json" and "outside the repository" in results_problem.message
    assert [e.origin for e in store.history("b-claim")] == ["inside.json"]  # a link within the repository is read
    from torchclaims.evidence.script_history import ScriptHistory

    assert ScriptHistory(kb).versions("gallery/a_claim.py") == set()  # the linked file vouches for no record


def test_a_script_version_counts_only_from_the_history_of_its_own_path(tmp_path):
    import subprocess

    make_kb(tmp_path, "a-claim", "b-claim")
    git = lambda *args: subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@e", "add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "kb")
    old_b = hashlib.sha256((tmp_path / "gallery" / "b_claim.py").read_bytes()).hexdigest()
    (tmp_path / "gallery" / "b_claim.py").write_text("# changed\n")
    from torchclaims.evidence.script_history import ScriptHistory

    history = ScriptHistory(tmp_path)
    assert old_b in history.versions("gallery/b_claim.py") and old_b not in history.versions("gallery/a_claim.py")


# -- nothing a user made is lost ---------------------------------------------------------


def test_merge_says_which_file_it_duplicates_or_shadows(kb):
    first = write_results_file(kb / "first.json", [record(kb), record(kb, "b-claim")], label="box")
    assert cli("merge", str(first), "--into", str(kb / "results"), "--root", str(kb)).returncode == 0
    (kept,) = (kb / "results").glob("*.json")
    later = dict(created=STARTED + timedelta(hours=1))
    same = write_results_file(
        kb / "same.json", [record(kb, started_at=STARTED + timedelta(hours=1))], label="box", **later
    )
    run = cli("merge", str(same), "--into", str(kb / "results"), "--root", str(kb))
    assert run.returncode == 0, run.stderr
    assert f"note: duplicates {kept.name}: the same environment, provenance and label (1 claim in both)" in run.stdout
    other = write_results_file(
        kb / "other.json",
        [record(kb, "b-claim", started_at=STARTED + timedelta(hours=2))],
        label="laptop",
        created=STARTED + timedelta(hours=2),
    )
    run = cli("merge", str(other), "--into", str(kb / "results"), "--root", str(kb))
    assert (
        f"note: shadows {kept.name} in the column 'cpu · torch 2.13.0': "
        "for the 1 claim in both, the site shows the newer record"
    ) in run.stdout
    assert len(list((kb / "results").glob("*.json"))) == 3  # merge never replaces a file


def test_upgrade_pages_take_only_validated_tokens():
    from torchclaims.sphinxext.directives.upgrade_pages import myst_token

    for token in ("torch", "2.13.0", "2.13.0+cu128", "torch_xla", "2.10.0rc1"):
        assert myst_token(token) == token
    for bad in (MARKUP, TRAVERSAL, "..", "a/b", "2.9.0\n# x", "`x`", "{upgrade}", "", "1!2.0"):
        with pytest.raises(ValueError, match="not a name or version"):
            myst_token(bad)


@pytest.mark.processes
def test_verify_output_reruns_a_cached_record_that_lost_its_figures_and_says_so(tmp_path):
    from kb import write_claim as write_kb_claim

    write_kb_claim(tmp_path, "kb-figure", "figure")
    first = cli("verify", "--root", str(tmp_path), "--output", str(tmp_path / "one"))
    assert first.returncode == 0, first.stderr
    cached = tmp_path / "_build" / "records" / "cpu" / "kb-figure.json"
    assert read_record(cached).figures  # a plain run keeps them
    # What a site build leaves: the same record, its figures on the gallery page only.
    cached.write_text(
        cached.read_text().replace('"kb-figure/figure-1.png"', "").replace('"figures": [\n    \n  ]', '"figures": []')
    )
    assert read_record(cached).figures == []
    second = cli("verify", "--root", str(tmp_path), "--output", str(tmp_path / "two"))
    assert second.returncode == 0, second.stderr
    assert "running kb-figure (its cached record has no figures although the script draws" in second.stdout
    (path,) = (tmp_path / "two").glob("*.json")
    (shown,) = read_results(path).records
    assert shown.figures and all((path.parent / figure).is_file() for figure in shown.figures)
    third = cli("verify", "--root", str(tmp_path), "--output", str(tmp_path / "three"))
    assert "running kb-figure" not in third.stdout  # a record with its figures is reused


def test_with_backend_auto_a_record_without_its_figures_is_left_out_and_named(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from kb import write_claim as write_kb_claim
    from torchclaims.claims import load_claims as load
    from torchclaims.run.execution import Settings
    from torchclaims.run.figures_kept import FiguresKept

    write_kb_claim(tmp_path, "kb-figure", "figure")
    write_kb_claim(tmp_path, "kb-holds", "holds")
    claims = load(tmp_path / "claims").executable()
    kept = FiguresKept(Settings(root=tmp_path, backend="auto"))
    assert kept.reasons(claims[0]) == []  # the records' folder is not known yet
    outcome = SimpleNamespace(records={c.id: make_record(c.id) for c in claims}, reran={})
    assert kept.refused(claims, outcome) == ["kb-figure"]  # kb-holds draws nothing
    outcome.reran = {"kb-figure": "ran"}
    assert kept.refused(claims, outcome) == []


@pytest.mark.parametrize(
    "path, value, field",
    [
        (("records", 0, "claim_id"), MARKUP, "records.0.claim_id"),
        (("records", 0, "claim_id"), "../a-claim", "records.0.claim_id"),
        (("environment", "backend"), "cpu/../x", "environment.backend"),
        (("records", 0, "figures"), ["../../outside.png"], "records.0.figures.0"),
        (("records", 0, "figures"), ["<img src=x onerror=alert(1)>.png"], "records.0.figures.0"),
        (("provenance", "repository"), "o/r<script>", "provenance.repository"),
        (("provenance", "run_id"), "1/../2", "provenance.run_id"),
        (("records", 0, "script", "sha256"), "../" + "a" * 61, "records.0.script.sha256"),
    ],
)
def test_markup_or_a_path_in_a_schema_identifier_is_refused_naming_the_field(tmp_path, path, value, field):
    data = make_results([make_record("a-claim")]).model_dump(mode="json")
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    file = tmp_path / "ids.json"
    file.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as raised:
        read_results(file)
    assert field in {p.field for p in raised.value.problems}, raised.value.problems
    assert all(p.path == file for p in raised.value.problems)


def test_a_figure_linked_out_of_the_results_folder_leaves_its_record_out(kb, tmp_path_factory):
    secret = tmp_path_factory.mktemp("outside") / "secret.png"
    secret.write_bytes(b"\x89PNG secret")
    figure = kb / "results" / "figures" / "x" / "a-claim" / "figure-1.png"
    figure.parent.mkdir(parents=True)
    figure.symlink_to(secret)
    problems = rejected(
        kb, make_results([record(kb, figures=["figures/x/a-claim/figure-1.png"]), record(kb, "b-claim")])
    )
    assert fields(problems) == {"records.0.figures.0"} and "outside the repository" in problems[0].message
