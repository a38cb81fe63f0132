"""The verification API used in-process, on the CPU backend, writing to a temporary record."""

from __future__ import annotations

import hashlib
import importlib.metadata

import pytest
import torch

from torchclaims.errors import UsageError
from torchclaims.evidence.records import Verdict, read_record
from torchclaims.verify import RECORD_PATH_ENV, SCRIPT_ENV, summary, verification


@pytest.fixture
def record_path(tmp_path, monkeypatch):
    path = tmp_path / "records" / "record.json"
    script = tmp_path / "gallery" / "the_claim.py"
    script.parent.mkdir()
    script.write_text('"""The claim\'s script."""\n', encoding="utf-8")
    monkeypatch.setenv(RECORD_PATH_ENV, str(path))
    monkeypatch.setenv(SCRIPT_ENV, str(script))
    monkeypatch.setenv("TORCHCLAIMS_BACKEND", "cpu")
    return path


def finish(v):
    """Finish a verification and return the record it wrote (also kept as ``v.record``)."""
    assert v.record is None
    v.finish()
    assert v.record is not None
    return v.record


def outcomes(record):
    return {c.name: c.outcome for c in record.checks}


def test_checks_that_hold(record_path):
    v = verification("the-claim", model="MLP", inputs="batch of 8")
    assert v.device == torch.device("cpu")
    assert v.on_reference
    with v.check("close") as check:
        check.close(torch.ones(3) + 1e-7, torch.ones(3), rtol=1e-5, atol=1e-6, what="ones")
    with v.check("equal tensors") as check:
        check.equal(torch.arange(4), torch.arange(4), what="arange")
    with v.check("equal values") as check:
        check.equal(3, 3, what="count")
    with v.check("expect") as check:
        check.expect(True, "never shown")
    record = finish(v)
    assert record.verdict is Verdict.HOLDS
    assert record.reason == ""
    assert set(outcomes(record).values()) == {Verdict.HOLDS}
    assert record.conditions == {"model": "MLP", "inputs": "batch of 8"}


def test_close_outside_tolerance_refutes_and_records_the_measurement(record_path):
    v = verification("the-claim")
    with v.check("forward matches") as check:
        check.close(torch.tensor([1.0, 2.5]), torch.tensor([1.0, 2.0]), rtol=1e-4, atol=1e-5, what="logits")
    record = finish(v)
    assert record.verdict is Verdict.REFUTED
    (result,) = record.checks
    assert result.outcome is Verdict.REFUTED
    assert "logits" in result.detail and "exceeds" in result.detail
    error = next(m for m in result.measurements if m.name == "logits: max abs error")
    assert error.value == pytest.approx(0.5)
    assert "1e-05" in error.tolerance and "0.0001" in error.tolerance


def test_close_with_different_shapes_refutes(record_path):
    v = verification("the-claim")
    with v.check("shapes") as check:
        check.close(torch.ones(2, 3), torch.ones(3, 2), rtol=1e-4, atol=1e-5, what="output")
    (result,) = finish(v).checks
    assert result.outcome is Verdict.REFUTED
    assert "shape" in result.detail


def test_close_with_nan_refutes_and_keeps_the_record_valid(record_path):
    v = verification("the-claim")
    with v.check("nan") as check:
        check.close(torch.tensor([float("nan")]), torch.tensor([1.0]), rtol=1e-4, atol=1e-5, what="loss")
    record = finish(v)
    assert record.verdict is Verdict.REFUTED
    assert read_record(record_path) == record  # a non-finite measurement survives JSON


def test_equal_mismatch_refutes_with_what_was_seen(record_path):
    v = verification("the-claim")
    with v.check("same count") as check:
        check.equal(3, 4, what="graph breaks")
    with v.check("same tensor") as check:
        check.equal(torch.tensor([1, 2]), torch.tensor([1, 3]), what="indices")
    record = finish(v)
    assert record.verdict is Verdict.REFUTED
    count, tensor = record.checks
    assert count.outcome is Verdict.REFUTED and "got 3, expected 4" in count.detail
    assert count.measurements[0].value == 3 and count.measurements[0].tolerance == "== 4"
    assert tensor.outcome is Verdict.REFUTED and "indices" in tensor.detail
    assert tensor.measurements[0].value is False and tensor.measurements[0].tolerance == "== True"


def test_expect_false_refutes_with_the_failure_text(record_path):
    v = verification("the-claim")
    with v.check("no recompilation") as check:
        check.expect(False, "recompiled 3 times")
    (result,) = finish(v).checks
    assert result.outcome is Verdict.REFUTED
    assert result.detail == "recompiled 3 times"


def test_measure_converts_tensors_and_non_finite_values(record_path):
    v = verification("the-claim")
    with v.check("measures") as check:
        assert check.measure("peak", torch.tensor(2.5), unit="MiB") == 2.5
        check.measure("overflow", float("inf"))
        check.note("measured after warm-up")
        check.expect(True, "never shown")
    record = finish(v)
    (result,) = record.checks
    assert [(m.name, m.value, m.unit) for m in result.measurements] == [("peak", 2.5, "MiB"), ("overflow", "inf", "")]
    assert result.outcome is Verdict.HOLDS
    assert "measured after warm-up" in result.detail
    assert read_record(record_path) == record


def test_unsupported_makes_the_claim_unverified_with_the_reason(record_path):
    v = verification("the-claim")
    with v.check("fine") as check:
        check.expect(True, "")
    with v.check("needs fp8") as check:
        check.unsupported("float8 matmul is not implemented on this backend")
        raise AssertionError("not reached")
    record = finish(v)
    assert record.verdict is Verdict.UNVERIFIED
    assert outcomes(record) == {"fine": Verdict.HOLDS, "needs fp8": Verdict.UNVERIFIED}
    assert record.reason == "needs fp8: float8 matmul is not implemented on this backend"


def test_an_exception_is_an_error_and_later_checks_still_run(record_path, capsys):
    v = verification("the-claim")
    with v.check("crashes"):
        raise RuntimeError("kernel not found")
    with v.check("runs after") as check:
        check.expect(True, "")
    record = finish(v)
    assert record.verdict is Verdict.ERROR
    assert outcomes(record) == {"crashes": Verdict.ERROR, "runs after": Verdict.HOLDS}
    assert record.reason == "crashes: RuntimeError: kernel not found"
    assert "RuntimeError: kernel not found" in capsys.readouterr().err  # the traceback


def test_a_refutation_stays_visible_when_another_check_errored(record_path):
    v = verification("the-claim")
    with v.check("refuted") as check:
        check.expect(False, "no")
    with v.check("unsupported") as check:
        check.unsupported("missing op")
    with v.check("broken"):
        raise ValueError("bad input")
    record = finish(v)
    assert record.verdict is Verdict.REFUTED
    assert record.note == "1 check errored, 1 check unverified"
    assert "Claim the-claim: REFUTED (1 check errored, 1 check unverified)" in summary(record)


def test_a_check_that_judges_nothing_is_an_error(record_path):
    v = verification("the-claim")
    with v.check("only looks") as check:
        check.measure("value drawn on the device", 0.25)
        check.note("recorded for information")
    with v.check("empty"):
        pass
    record = finish(v)
    assert record.verdict is Verdict.ERROR
    assert outcomes(record) == {"only looks": Verdict.ERROR, "empty": Verdict.ERROR}
    assert all("judged nothing" in c.detail for c in record.checks)
    assert record.checks[0].measurements[0].value == 0.25  # what it measured is kept
    assert "recorded for information" in record.checks[0].detail


def test_unsupported_after_a_failure_does_not_erase_the_failure(record_path):
    v = verification("the-claim")
    with v.check("device draw matches") as check:
        check.expect(False, "values differ from the CPU's")
        check.unsupported("the second half needs a GPU")
    record = finish(v)
    assert record.verdict is Verdict.REFUTED
    (result,) = record.checks
    assert result.outcome is Verdict.REFUTED
    assert result.detail == "values differ from the CPU's; then check.unsupported: the second half needs a GPU"


def test_an_exception_after_a_failure_keeps_the_check_refuted(record_path):
    v = verification("the-claim")
    with v.check("sums match") as check:
        check.equal(3, 4, what="sum")
        raise RuntimeError("later step broke")
    (result,) = finish(v).checks
    assert result.outcome is Verdict.REFUTED
    assert result.detail == "sum: got 3, expected 4; then raised RuntimeError: later step broke"


def test_unsupported_after_a_judgement_that_held_is_unverified(record_path):
    v = verification("the-claim")
    with v.check("partly checked") as check:
        check.expect(True, "")
        check.unsupported("the rest needs an accelerator")
    (result,) = finish(v).checks
    assert result.outcome is Verdict.UNVERIFIED


def test_system_exit_inside_a_check_is_not_swallowed(record_path):
    v = verification("the-claim")
    with pytest.raises(SystemExit):
        with v.check("exits"):
            raise SystemExit(3)


def test_no_checks_is_an_error_with_a_reason(record_path):
    record = finish(verification("the-claim"))
    assert record.verdict is Verdict.ERROR
    assert record.checks == []
    assert "without running any check" in record.reason


def test_finish_writes_the_record_with_environment_and_script(record_path, capsys):
    script = record_path.parent.parent / "gallery" / "the_claim.py"
    v = verification("the-claim", dtype="float32")
    with v.check("holds") as check:
        check.equal(1, 1, what="one")
    record = finish(v)

    assert read_record(record_path) == record
    assert record.claim_id == "the-claim"
    env = record.environment
    assert env.backend == "cpu"
    assert env.device == "cpu"
    assert env.torch == torch.__version__
    assert env.packages["torch"] == importlib.metadata.version("torch")
    assert record.script.path == str(script)
    assert record.script.sha256 == hashlib.sha256(script.read_bytes()).hexdigest()
    assert record.conditions == {"dtype": "float32"}
    assert record.duration_s >= 0
    out = capsys.readouterr().out
    assert "Claim the-claim: HOLDS" in out
    assert "on cpu" in out


def test_conditions_are_stored_as_text(record_path):
    record = finish(verification("the-claim", batch=8, seed=0))
    assert record.conditions == {"batch": "8", "seed": "0"}


def test_finish_twice_keeps_the_first_record(record_path):
    v = verification("the-claim")
    with v.check("holds") as check:
        check.expect(True, "")
    first = finish(v)
    mtime = record_path.stat().st_mtime_ns
    v.finish()
    assert v.record is first
    assert record_path.stat().st_mtime_ns == mtime
    assert read_record(record_path) == first


def test_opening_a_check_after_finish_raises(record_path):
    v = verification("the-claim")
    finish(v)
    with pytest.raises(UsageError, match="after finish"):
        v.check("too late")


def test_records_dir_is_used_when_no_record_path_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv(RECORD_PATH_ENV, raising=False)
    monkeypatch.setenv("TORCHCLAIMS_RECORDS_DIR", str(tmp_path / "records"))
    monkeypatch.setenv("TORCHCLAIMS_BACKEND", "cpu")
    monkeypatch.setenv(SCRIPT_ENV, str(tmp_path / "missing.py"))
    record = finish(verification("the-claim"))
    assert read_record(tmp_path / "records" / "cpu" / "the-claim.json") == record
    assert record.script.sha256 == ""  # an unreadable script has no digest


def test_unknown_backend_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.setenv(RECORD_PATH_ENV, str(tmp_path / "r.json"))
    monkeypatch.setenv("TORCHCLAIMS_BACKEND", "warp-drive")
    with pytest.raises(UsageError, match="warp-drive"):
        verification("the-claim")


def test_unavailable_backend_is_a_usage_error_naming_why(monkeypatch, tmp_path):
    monkeypatch.setenv(RECORD_PATH_ENV, str(tmp_path / "r.json"))
    monkeypatch.setenv("TORCHCLAIMS_BACKEND", "tpu")  # needs torch_tpu, absent here
    with pytest.raises(UsageError, match="tpu is not usable here"):
        verification("the-claim")
    assert not (tmp_path / "r.json").exists()


def test_summary_shows_verdict_reason_and_measurements(record_path):
    v = verification("the-claim")
    with v.check("forward") as check:
        check.measure("latency", 1.5, unit="ms", tolerance="<= 2")
        check.unsupported("no fp8")
    text = summary(finish(v))
    assert text.splitlines()[0] == "Claim the-claim: UNVERIFIED"
    assert "reason: forward: no fp8" in text
    assert "latency = 1.5 ms  (<= 2)" in text


def _table(codes: str):
    """An operators table, one float32 cell per code: N native, M mismatch, T not reached."""
    from torchclaims.evidence.coverage_table import NOT_REACHED, TableBuilder

    rows = [f"op{n}" for n in range(len(codes))]
    builder = TableBuilder(
        "operators", "operator", rows, {"float32": {"N": "native", "M": "mismatch", "T": NOT_REACHED}}
    )
    for row, code in zip(rows, codes, strict=True):
        builder.set(row, "float32", code)
    return builder.table()


def test_a_record_with_a_table_states_the_share_of_cells_it_reached(record_path):
    v = verification("the-claim")
    v.add_table(_table("NNNN"))
    with v.check("every reached cell matches") as check:
        check.expect(True, "")
    record = finish(v)
    reach = record.checks[-1]
    assert reach.outcome is Verdict.HOLDS and record.verdict is Verdict.HOLDS
    assert {m.name: (m.value, m.unit, m.tolerance) for m in reach.measurements} == {
        "cells reached": (4, "of 4", "== 4"),
        "share reached": (100.0, "%", ""),
    }


def test_a_partial_table_makes_the_claim_unverified_for_the_cells_it_did_not_reach(record_path):
    v = verification("the-claim")
    v.add_table(_table("NNNT"))
    with v.check("every reached cell matches") as check:
        check.expect(True, "")  # everything the table reached matched
    record = finish(v)
    assert record.verdict is Verdict.UNVERIFIED  # never holds on a partial table
    reach = record.checks[-1]
    assert {m.name: m.value for m in reach.measurements} == {"cells reached": 3, "share reached": 75.0}
    assert "1 of 4 listed cells were not reached" in reach.detail and "75% reached" in reach.detail


def test_the_share_reached_is_never_rounded_up_to_all_of_it(record_path):
    v = verification("the-claim")
    v.add_table(_table("N" * 1999 + "T"))
    with v.check("every reached cell matches") as check:
        check.expect(True, "")
    reach = finish(v).checks[-1]
    assert {m.name: m.value for m in reach.measurements} == {"cells reached": 1999, "share reached": 99.9}


def test_a_partial_table_does_not_refute_a_claim_by_itself_nor_hide_a_refutation(record_path):
    v = verification("the-claim")
    v.add_table(_table("MNTT"))
    with v.check("every reached cell matches") as check:
        check.expect(False, "1 cell differs from the CPU")
    assert finish(v).verdict is Verdict.REFUTED  # refuted by the mismatch it reached
    assert outcomes(v.record)["the operators table judged every listed cell"] is Verdict.UNVERIFIED


def test_judging_refuses_a_record_that_holds_on_a_partial_table():
    from factories import make_record
    from torchclaims.evidence.judging import judgement_problems

    assert judgement_problems(make_record("the-claim", tables=[_table("NNNN")])) == []
    problems = judgement_problems(make_record("the-claim", tables=[_table("NNNT")]))
    assert problems == [("tables.0", "says holds, but table 'operators' reached 3 of 4 listed cells")]
