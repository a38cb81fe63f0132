"""Isolation, timeouts, parallelism and the environment-keyed cache."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kb import write_claim
from torchclaims.claims import load_claims
from torchclaims.evidence.records import Environment, Verdict, read_record
from torchclaims.run.cache import cache_key
from torchclaims.run.execution import Settings, history_dir, verify

FILING_S = 4.0  # longer than a trivial claim's whole run
pytestmark = pytest.mark.processes  # claim processes, each way a script can end

CASES = {
    "kb-holds": ("holds", Verdict.HOLDS, ""),
    "kb-refuted": ("refuted", Verdict.REFUTED, ""),
    "kb-unverified": ("unverified", Verdict.UNVERIFIED, "no accelerator on this machine"),
    "kb-raise": ("raise", Verdict.ERROR, "ValueError: boom from the script"),
    "kb-exit": ("exit", Verdict.ERROR, "sys.exit(3)"),
    "kb-os-exit": ("os_exit", Verdict.ERROR, "exited with code 7"),
    "kb-segfault": ("segfault", Verdict.ERROR, "SIGSEGV"),
    "kb-hang": ("hang", Verdict.ERROR, "timed out after 6s"),
    "kb-no-finish": ("no_finish", Verdict.ERROR, "without calling finish()"),
    "kb-own-stamp": ("own_stamp", Verdict.HOLDS, ""),
}
# A script that states when it ran and a condition the harness owns (compiler caches), as pages show them.
OWN_STAMP = """
import datetime
v._started_at = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
v.conditions["compiler caches"] = "cold: every cache empty (attested)"
with v.check("runs") as check:
    check.expect(True, "")
v.finish()
"""


def run(root: Path, **settings):
    claims = load_claims(root / "claims")
    assert not claims.problems
    messages: list[str] = []
    outcome = verify(
        claims.executable(),
        Settings(**{"root": root, "timeout": 6, "parallel": 2, **settings}),
        log=messages.append,
        warn=messages.append,
    )
    return outcome, messages


@pytest.fixture(scope="module")
def isolated(tmp_path_factory):
    root = tmp_path_factory.mktemp("kb")
    for claim_id, (body, _, _) in CASES.items():
        write_claim(root, claim_id, OWN_STAMP if body == "own_stamp" else body)
    outcome, _ = run(root)
    return root, outcome


@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_each_way_a_script_can_end_gives_its_record(isolated, claim_id):
    root, outcome = isolated
    _, verdict, cause = CASES[claim_id]
    record = outcome.records[claim_id]
    assert record.verdict is verdict
    assert cause in record.reason
    on_disk = read_record(root / "_build" / "records" / "cpu" / f"{claim_id}.json")
    assert on_disk == record
    assert record.environment.backend == "cpu"
    assert record.cache_key and record.inputs[f"gallery/{claim_id.replace('-', '_')}.py"]


def test_error_records_keep_the_output_of_the_failed_script(isolated):
    _, outcome = isolated
    assert "boom from the script" in outcome.records["kb-raise"].log_tail


def test_when_a_claim_ran_and_the_harness_conditions_are_the_harness_word(isolated):
    _, outcome = isolated
    record = outcome.records["kb-own-stamp"]
    assert record.started_at.year >= 2026  # the script's 2001 is replaced by the time the harness started it
    assert record.conditions == {"model": "a tensor of three ones"}  # its "compiler caches" is dropped


def test_a_holding_claim_records_its_checks_and_conditions(isolated):
    _, outcome = isolated
    record = outcome.records["kb-holds"]
    assert [c.name for c in record.checks] == ["addition on the device"]
    assert record.checks[0].measurements[0].name == "sum: max abs error"
    assert record.conditions == {"model": "a tensor of three ones"}


def test_a_freed_worker_starts_the_next_claim_before_the_last_record_is_written(tmp_path, monkeypatch):
    from torchclaims.run.runner import Runner

    real_finish = Runner._finish

    def slow_finish(self, item, environment, timed_out):
        time.sleep(FILING_S)  # filing a record takes long: the claim's duration must not include it
        return real_finish(self, item, environment, timed_out)

    monkeypatch.setattr(Runner, "_finish", slow_finish)
    for claim_id in ("kb-first", "kb-second"):
        write_claim(tmp_path, claim_id, "holds")
    outcome, messages = run(tmp_path, parallel=1)
    started = [m.split()[2] for m in messages if m.startswith("torchclaims: running ")]
    assert len(started) == 2 and all(r.verdict is Verdict.HOLDS for r in outcome.records.values())
    filed = next(i for i, m in enumerate(messages) if m.startswith(f"torchclaims: {started[0]} -> "))
    second = next(i for i, m in enumerate(messages) if m.startswith(f"torchclaims: running {started[1]} "))
    assert second < filed, messages
    # The first claim's time ends when its process exited, not when its record was filed. (The
    # second's exit is seen only once that filing is done, as an exit always is at the next wait.)
    assert outcome.records[started[0]].duration_s < FILING_S


def test_ctrl_c_while_the_next_claim_starts_keeps_the_record_of_the_one_that_ended(tmp_path, monkeypatch):
    from torchclaims.run.runner import Interrupted, Runner

    real_start, starts = Runner._start, []

    def start(self, job, *rest):
        if job.claim_id.startswith("kb-"):  # not the device smoke, which runs before any claim
            starts.append(job.claim_id)
        if len(starts) == 2:  # the first claim has ended; its record is not filed yet
            raise KeyboardInterrupt
        return real_start(self, job, *rest)

    monkeypatch.setattr(Runner, "_start", start)
    for claim_id in ("kb-first", "kb-second"):
        write_claim(tmp_path, claim_id, "holds")
    with pytest.raises(Interrupted, match="1 of 2 claims finished"):
        run(tmp_path, parallel=1)
    kept = read_record(tmp_path / "_build" / "records" / "cpu" / f"{starts[0]}.json")
    assert kept.verdict is Verdict.HOLDS


def test_second_run_with_nothing_changed_reruns_nothing(tmp_path):
    for claim_id in ("kb-holds", "kb-refuted", "kb-unverified"):
        write_claim(tmp_path, claim_id, CASES[claim_id][0])
    first, _ = run(tmp_path)
    assert set(first.reran) == {"kb-holds", "kb-refuted", "kb-unverified"}
    second, _ = run(tmp_path)
    assert second.reran == {}
    assert second.records == first.records


def test_changed_script_and_changed_environment_rerun_and_say_why(tmp_path):
    write_claim(tmp_path, "kb-holds", "holds")
    write_claim(tmp_path, "kb-refuted", "refuted")
    run(tmp_path)
    script = tmp_path / "gallery" / "kb_holds.py"
    script.write_text(script.read_text() + "\n# edited\n")
    # Pretend the earlier record of the other claim came from an older torch.
    path = tmp_path / "_build" / "records" / "cpu" / "kb-refuted.json"
    data = json.loads(path.read_text())
    data["environment"]["torch"] = "2.12.0"
    data["cache_key"] = cache_key(data["inputs"], Environment.model_validate(data["environment"]))
    path.write_text(json.dumps(data))
    outcome, messages = run(tmp_path)
    assert "changed: gallery/kb_holds.py" in str(outcome.reran["kb-holds"])
    assert "environment changed: torch 2.12.0 -> " in str(outcome.reran["kb-refuted"])
    assert any("running kb-refuted (environment changed: torch 2.12.0" in m for m in messages)
    archived = list((history_dir(Settings(root=tmp_path)) / "cpu").glob("kb-refuted-*.json"))
    assert len(archived) == 1 and read_record(archived[0]).environment.torch == "2.12.0"


def test_force_reruns_current_records(tmp_path):
    write_claim(tmp_path, "kb-holds", "holds")
    run(tmp_path)
    outcome, _ = run(tmp_path, force=True)
    assert "--force" in str(outcome.reran["kb-holds"])


def test_unusable_backend_gives_unverified_records_without_running_scripts(tmp_path):
    write_claim(tmp_path, "kb-holds", "holds")
    outcome, _ = run(tmp_path, backend="cuda")
    record = outcome.records["kb-holds"]
    assert record.verdict is Verdict.UNVERIFIED
    assert "backend cuda is not usable here" in record.reason
    assert record.checks == []


def test_verify_keeps_figures_with_the_record_and_the_results_file(tmp_path, capsys):
    from torchclaims.cli import main
    from torchclaims.evidence.results import read_results

    write_claim(tmp_path, "kb-figure", "figure")
    assert main(["verify", "--root", str(tmp_path), "--output", str(tmp_path / "out"), "--timeout", "60"]) == 0
    (results_path,) = (tmp_path / "out").glob("*.json")
    (record,) = read_results(results_path).records
    assert record.figures == [f"figures/{results_path.stem}/kb-figure/figure-1.png"]
    assert (tmp_path / "out" / record.figures[0]).read_bytes().startswith(b"\x89PNG")
    beside_record = tmp_path / "_build" / "records" / "cpu" / "kb-figure" / "figure-1.png"
    assert beside_record.is_file()


def test_a_script_knows_how_long_the_runner_gives_it(tmp_path):
    body = """
with v.check("time left") as check:
    check.measure("seconds left", v.time_left())
    check.expect(True, "")
v.finish()
"""
    write_claim(tmp_path, "kb-time", body)
    outcome, _ = run(tmp_path)
    (seconds,) = [m.value for m in outcome.records["kb-time"].checks[0].measurements]
    assert 0 < seconds <= 6  # the runner's timeout in run()


CPU_SHARE = """
import os

import torch

with v.check("cpu share") as check:
    check.measure("cpus", int(os.environ["TORCHCLAIMS_CPUS"]))
    check.measure("threads", torch.get_num_threads())
    check.expect(True, "")
v.finish()
"""


def test_a_claim_that_runs_alone_gets_every_cpu_and_one_among_others_its_share(tmp_path):
    import os

    def shares(root: Path) -> set[tuple[float, ...]]:
        outcome, _ = run(root)
        return {tuple(m.value for m in record.checks[0].measurements) for record in outcome.records.values()}

    alone, among = tmp_path / "alone", tmp_path / "among"
    write_claim(alone, "kb-share", CPU_SHARE)
    for n in range(3):
        write_claim(among, f"kb-share-{n}", CPU_SHARE)
    cpus = os.cpu_count() or 1
    assert shares(alone) == {(cpus, cpus)}
    assert shares(among) == {(max(1, cpus // 2),) * 2}  # run() starts 2 at a time
