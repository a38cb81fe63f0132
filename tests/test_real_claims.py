"""Every real claim of the knowledge base, verified on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchclaims.claims import load_claims
from torchclaims.execution import Settings, verify
from torchclaims.lint import lint
from torchclaims.records import Verdict

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = load_claims(ROOT / "claims")
EXECUTABLE = [c.id for c in CLAIMS.executable()]

pytestmark = pytest.mark.claims


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    settings = Settings(root=ROOT, backend="cpu", timeout=300, records_dir=tmp_path_factory.mktemp("records"))
    return verify(CLAIMS.executable(), settings, log=print, warn=print)


def test_the_knowledge_base_lints_clean():
    assert [str(p) for p in lint(ROOT)] == []


def test_there_are_enough_claims_and_at_least_one_is_attributed():
    assert len(CLAIMS.claims) >= 30
    assert len(EXECUTABLE) >= 8
    assert any(not c.executable for c in CLAIMS.claims.values())


@pytest.mark.parametrize("claim_id", EXECUTABLE)
def test_claim_produces_a_record_on_cpu(outcome, claim_id):
    record = outcome.records[claim_id]
    assert record.claim_id == claim_id
    assert record.environment.backend == "cpu"
    assert record.verdict is not Verdict.ERROR, f"{claim_id}: {record.reason}\n{record.log_tail}"
    assert record.checks, "a verdict needs checks"
    if record.verdict is Verdict.UNVERIFIED:
        assert record.reason, "an unverified verdict must say why"


# Claims a wrong shortcut would change: compile claims that time or count
# compilations (empty caches either way, the compiler preloaded), one that
# compiles with shared caches, a Hugging Face claim (transformers preloaded),
# one that inspects what importing torch loads, and one that starts processes
# of its own.
SHORTCUT_SENSITIVE = [
    "compile-jit-first-call", "custom-op-eager-and-compile", "compile-failure-raises", "hf-static-cache-shapes",
    "backend-autoload", "distributed-collectives",
]


def test_the_shortcuts_give_the_verdicts_of_a_run_without_them(outcome, tmp_path_factory):
    """``outcome`` is a cold run with every shortcut (preloads, shared compiler
    caches, longest first); the reference probes, imports and compiles afresh."""
    settings = Settings(root=ROOT, backend="cpu", timeout=300, records_dir=tmp_path_factory.mktemp("reference"), shortcuts=False)
    reference = verify([CLAIMS.claims[claim_id] for claim_id in SHORTCUT_SENSITIVE], settings, log=print, warn=print)

    def judged(record):
        return record.verdict, [(check.name, check.outcome) for check in record.checks]

    for claim_id in SHORTCUT_SENSITIVE:
        assert judged(outcome.records[claim_id]) == judged(reference.records[claim_id]), claim_id
    cold = outcome.records["compile-jit-first-call"].conditions["compiler caches"]
    assert cold.startswith("cold") and all(r.conditions.get("compiler caches", "").startswith("cold") for r in reference.records.values())
