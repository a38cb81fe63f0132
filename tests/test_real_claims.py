"""Every real claim of the knowledge base, verified on the CPU.

A claim may be unverified on the CPU (the comparison needs a second device, the
claim is about another backend), but not where the committed records of this
very configuration (cpu, this torch release) decided it: a script that stops
deciding there lost its check, whatever reason it gives."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from factories import make_environment, make_record
from torchclaims.authoring.lint import lint
from torchclaims.claims import load_claims
from torchclaims.evidence.records import ResultRecord, Verdict
from torchclaims.evidence.store import Entry, Store, column_label, load_store
from torchclaims.run.execution import Settings, verify

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = load_claims(ROOT / "claims")
EXECUTABLE = [c.id for c in CLAIMS.executable()]

DECIDED = (Verdict.HOLDS, Verdict.REFUTED)


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    settings = Settings(root=ROOT, backend="cpu", timeout=300, records_dir=tmp_path_factory.mktemp("records"))
    return verify(CLAIMS.executable(), settings, log=print, warn=print)


@pytest.fixture(scope="module")
def committed() -> Store:
    return load_store({}, None, ROOT / "results")


def committed_decision(store: Store, record: ResultRecord) -> ResultRecord | None:
    """The committed record of the same claim and configuration (backend, torch release,
    vendor packages), where it decided the claim; None where it did not or there is none."""
    entry = store.latest_by_column(record.claim_id).get(column_label(record.environment))
    return entry.record if entry is not None and entry.record.verdict in DECIDED else None


def assert_decides_where_committed_records_do(store: Store, record: ResultRecord) -> None:
    decided = committed_decision(store, record)
    if record.verdict is Verdict.UNVERIFIED and decided is not None:
        raise AssertionError(
            f"{record.claim_id}: unverified on {column_label(record.environment)} ({record.reason}), "
            f"but its committed record of {decided.started_at:%Y-%m-%d} there decided it ({decided.verdict.value}): "
            "the script stopped checking"
        )


def test_the_knowledge_base_lints_clean():
    assert [str(p) for p in lint(ROOT)] == []


def test_there_are_enough_claims_and_at_least_one_is_attributed():
    assert len(CLAIMS.claims) >= 30
    assert len(EXECUTABLE) >= 8
    assert any(not c.executable for c in CLAIMS.claims.values())


@pytest.mark.claims
@pytest.mark.parametrize("claim_id", EXECUTABLE)
def test_claim_produces_a_record_on_cpu(outcome, committed, claim_id):
    record = outcome.records[claim_id]
    assert record.claim_id == claim_id
    assert record.environment.backend == "cpu"
    assert record.verdict is not Verdict.ERROR, f"{claim_id}: {record.reason}\n{record.log_tail}"
    assert record.checks, "a verdict needs checks"
    if record.verdict is Verdict.UNVERIFIED:
        assert record.reason, "an unverified verdict must say why"
    assert_decides_where_committed_records_do(committed, record)


@pytest.mark.claims
def test_the_committed_records_say_which_claims_decide_on_this_configuration(outcome, committed):
    """Without them the rule above checks nothing: a torch release the sweep has not run yet."""
    column = column_label(next(iter(outcome.records.values())).environment)
    decided = [r.claim_id for r in outcome.records.values() if committed_decision(committed, r)]
    if not decided:
        pytest.skip(f"no committed record decides a claim on {column}: `nox -s sweep` runs this release")
    assert len(decided) >= 8, decided


def test_a_claim_unverified_where_its_committed_record_decided_fails():
    """The rule can fail: the same claim and configuration, decided in results/, unverified now."""
    decided = make_record("a-claim", Verdict.HOLDS)
    store = Store()
    store.add(Entry(decided, "cpu-torch2.13.0.json"))
    unverified = make_record("a-claim", Verdict.UNVERIFIED, started_at=decided.started_at + timedelta(days=1))
    with pytest.raises(AssertionError, match="a-claim: unverified on cpu · torch 2.13.0 .* decided it \\(holds\\)"):
        assert_decides_where_committed_records_do(store, unverified)
    elsewhere = unverified.model_copy(update={"environment": make_environment(torch="2.9.0")})
    assert_decides_where_committed_records_do(store, elsewhere)  # another release: nothing committed decides there
    store.add(Entry(make_record("b-claim", Verdict.UNVERIFIED), "cpu-torch2.13.0.json"))
    assert_decides_where_committed_records_do(
        store, make_record("b-claim", Verdict.UNVERIFIED)
    )  # never decided on the CPU


# Claims a wrong shortcut would change: compile claims that time or count
# compilations (empty caches either way, the compiler preloaded), one that
# compiles with shared caches, a Hugging Face claim (transformers preloaded),
# one that inspects what importing torch loads, and one that starts processes
# of its own.
SHORTCUT_SENSITIVE = [
    "compile-jit-first-call",
    "custom-op-eager-and-compile",
    "compile-failure-raises",
    "hf-static-cache-shapes",
    "backend-autoload",
    "distributed-collectives",
]


@pytest.mark.claims
def test_the_shortcuts_give_the_verdicts_of_a_run_without_them(outcome, tmp_path_factory):
    """``outcome`` is a cold run with every shortcut (preloads, shared compiler
    caches, longest first); the reference probes, imports and compiles afresh."""
    settings = Settings(
        root=ROOT, backend="cpu", timeout=300, records_dir=tmp_path_factory.mktemp("reference"), shortcuts=False
    )
    reference = verify([CLAIMS.claims[claim_id] for claim_id in SHORTCUT_SENSITIVE], settings, log=print, warn=print)

    def judged(record):
        return record.verdict, [(check.name, check.outcome) for check in record.checks]

    for claim_id in SHORTCUT_SENSITIVE:
        assert judged(outcome.records[claim_id]) == judged(reference.records[claim_id]), claim_id
    cold = outcome.records["compile-jit-first-call"].conditions["compiler caches"]
    assert cold.startswith("cold") and all(
        r.conditions.get("compiler caches", "").startswith("cold") for r in reference.records.values()
    )
