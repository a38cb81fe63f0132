"""The command line, run in-process: exit codes and what it prints."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from factories import STARTED, make_environment, make_kb, make_record, script_info, write_claim, write_results_file
from torchclaims.claims import claim_json_schema, load_claim
from torchclaims.cli import main
from torchclaims.evidence.records import write_record
from torchclaims.evidence.results import read_results


def results_pair(tmp_path, new_verdicts: dict, old_verdicts: dict | None = None, new_torch="2.14.1"):
    old_verdicts = old_verdicts or {"a-claim": "holds", "b-claim": "holds", "c-claim": "refuted"}
    old_env = make_environment(torch="2.13.0")
    new_env = make_environment(torch=new_torch)
    old = write_results_file(
        tmp_path / "old.json", [make_record(c, v, environment=old_env) for c, v in old_verdicts.items()]
    )
    new = write_results_file(
        tmp_path / "new.json",
        [
            make_record(c, v, environment=new_env, started_at=STARTED + timedelta(days=7))
            for c, v in new_verdicts.items()
        ],
        created=STARTED + timedelta(days=7),
    )
    return str(old), str(new)


# -- diff ------------------------------------------------------------------------------


def test_diff_reports_a_regression_and_fails(tmp_path, capsys):
    old, new = results_pair(tmp_path, {"a-claim": "refuted", "b-claim": "holds", "c-claim": "holds"})
    assert main(["diff", old, new, "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION a-claim: holds -> refuted" in out
    assert "c-claim: refuted -> holds" in out and "REGRESSION c-claim" not in out
    assert "b-claim" not in out  # unchanged
    assert "versions: torch 2.13.0 -> 2.14.1" in out


def test_diff_prints_the_new_reason(tmp_path, capsys):
    old, new = results_pair(tmp_path, {"a-claim": "unverified", "b-claim": "holds", "c-claim": "refuted"})
    main(["diff", old, new, "--root", str(tmp_path)])
    assert "now: unverified for a test reason" in capsys.readouterr().out


def test_diff_regression_passes_with_no_gate(tmp_path, capsys):
    old, new = results_pair(tmp_path, {"a-claim": "error", "b-claim": "holds", "c-claim": "refuted"})
    assert main(["diff", old, new, "--no-gate", "--root", str(tmp_path)]) == 0
    assert "REGRESSION a-claim: holds -> error" in capsys.readouterr().out


def test_diff_lists_claims_checked_in_one_run_only_without_calling_them_regressions(tmp_path, capsys):
    old, new = results_pair(tmp_path, {"b-claim": "holds", "c-claim": "refuted", "d-claim": "holds"})
    assert main(["diff", old, new, "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "only in old (not compared): a-claim" in out
    assert "only in new (not compared): d-claim" in out
    assert "REGRESSION" not in out


def test_diff_without_regression_succeeds(tmp_path, capsys):
    old, new = results_pair(
        tmp_path, {"a-claim": "holds", "b-claim": "holds", "c-claim": "holds", "d-claim": "refuted"}
    )
    assert main(["diff", old, new, "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "REGRESSION" not in out
    assert "c-claim: refuted -> holds" in out
    assert "only in new (not compared): d-claim" in out


def test_diff_with_nothing_moved(tmp_path, capsys):
    old, new = results_pair(
        tmp_path, {"a-claim": "holds", "b-claim": "holds", "c-claim": "refuted"}, new_torch="2.13.0"
    )
    assert main(["diff", old, new, "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "3 claims compared, 0 changed verdict" in out
    assert "no package versions differ" in out


def test_diff_of_an_invalid_file_is_invalid_input(tmp_path, capsys):
    old, _ = results_pair(tmp_path, {"a-claim": "holds"})
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert main(["diff", old, str(broken), "--root", str(tmp_path)]) == 3
    assert str(broken) in capsys.readouterr().err


# -- merge -----------------------------------------------------------------------------


def test_merge_copies_a_valid_file(tmp_path, capsys):
    source = write_results_file(tmp_path / "mine.json", [make_record("a-claim")])
    into = tmp_path / "results"
    assert main(["merge", str(source), "--into", str(into), "--root", str(tmp_path)]) == 0
    (merged,) = into.iterdir()
    assert merged.name == "cpu-torch2.13.0-20260301T120000.json"
    assert read_results(merged) == read_results(source)
    assert str(merged) in capsys.readouterr().out


def test_merge_rejects_a_broken_file_and_still_merges_the_valid_one(tmp_path, capsys):
    good = write_results_file(tmp_path / "good.json", [make_record("a-claim")])
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"format": "torchclaims-results", "schema_version": 1, "records": "none"}))
    foreign = tmp_path / "foreign.json"
    foreign.write_text("[]")
    into = tmp_path / "results"
    assert main(["merge", str(broken), str(good), str(foreign), "--into", str(into), "--root", str(tmp_path)]) == 3
    assert [p.name for p in into.iterdir()] == ["cpu-torch2.13.0-20260301T120000.json"]
    err = capsys.readouterr().err
    assert "rejected" in err and str(broken) in err and str(foreign) in err


# -- show ------------------------------------------------------------------------------


def test_show_prints_verdicts_per_column(tmp_path, capsys):
    make_kb(tmp_path, "a-claim", "b-claim")
    write_claim(tmp_path / "claims", "said-so", kind="attributed", topic="status")
    (tmp_path / "results").mkdir()
    write_results_file(
        tmp_path / "results" / "cpu.json", [make_record("a-claim", "refuted", script=script_info(tmp_path, "a-claim"))]
    )
    assert main(["show", "--root", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[1:] == ["cpu", "·", "torch"] and lines[2].split() == ["2.13.0"]
    row = {line.split()[0]: line.split()[1:] for line in lines[3:] if line}
    assert (
        row["a-claim"] == ["refuted*"]
        and row["b-claim"] == ["-"]
        and row["said-so"] == ["attributed:", "no", "verdict"]
    )
    assert "cpu · torch 2.13.0: 1 records, 2026-03-01, from cpu.json" in lines
    assert "*: submitted by hand, not reproduced by the project" in lines[-2]


def test_show_gives_two_builds_of_one_release_two_columns_and_names_each_wheel(tmp_path, capsys):
    make_kb(tmp_path, "a-claim")
    (tmp_path / "results").mkdir()
    for torch, verdict in (("2.13.0+cpu", "holds"), ("2.13.0+cu130", "refuted")):
        record = make_record("a-claim", verdict, environment={"torch": torch}, script=script_info(tmp_path, "a-claim"))
        write_results_file(tmp_path / "results" / f"cpu-{torch}.json", [record], record.environment)
    assert main(["show", "--root", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["2.13.0", "2.13.0"] and lines[3].split() == ["+cpu", "+cu130"]
    assert lines[4].split() == ["a-claim", "holds*", "refuted*"]
    assert any(line.startswith("cpu · torch 2.13.0+cu130 (CUDA build): 1 records") for line in lines)


def test_show_fits_120_columns_and_sorts_versions_as_versions(tmp_path, capsys):
    long_id = "a-claim-whose-identifier-is-forty-chars"
    make_kb(tmp_path, long_id)
    (tmp_path / "results").mkdir()
    # Admission refuses a version PEP 440 does not write, so every column is a version.
    versions = [
        "2.9.0",
        "2.10.0",
        "2.11.0",
        "2.12.1",
        "2.13.0",
        "2.14.1",
        "2.15.0",
        "2.16.0",
        "2.17.0",
        "2.18.0",
        "2.19.0",
        "2.20.0",
    ]
    for version in reversed(versions):
        record = make_record(long_id, environment={"torch": version}, script=script_info(tmp_path, long_id))
        write_results_file(tmp_path / "results" / f"cpu-{version}.json", [record], record.environment)
    assert main(["show", "--root", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 120
    headers = [line.split() for line in lines if line.startswith(" ")]
    assert [v for header in headers for v in header] == versions, "versions as versions"
    assert len(headers) == 2, "the columns that do not fit go on in a second block"
    assert all(
        line.split()[1:] == ["holds*"] * len(header)
        for line, header in zip([row for row in lines if row.startswith(long_id)], headers, strict=True)
    )


def test_show_with_claim_ids_prints_every_record_in_full(tmp_path, capsys):
    make_kb(tmp_path, "a-claim", "b-claim")
    (tmp_path / "results").mkdir()
    write_results_file(
        tmp_path / "results" / "cpu.json", [make_record("a-claim", "refuted", script=script_info(tmp_path, "a-claim"))]
    )
    local = tmp_path / "_build" / "records" / "cpu"
    local.mkdir(parents=True)
    write_record(local / "a-claim.json", make_record("a-claim", "holds", started_at=STARTED + timedelta(days=1)))
    assert main(["show", "a-claim", "b-claim", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "a-claim: 2 record(s)" in out and "b-claim: 0 record(s) (not run)" in out
    assert out.index("[this machine]") < out.index("[cpu.json: submitted by hand")  # newest first
    assert "Claim a-claim: HOLDS" in out and "Claim a-claim: REFUTED" in out
    assert main(["show", "no-such-claim", "--root", str(tmp_path)]) == 2


def test_show_reports_a_rejected_results_file(tmp_path, capsys):
    make_kb(tmp_path, "a-claim")
    (tmp_path / "results").mkdir()
    write_results_file(
        tmp_path / "results" / "good.json", [make_record("a-claim", script=script_info(tmp_path, "a-claim"))]
    )
    (tmp_path / "results" / "bad.json").write_text("{")
    assert main(["show", "--root", str(tmp_path)]) == 3
    captured = capsys.readouterr()
    assert "bad.json" in captured.err
    assert "holds" in captured.out


# -- lint ------------------------------------------------------------------------------


RUFF_FINDS_NOTHING = [sys.executable, "-c", "print('[]')"]  # ruff itself: tests/test_quick_path.py
CHECK = "the result matches the reference"  # the one check of a script factories.write_script writes


def as_ci_has_it(root: Path, monkeypatch, *broken_scripts: str) -> Path:
    """A breaking-test file that runs ``broken_scripts``, and a ruff that finds nothing."""
    from torchclaims.authoring import formatting

    monkeypatch.setattr(formatting, "ruff_command", lambda: RUFF_FINDS_NOTHING)
    (root / "tests").mkdir(exist_ok=True)
    calls = "".join(
        f"    assert refuted(run_gallery({name!r}, monkeypatch, tmp_path), {CHECK!r}, 'ones: max abs error')\n"
        for name in broken_scripts
    )
    (root / "tests" / "test_breaking_checks.py").write_text(f"def test_it(monkeypatch, tmp_path):\n{calls}")
    return root


def test_lint_clean_knowledge_base_exits_zero(tmp_path, capsys, monkeypatch):
    as_ci_has_it(make_kb(tmp_path, "a-claim"), monkeypatch, "a_claim")
    assert main(["lint", "--root", str(tmp_path)]) == 0
    assert "no problems" in capsys.readouterr().out


def test_lint_with_problems_exits_one_and_prints_them(tmp_path, capsys, monkeypatch):
    as_ci_has_it(make_kb(tmp_path, "a-claim"), monkeypatch, "a_claim")
    write_claim(tmp_path / "claims", "b-claim", topic="speed")
    write_claim(tmp_path / "claims", "c-claim")  # no script, and so no breaking test
    assert main(["lint", "--root", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "b-claim.toml [topic]" in captured.out
    assert "c-claim.toml [script]" in captured.out
    assert "c-claim.toml [no_breaking_test]" in captured.out
    assert "3 problem(s)" in captured.err


def test_lint_without_ruff_says_the_formatting_was_not_checked_and_fails(tmp_path, capsys, monkeypatch):
    from torchclaims.authoring import formatting

    as_ci_has_it(make_kb(tmp_path, "a-claim"), monkeypatch, "a_claim")
    monkeypatch.setattr(formatting, "ruff_command", lambda: None)
    assert main(["lint", "--root", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "formatting and line length were not checked: ruff is not installed" in captured.err
    assert "no problems" not in captured.out


def test_lint_where_ruff_breaks_says_so_and_fails(tmp_path, capsys, monkeypatch):
    from torchclaims.authoring import formatting

    as_ci_has_it(make_kb(tmp_path, "a-claim"), monkeypatch, "a_claim")
    monkeypatch.setattr(formatting, "ruff_command", lambda: [sys.executable, "-c", "print('not json'); exit(1)"])
    assert main(["lint", "--root", str(tmp_path)]) == 1
    assert "ruff could not judge the scripts" in capsys.readouterr().err


# -- new -------------------------------------------------------------------------------


def test_new_creates_a_loadable_record_and_a_script(tmp_path, capsys):
    assert main(["new", "my-new-claim", "--topic", "compile", "--root", str(tmp_path)]) == 0
    record = tmp_path / "claims" / "my-new-claim.toml"
    script = tmp_path / "gallery" / "my_new_claim.py"
    assert record.is_file() and script.is_file()
    claim = load_claim(record)
    assert claim.topic == "compile" and claim.script == "gallery/my_new_claim.py"
    assert '"my-new-claim"' in script.read_text()
    compile(script.read_text(), str(script), "exec")
    out = capsys.readouterr().out
    assert str(record) in out and str(script) in out


def test_new_claim_is_flagged_by_lint_until_the_template_text_is_replaced(tmp_path, capsys):
    main(["new", "my-new-claim", "--root", str(tmp_path)])
    assert main(["lint", "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "template text" in out
    assert "literal device" not in out and "never calls" not in out


def test_new_refuses_an_existing_id(tmp_path, capsys):
    write_claim(tmp_path / "claims", "taken-claim", title="The original title")
    assert main(["new", "taken-claim", "--root", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert load_claim(tmp_path / "claims" / "taken-claim.toml").title == "The original title"
    assert not (tmp_path / "gallery" / "taken_claim.py").exists()


def test_new_refuses_when_the_script_exists(tmp_path, capsys):
    (tmp_path / "gallery").mkdir()
    (tmp_path / "gallery" / "fresh_claim.py").write_text("# mine\n")
    assert main(["new", "fresh-claim", "--root", str(tmp_path)]) == 2
    assert not (tmp_path / "claims" / "fresh-claim.toml").exists()
    assert (tmp_path / "gallery" / "fresh_claim.py").read_text() == "# mine\n"


@pytest.mark.parametrize("claim_id", ["Bad_Id", "trailing-", "with space"])
def test_new_refuses_a_malformed_id(tmp_path, capsys, claim_id):
    assert main(["new", claim_id, "--root", str(tmp_path)]) == 2
    assert "malformed" in capsys.readouterr().err
    assert not (tmp_path / "claims").exists()


def test_new_refuses_an_unknown_topic(tmp_path, capsys):
    assert main(["new", "good-id", "--topic", "speed", "--root", str(tmp_path)]) == 2
    assert "unknown topic" in capsys.readouterr().err


# -- schema ----------------------------------------------------------------------------


def test_schema_output_writes_the_json_schema(tmp_path, capsys):
    target = tmp_path / "claim.schema.json"
    assert main(["schema", "--output", str(target)]) == 0
    assert json.loads(target.read_text()) == claim_json_schema()
    assert str(target) in capsys.readouterr().out


def test_schema_to_stdout(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["required"] == claim_json_schema()["required"]


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


@pytest.mark.parametrize("command", [["lint"], ["show"], ["verify"], ["merge", "x.json"]])
def test_a_root_that_does_not_exist_is_a_usage_error(tmp_path, capsys, command):
    assert main([*command, "--root", str(tmp_path / "nowhere")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_an_unknown_backend_is_a_usage_error_before_anything_runs(tmp_path, capsys):
    make_kb(tmp_path, "a-claim")
    assert main(["verify", "--backend", "bogus", "--root", str(tmp_path)]) == 2
    assert "unknown backend 'bogus'" in capsys.readouterr().err
    assert not (tmp_path / "_build").exists()


# -- what data may do to a terminal ----------------------------------------------------------

# Erase the line, write the clipboard (OSC 52), ring the bell: what a hostile results file held.
TERMINAL_ATTACK = "\x1b[2K\x1b]52;c;cm0gLXJmIH4=\x07\x9b31m"


def test_no_control_character_from_data_reaches_the_terminal(tmp_path, capsys):
    make_kb(tmp_path, "a-claim")
    (tmp_path / "results").mkdir()
    hostile = tmp_path / "results" / f"cpu{TERMINAL_ATTACK}.json"
    write_results_file(hostile, [make_record("a-claim", "refuted", script=script_info(tmp_path, "a-claim"))])
    main(["show", "a-claim", "--root", str(tmp_path)])
    main(["show", "--root", str(tmp_path)])
    old, _ = results_pair(tmp_path, {"a-claim": "holds"})
    main(["diff", old, str(hostile), "--root", str(tmp_path)])
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert not any(c in printed for c in "\x1b\x07\x9b")
    assert printed.count("cpu\\x1b[2K\\x1b]52;c;cm0gLXJmIH4=\\x07\\x9b31m.json") >= 2  # shown, as escapes


def test_a_build_warning_made_of_data_drives_no_terminal(caplog):
    from torchclaims.sphinxext.build.state import warn

    warn(f"results/cpu{TERMINAL_ATTACK}.json: not valid JSON", "results")
    (message,) = [r.getMessage() for r in caplog.records]
    assert not any(c in message for c in "\x1b\x07\x9b") and "cpu\\x1b[2K" in message
