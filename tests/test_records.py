"""Result records: verdict combination, writes, validated reads, fingerprints."""

from __future__ import annotations

import json

import pytest

from factories import make_environment, make_record
from torchclaims.errors import InvalidFileError
from torchclaims.evidence.records import (
    CheckResult,
    Measurement,
    Verdict,
    combine,
    read_record,
    record_json,
    verdict_note,
    write_record,
)

H, R, U, E = Verdict.HOLDS, Verdict.REFUTED, Verdict.UNVERIFIED, Verdict.ERROR


# -- combine ---------------------------------------------------------------------------


def test_combine_without_outcomes_is_an_error():
    assert combine([]) is Verdict.ERROR


@pytest.mark.parametrize("n", [1, 3])
def test_combine_all_holds_holds(n):
    assert combine([H] * n) is Verdict.HOLDS


@pytest.mark.parametrize(
    "outcomes, expected",
    [
        ([H, E], E),
        ([E, H, R, U], R),
        ([R, E], R),
        ([R, U, H], R),
        ([U, R], R),
        ([E, U], E),
        ([H, U], U),
        ([U, H, H], U),
        ([R], R),
        ([U], U),
    ],
)
def test_combine_takes_the_outcome_with_the_highest_precedence(outcomes, expected):
    assert combine(outcomes) is expected
    assert combine(list(reversed(outcomes))) is expected


def test_a_broken_check_never_hides_a_refuting_one():
    """refuted + error reads "refuted, 1 check errored": the refutation is evidence."""
    assert combine([H, R, E]) is Verdict.REFUTED
    assert verdict_note([H, R, E]) == "1 check errored"


@pytest.mark.parametrize(
    "outcomes, note",
    [
        ([H, H], ""),
        ([R], ""),
        ([R, E, E, U], "2 checks errored, 1 check unverified"),
        ([E, U, H], "1 check unverified"),
        ([U, H], ""),  # checks that held are not hidden evidence
        ([E, E], ""),
    ],
)
def test_verdict_note_names_the_checks_the_verdict_does_not_show(outcomes, note):
    assert verdict_note(outcomes) == note


def test_a_record_derives_its_note_from_its_checks():
    checks = [CheckResult(name="a", outcome=R), CheckResult(name="b", outcome=E)]
    record = make_record("some-claim", Verdict.REFUTED, checks=checks)
    assert record.note == "1 check errored"
    assert make_record("other-claim", Verdict.ERROR).note == ""  # a crash record has no checks


# -- write_record / read_record --------------------------------------------------------


def full_record():
    return make_record(
        "round-trip",
        Verdict.REFUTED,
        checks=[
            CheckResult(
                name="forward matches",
                outcome=Verdict.REFUTED,
                detail="logits: max abs error 0.1 exceeds atol",
                measurements=[
                    Measurement(name="max abs error", value=0.1, tolerance="<= 1e-05"),
                    Measurement(name="identical", value=False, tolerance="== True"),
                    Measurement(name="count", value=3, unit="ops"),
                    Measurement(name="label", value="nan"),
                    Measurement(name="missing", value=None),
                ],
                duration_s=0.25,
            )
        ],
        conditions={"model": "MLP", "inputs": "batch of 8"},
        cache_key="k" * 64,
        inputs={"gallery/round_trip.py": "b" * 64},
        environment=make_environment(accelerator_runtime={"cuda": "12.8"}, env_vars={"OMP_NUM_THREADS": "4"}),
        log_tail="last lines\n",
    )


def test_record_round_trip(tmp_path):
    record = full_record()
    path = tmp_path / "cpu" / "round-trip.json"
    assert write_record(path, record) is True
    assert read_record(path) == record
    assert write_record(path, record) is False  # unchanged: not rewritten


def test_record_json_is_stable_and_sorted(tmp_path):
    record = full_record()
    text = record_json(record)
    assert text == record_json(read_record_from_text(tmp_path, text))
    assert text.endswith("\n")
    assert list(json.loads(text)) == sorted(json.loads(text))


def read_record_from_text(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    return read_record(path)


def test_record_date_is_the_utc_day(tmp_path):
    from datetime import datetime, timedelta, timezone

    late = datetime(2026, 3, 1, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert make_record("c", started_at=late).date == "2026-03-02"


def write_json(tmp_path, data, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def invalid(path):
    with pytest.raises(InvalidFileError) as info:
        read_record(path)
    assert all(p.path == path for p in info.value.problems)
    assert str(path) in str(info.value)
    return info.value.problems


def test_read_record_rejects_invalid_json(tmp_path):
    problems = invalid(write_json(tmp_path, '{"claim_id": "x",'))
    assert "not valid JSON" in problems[0].message


def test_read_record_on_a_missing_file(tmp_path):
    problems = invalid(tmp_path / "missing.json")
    assert "cannot be read" in problems[0].message


def test_read_record_on_a_binary_file(tmp_path):
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8 text: byte 0xff at offset 0" in invalid(path)[0].message


@pytest.mark.parametrize(
    "field, value, named",
    [
        ("verdict", "maybe", "verdict"),
        ("duration_s", "slow", "duration_s"),
        ("started_at", "yesterday", "started_at"),
        ("checks", "none", "checks"),
        ("conditions", ["model"], "conditions"),
        ("script", {"path": "gallery/x.py"}, "script.sha256"),
        ("environment", {"backend": "cpu"}, "environment.torch"),
        ("surprise", 1, "surprise"),
    ],
)
def test_read_record_names_the_bad_field(tmp_path, field, value, named):
    data = json.loads(record_json(make_record("a-claim")))
    data[field] = value
    problems = invalid(write_json(tmp_path, data))
    assert named in {p.field for p in problems}


def test_read_record_rejects_another_schema_version(tmp_path):
    # A record carries schema_version like a results file does; a record written by a
    # future format must be refused by name, not read as if it were version 1.
    data = json.loads(record_json(make_record("a-claim")))
    data["schema_version"] = 2
    assert "schema_version" in {p.field for p in invalid(write_json(tmp_path, data))}


def test_read_record_names_a_missing_field(tmp_path):
    data = json.loads(record_json(make_record("a-claim")))
    del data["claim_id"]
    assert {p.field for p in invalid(write_json(tmp_path, data))} == {"claim_id"}


def test_read_record_names_a_bad_check_outcome_by_position(tmp_path):
    data = json.loads(record_json(make_record("a-claim", checks=[CheckResult(name="c", outcome=Verdict.HOLDS)])))
    data["checks"][0]["outcome"] = "passed"
    assert {p.field for p in invalid(write_json(tmp_path, data))} == {"checks.0.outcome"}


def test_read_record_rejects_json_that_is_not_an_object(tmp_path):
    assert invalid(write_json(tmp_path, [1, 2]))


# -- Environment.differences -----------------------------------------------------------


def test_identical_environments_have_no_differences():
    assert make_environment().differences(make_environment()) == {}


def test_differences_list_changed_values_old_then_new():
    old = make_environment(torch="2.13.0")
    new = make_environment(torch="2.14.1", device_name="Other CPU")
    assert old.differences(new) == {
        "device_name": ("Test CPU", "Other CPU"),
        "packages.torch": ("2.13.0", "2.14.1"),
        "torch": ("2.13.0", "2.14.1"),
    }
    assert new.differences(old)["torch"] == ("2.14.1", "2.13.0")


def test_differences_flatten_nested_maps_and_mark_absent_entries():
    old = make_environment(packages={"torch": "2.13.0", "numpy": "2.4.6"}, env_vars={"OMP_NUM_THREADS": "4"})
    new = make_environment(packages={"torch": "2.13.0", "triton": "3.5.0"}, env_vars={})
    assert old.differences(new) == {
        "env_vars.OMP_NUM_THREADS": ("4", "(absent)"),
        "packages.numpy": ("2.4.6", "(absent)"),
        "packages.triton": ("(absent)", "3.5.0"),
    }


def test_cache_identity_changes_with_any_fingerprint_field():
    base = make_environment()
    assert base.cache_identity() == make_environment().cache_identity()
    assert base.cache_identity() != make_environment(packages={"torch": "2.13.0", "numpy": "2.5.0"}).cache_identity()
    assert base.cache_identity() != make_environment(env_vars={"TORCH_LOGS": "recompiles"}).cache_identity()


@pytest.mark.parametrize(
    "message, problem",
    [
        ("RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, ...", True),
        ("RuntimeError: Cannot re-initialize XPU in forked subprocess.", True),
        ("RuntimeError: Found no NVIDIA driver on your system.", False),
    ],
)
def test_a_check_that_holds_on_the_harnesss_fork_message_is_not_evidence(message, problem):
    """On a CUDA build without a GPU, two claims held in every sweep on this message: torch's
    words for a process forked after its parent started CUDA, which only the harness caused."""
    from torchclaims.evidence.judging import judgement_problems

    check = CheckResult(
        name="every call raises, naming CUDA",
        outcome=Verdict.HOLDS,
        measurements=[Measurement(name="tensor.cuda()", value=message, tolerance="raises, naming CUDA")],
    )
    found = judgement_problems(make_record("cuda-calls-raise-without-cuda", Verdict.HOLDS, checks=[check]))
    assert bool(found) is problem
    if problem:
        assert found[0][0] == "checks.0.measurements.0" and "artefact of the harness" in found[0][1]
