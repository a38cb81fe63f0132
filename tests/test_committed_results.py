"""The sweep's committed results files in results/ are never outdated when they land.

A results file made by an older version of a script that still exists shows a
verdict the current script may not give. Bring the release sweep's files up
to date with ``nox -s sweep`` (it re-runs only the changed claims, per release,
and merges them into each release's file); a file the sweep did not make (a
hardware owner's submission) keeps its records as they were made, and the site
shows those stale. These tests name what to redo.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from rendered import written
from torchclaims.claims import load_claims
from torchclaims.evidence.admission import Admission
from torchclaims.evidence.freshness import outdated_results, stale_reason
from torchclaims.evidence.store import load_store
from torchclaims.history.releases import load_releases
from torchclaims.history.sweep_plan import sweep_made

ROOT = Path(__file__).resolve().parents[1]


def test_committed_sweep_results_were_made_by_the_current_scripts():
    made = sweep_made(load_releases(ROOT), ROOT / "results")
    assert made, "results/ holds the sweep's files"
    outdated = {name: ids for name, ids in outdated_results(ROOT, ROOT / "results").items() if name in made}
    listing = "\n".join(f"  results/{name}: {', '.join(ids)}" for name, ids in sorted(outdated.items()))
    assert not outdated, (
        "the sweep's committed results made by an older version of a script that still exists "
        "(`nox -s sweep` re-runs those claims in each release's environment; "
        f"`-- --dry-run` says what that costs):\n{listing}"
    )


def test_outdated_records_of_submitted_files_are_shown_stale():
    """A file someone submitted (the H200 run) is not re-made by the sweep: where a script changed
    since, its records stay, and the site shows them stale rather than current."""
    claims = load_claims(ROOT / "claims").claims
    made = sweep_made(load_releases(ROOT), ROOT / "results")
    outdated = {
        (name, claim_id)
        for name, ids in outdated_results(ROOT, ROOT / "results").items()
        if name not in made
        for claim_id in ids
    }
    store = load_store({}, None, ROOT / "results")
    shown = set()
    for claim_id, entries in store.entries.items():
        current = hashlib.sha256((ROOT / claims[claim_id].script).read_bytes()).hexdigest()
        for entry in entries:
            if (entry.origin, claim_id) in outdated:
                assert "script changed" in stale_reason(entry.record, current, max_age_days=10_000), entry.origin
                shown.add((entry.origin, claim_id))
    assert shown == outdated


def test_committed_results_pass_every_load_check():
    """Every committed record reaches the site: none fails torchclaims.evidence.admission
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
    from torchclaims.run.compiler_caches import CONDITION_NAME

    claims = load_claims(ROOT / "claims").claims
    cold = {c.id for c in claims.values() if c.compiler_caches is CompilerCaches.COLD}
    store = load_store({}, None, ROOT / "results")
    unstated = sorted(
        f"{entry.origin}: {entry.record.claim_id}"
        for claim_id in cold
        for entry in store.entries.get(claim_id, [])
        if not entry.record.conditions.get(CONDITION_NAME, "").startswith("cold")
    )
    assert cold and not unstated, (
        "records of cold claims that do not state empty compiler caches (re-run them):\n" + "\n".join(unstated)
    )


def test_every_committed_record_says_beside_its_verdict_whether_it_ran_sandboxed():
    """A record whose ``sandbox`` field is empty (its run predates the sandbox) or
    says it ran without one shows "ran without sandbox" in the line of its
    verdict, computed from the record: the evidence badge, the matrix cell and
    the accelerator page's chip. The same record from a sandboxed run does not."""
    from torchclaims.run.sandbox import WITHOUT
    from torchclaims.sphinxext.views.accelerators import chip
    from torchclaims.sphinxext.views.evidence import verdict_badge
    from torchclaims.sphinxext.views.grid import Cell
    from torchclaims.sphinxext.views.matrix import _run

    claims = load_claims(ROOT / "claims").claims
    entries = [entry for found in load_store({}, None, ROOT / "results").entries.values() for entry in found]
    assert entries
    for entry in entries:
        sandboxed = dataclasses.replace(
            entry, record=entry.record.model_copy(update={"sandbox": "sandboxed: Landlock ABI 7 (...)"})
        )
        for shown, expected in (
            (entry, not entry.record.sandbox or entry.record.sandbox.startswith(WITHOUT)),
            (sandboxed, False),
        ):
            cell = Cell(claims[entry.record.claim_id], entry.record.environment.backend, "2.13.0", shown)
            lines = {
                "badge": verdict_badge(shown).astext(),
                "matrix cell": written(_run(cell, True, "")),
                "chip": chip(cell).astext(),
            }
            for where, line in lines.items():
                assert ("ran without sandbox" in line) == expected, (
                    entry.origin,
                    entry.record.claim_id,
                    where,
                    entry.record.sandbox,
                )
