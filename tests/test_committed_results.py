"""The committed results files in results/ are never outdated when they land.

A results file made by an older version of a script that still exists shows a
verdict the current script may not give. Bring the release sweep's files up
to date with ``nox -s sweep`` (it re-runs only the changed claims, per release,
and merges them into each release's file); a file the sweep did not make goes
back to whoever made it. This test names what to redo.
"""

from __future__ import annotations

from pathlib import Path

from torchclaims.admission import Admission
from torchclaims.claims import load_claims
from torchclaims.freshness import outdated_results
from torchclaims.store import load_store

ROOT = Path(__file__).resolve().parents[1]


def test_committed_results_were_made_by_the_current_scripts():
    outdated = outdated_results(ROOT, ROOT / "results")
    listing = "\n".join(f"  results/{name}: {', '.join(ids)}" for name, ids in sorted(outdated.items()))
    assert not outdated, (
        "committed results made by an older version of a script that still exists "
        f"(`nox -s sweep` re-runs those claims in each release's environment; `-- --dry-run` says what that costs):\n{listing}"
    )


def test_committed_results_pass_every_load_check():
    """Every committed record reaches the site: none fails torchclaims.admission
    (a genuine inconsistency to fix in the file, or a check that is wrong)."""
    claims = load_claims(ROOT / "claims").claims
    store = load_store({}, None, ROOT / "results", admission=Admission.for_project(ROOT, claims))
    assert [str(p) for p in store.problems] == []
    assert store.entries, "results/ holds records"


def test_committed_records_of_cold_claims_state_their_compiler_caches():
    """A claim that times or counts compiling (compiler_caches = "cold") shows a verdict only from a run with
    empty caches, which the runner states as a condition; a record without it ran with shared caches (the
    runner of 2026-11-30 16:27, whose hash the sweep's records carry, had none) and must be re-run."""
    from torchclaims.claims import CompilerCaches
    from torchclaims.compiler_caches import CONDITION_NAME

    claims = load_claims(ROOT / "claims").claims
    cold = {c.id for c in claims.values() if c.compiler_caches is CompilerCaches.COLD}
    store = load_store({}, None, ROOT / "results")
    unstated = sorted(
        f"{entry.origin}: {entry.record.claim_id}"
        for claim_id in cold
        for entry in store.entries.get(claim_id, [])
        if not entry.record.conditions.get(CONDITION_NAME, "").startswith("cold")
    )
    assert cold and not unstated, "records of cold claims that do not state empty compiler caches (re-run them):\n" + "\n".join(unstated)
