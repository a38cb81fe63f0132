"""Results files, the results store and what changed between runs."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from factories import STARTED, make_environment, make_record, make_results, write_results_file
from torchclaims.errors import InvalidFileError
from torchclaims.evidence.records import Verdict, record_json, write_record
from torchclaims.evidence.results import build_results, default_name, read_results, write_results
from torchclaims.evidence.store import EARLIER_BUILD, THIS_BUILD, Entry, Store, load_store
from torchclaims.history.changes import describe, only_in, verdict_changes, version_differences

CPU_2_13 = "cpu · torch 2.13.0"
CPU_2_14 = "cpu · torch 2.14.1"


# -- results files ---------------------------------------------------------------------


def test_results_file_round_trip(tmp_path):
    env = make_environment()
    records = [make_record("b-claim", "refuted"), make_record("a-claim", "holds")]
    results = build_results(records, env, label="ci runner")
    path = tmp_path / default_name(results)
    write_results(path, results)
    again = read_results(path)
    assert again == results
    assert [r.claim_id for r in again.records] == ["a-claim", "b-claim"]  # sorted by id
    assert again.backend == "cpu" and again.label == "ci runner"


def test_default_name_names_backend_torch_and_time():
    results = make_results([make_record("a")], make_environment(torch="2.14.1+cu128"))
    assert default_name(results) == "cpu-torch2.14.1-20260301T120000.json"


def invalid(path):
    with pytest.raises(InvalidFileError) as info:
        read_results(path)
    problems = info.value.problems
    assert problems and all(p.path == path for p in problems)
    assert str(path) in str(info.value)
    return problems


def valid_data():
    results = make_results([make_record("a-claim"), make_record("b-claim", "unverified")])
    return json.loads(json.dumps(results.model_dump(mode="json")))


def dump(tmp_path, data, name="results.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_read_results_rejects_malformed_json(tmp_path):
    assert "not valid JSON" in invalid(dump(tmp_path, '{"format": "torchclaims-results", '))[0].message


def test_read_results_on_a_missing_file(tmp_path):
    assert "cannot be read" in invalid(tmp_path / "absent.json")[0].message


@pytest.mark.parametrize(
    "data",
    [
        json.loads(record_json(make_record("a-claim"))),  # a single record, not a results file
        {"format": "something-else", "schema_version": 1},
        [1, 2, 3],
        "just a string",
    ],
    ids=["record", "other-format", "list", "string"],
)
def test_read_results_rejects_json_that_is_not_a_results_file(tmp_path, data):
    path = dump(tmp_path, json.dumps(data))
    (problem,) = invalid(path)
    assert problem.field == "format"
    assert "not a torchclaims results file" in problem.message


@pytest.mark.parametrize("version", [3, 0, None, "1"])
def test_read_results_rejects_another_schema_version(tmp_path, version):
    data = valid_data()
    data["schema_version"] = version
    (problem,) = invalid(dump(tmp_path, data))
    assert problem.field == "schema_version"
    assert repr(version) in problem.message


def test_read_results_rejects_records_from_another_backend(tmp_path):
    data = valid_data()
    data["records"][1]["environment"]["backend"] = "cuda"
    problems = invalid(dump(tmp_path, data))
    assert any("'cuda'" in p.message and "'cpu'" in p.message for p in problems)


def test_read_results_rejects_a_duplicated_claim(tmp_path):
    data = valid_data()
    data["records"][1]["claim_id"] = data["records"][0]["claim_id"]
    problems = invalid(dump(tmp_path, data))
    assert any("appears twice" in p.message for p in problems)


def test_read_results_names_a_record_with_a_bad_verdict(tmp_path):
    data = valid_data()
    data["records"][1]["verdict"] = "passed"
    problems = invalid(dump(tmp_path, data))
    assert [p.field for p in problems] == ["records.1.verdict"]


def test_read_results_names_a_missing_environment_field(tmp_path):
    data = valid_data()
    del data["environment"]["torch"]
    assert "environment.torch" in {p.field for p in invalid(dump(tmp_path, data))}


def test_read_results_names_an_unknown_top_level_key(tmp_path):
    data = valid_data()
    data["verdicts"] = {}
    assert "verdicts" in {p.field for p in invalid(dump(tmp_path, data))}


# -- the store -------------------------------------------------------------------------


def test_load_store_merges_build_records_and_results_files(tmp_path):
    build_env = make_environment()
    build = {"a-claim": make_record("a-claim", environment=build_env)}
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    cuda = make_environment(
        backend="cuda",
        device="cuda",
        device_name="H200",
        packages={"torch": "2.13.0", "triton": "3.5"},
        accelerator_runtime={"cuda": "12.8"},
    )
    write_results_file(
        results_dir / "cuda.json",
        [make_record("a-claim", "refuted", environment=cuda), make_record("b-claim", environment=cuda)],
        label="H200 box",
    )

    store = load_store(build, build_env, results_dir)

    assert store.problems == []
    assert sorted(store.entries) == ["a-claim", "b-claim"]
    origins = {(e.origin, e.backend) for e in store.entries["a-claim"]}
    assert origins == {(THIS_BUILD, "cpu"), ("cuda.json", "cuda")}
    cuda_entry = next(e for e in store.entries["a-claim"] if e.backend == "cuda")
    assert cuda_entry.label == "H200 box"
    assert cuda_entry.record.verdict is Verdict.REFUTED


def test_load_store_skips_a_broken_file_and_keeps_the_others(tmp_path):
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    write_results_file(results_dir / "a-good.json", [make_record("a-claim")])
    broken = dump(results_dir, '{"format": ', name="b-broken.json")
    foreign = dump(results_dir, {"hello": "world"}, name="c-foreign.json")
    write_results_file(results_dir / "d-good.json", [make_record("b-claim", environment={"torch": "2.14.1"})])

    store = load_store({}, None, results_dir)

    assert sorted(store.entries) == ["a-claim", "b-claim"]
    assert {p.path for p in store.problems} == {broken, foreign}


def test_load_store_without_results_dir(tmp_path):
    store = load_store({"a": make_record("a")}, None, tmp_path / "absent")
    assert list(store.entries) == ["a"] and store.problems == []


def test_load_store_reads_history_and_reports_broken_history(tmp_path):
    history = tmp_path / "history" / "cpu"
    old = make_record("a-claim", "refuted", started_at=STARTED - timedelta(days=3))
    write_record(history / "a-claim-old.json", old)
    (history / "broken.json").write_text("{")
    store = load_store({"a-claim": make_record("a-claim")}, None, None, history_dir=tmp_path / "history")
    assert [(e.origin, e.record.verdict) for e in store.history("a-claim")] == [
        (THIS_BUILD, Verdict.HOLDS),
        (EARLIER_BUILD, Verdict.REFUTED),
    ]
    assert [p.path.name for p in store.problems] == ["broken.json"]


def test_identical_records_are_kept_once(tmp_path):
    record = make_record("a-claim")
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    write_results_file(results_dir / "one.json", [record])
    write_results_file(results_dir / "two.json", [record], label="copy")
    store = load_store({"a-claim": record}, record.environment, results_dir)
    assert [e.origin for e in store.entries["a-claim"]] == [THIS_BUILD]


def test_records_differing_in_time_are_all_kept():
    store = Store()
    store.add(Entry(make_record("a"), "one.json"))
    store.add(Entry(make_record("a", started_at=STARTED + timedelta(hours=1)), "two.json"))
    assert len(store.entries["a"]) == 2


def test_history_is_newest_first():
    store = Store()
    for days, origin in [(2, "middle.json"), (0, "newest.json"), (5, "oldest.json")]:
        store.add(Entry(make_record("a", started_at=STARTED - timedelta(days=days)), origin))
    assert [e.origin for e in store.history("a")] == ["newest.json", "middle.json", "oldest.json"]
    assert store.history("unknown") == []


def test_latest_by_column_keeps_the_newest_record_per_backend_and_version():
    store = Store()
    store.add(Entry(make_record("a", "refuted", started_at=STARTED - timedelta(days=9)), "old-2.13.json"))
    store.add(Entry(make_record("a", "holds"), "new-2.13.json"))
    store.add(
        Entry(
            make_record("a", "error", environment={"torch": "2.14.1"}, started_at=STARTED - timedelta(days=20)),
            "2.14.json",
        )
    )
    latest = store.latest_by_column("a")
    assert set(latest) == {CPU_2_13, CPU_2_14}
    assert latest[CPU_2_13].origin == "new-2.13.json"
    assert latest[CPU_2_14].record.verdict is Verdict.ERROR


def test_column_of_a_plugin_backend_uses_its_primary_package():
    env = make_environment(backend="xla", device="xla:0", packages={"torch": "2.13.0", "torch_xla": "2.13.0+git1"})
    # the torch beneath it too: torch_xla has no build of its own, and a slice is one pair of wheels
    assert Entry(make_record("a", environment=env), "x.json").column == "xla · torch_xla 2.13.0+git1 on torch 2.13.0"


def test_columns_put_this_build_first():
    store = Store(build_environment=make_environment(torch="2.14.1"))
    store.add(Entry(make_record("a"), "old.json"))
    store.add(
        Entry(make_record("a", environment={"torch": "2.14.1"}, started_at=STARTED + timedelta(days=1)), THIS_BUILD)
    )
    cuda = make_environment(backend="cuda", device="cuda")
    store.add(Entry(make_record("b", environment=cuda), "cuda.json"))
    assert store.columns() == [CPU_2_14, CPU_2_13, "cuda · torch 2.13.0"]


def test_digest_changes_when_a_record_changes():
    store = Store()
    store.add(Entry(make_record("a"), "x.json"))
    before = store.digest(["a"])
    assert store.digest(["a"]) == before
    store.add(Entry(make_record("a", "refuted", started_at=STARTED + timedelta(days=1)), "y.json"))
    assert store.digest(["a"]) != before


# -- changes ---------------------------------------------------------------------------


def runs(**verdicts):
    return {claim_id.replace("_", "-"): make_record(claim_id.replace("_", "-"), v) for claim_id, v in verdicts.items()}


def test_verdict_changes_lists_moved_claims_in_id_order():
    old = runs(c_claim="holds", a_claim="holds", b_claim="refuted", same="unverified", gone="error")
    new = runs(c_claim="refuted", a_claim="unverified", b_claim="holds", same="unverified", added="holds")
    changes = verdict_changes(old, new)
    assert [(c.claim_id, c.old.verdict.value, c.new.verdict.value) for c in changes] == [
        ("a-claim", "holds", "unverified"),
        ("b-claim", "refuted", "holds"),
        ("c-claim", "holds", "refuted"),
    ]


def test_claims_in_only_one_run_are_listed_apart_not_as_changes():
    old, new = runs(a="holds", gone="holds"), runs(a="holds", added="refuted")
    assert verdict_changes(old, new) == []
    assert only_in(old, new) == ["gone"] and only_in(new, old) == ["added"]


def test_no_changes_between_identical_runs():
    assert verdict_changes(runs(a="holds"), runs(a="holds")) == []


@pytest.mark.parametrize(
    "old, new, regression",
    [
        ("holds", "refuted", True),
        ("holds", "error", True),
        ("holds", "unverified", True),
        ("refuted", "holds", False),
        ("error", "refuted", False),
        ("unverified", "error", False),
    ],
)
def test_change_regression(old, new, regression):
    (change,) = verdict_changes(runs(a=old), runs(a=new))
    assert change.regression is regression


def test_version_differences_lists_torch_upgrade():
    old, new = make_environment(torch="2.13.0"), make_environment(torch="2.14.1")
    assert version_differences(old, new) == {"torch": ("2.13.0", "2.14.1")}
    assert describe(old, new) == "torch 2.13.0 -> 2.14.1"


def test_version_differences_include_packages_and_runtimes_but_not_host_details():
    old = make_environment(accelerator_runtime={"cuda": "12.8"}, os="Linux 6.8", machine="x86_64")
    new = make_environment(
        packages={"torch": "2.13.0", "numpy": "2.5.0"},
        accelerator_runtime={"cuda": "13.0"},
        os="Linux 6.9",
        env_vars={"OMP_NUM_THREADS": "2"},
    )
    moved = version_differences(old, new)
    assert moved["numpy"] == ("2.4.6", "2.5.0")
    assert moved["accelerator_runtime.cuda"] == ("12.8", "13.0")
    assert not any(key.startswith(("os", "env_vars")) for key in moved)


def test_describe_with_no_version_difference():
    assert describe(make_environment(), make_environment(os="Linux 7")) == "no package versions differ"


def test_a_new_run_supersedes_files_of_the_same_environment_only(tmp_path):
    from torchclaims.evidence.results import superseded_by

    same = write_results_file(tmp_path / "old-same.json", [make_record("a-claim")])
    other_env = make_environment(torch="2.14.1")
    other = write_results_file(
        tmp_path / "old-other.json", [make_record("a-claim", environment=other_env)], environment=other_env
    )
    (tmp_path / "broken.json").write_text("{")
    new = write_results_file(tmp_path / "new.json", [make_record("a-claim", "refuted")])
    assert [path for path, _ in superseded_by(read_results(new), tmp_path, keep=new)] == [same]
    assert other.exists()


def test_records_of_one_file_may_differ_only_in_the_kernels_build(tmp_path):
    """Two machines of one kind ('-fc-v669', '-fc-v1045') make one configuration; another kernel release does not."""
    from torchclaims.evidence.admission import Admission

    env = make_environment(os="Linux 6.18.44-fc-v669")
    for os_name, admitted in (("Linux 6.18.44-fc-v1045", True), ("Linux 6.19.1-fc-v1045", False)):
        records = [make_record("a", environment=env), make_record("b", environment=make_environment(os=os_name))]
        path = write_results_file(tmp_path / "r.json", records, env)
        problems = Admission().check(path, read_results(path)).problems
        assert (problems == []) is admitted, problems
        assert admitted or "differs from the file's environment (os)" in str(problems[0])
