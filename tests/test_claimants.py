"""Who claims what about which backend: the claim page's claimant line and the scope of a verdict."""

from __future__ import annotations

from pathlib import Path

from factories import default_source, write_claim
from torchclaims.claims import Relation, load_claim, load_claims
from torchclaims.evidence.scope import claimant_scopes, in_scope, scope_note
from torchclaims.sphinxext.directives.claim import claimant_line

ROOT = Path(__file__).resolve().parents[1]


def two_claimants(tmp_path, **source):
    sources = [
        default_source(claimant="AWS", about=["neuron"], quote="Neuron compiles on the first call.", **source),
        default_source(quote="Some source code, quoted for a fact."),
        default_source(claimant="PyTorch", about=["cpu", "cuda"], quote="Compiling happens on the first call."),
    ]
    return load_claim(write_claim(tmp_path, "a-claim", about=["neuron", "cpu"], relation="narrows", sources=sources))


def test_each_claimant_is_shown_with_what_its_own_sources_are_about(tmp_path):
    line = claimant_line(two_claimants(tmp_path)).astext()
    assert line.startswith("Claimed by AWS about AWS Trainium (TorchNeuron): “Neuron compiles on the first call.”")
    assert "; by PyTorch about the CPU and NVIDIA GPUs: “Compiling happens on the first call.”" in line
    assert "AWS about the CPU" not in line and "AWS about AWS Trainium (TorchNeuron) and" not in line
    assert line.endswith("(and 1 more source below)")


def test_an_unconfirmed_quote_in_the_claimant_line_carries_its_mark(tmp_path):
    line = claimant_line(two_claimants(tmp_path, confirmed=False, note="Seen in press coverage.")).astext()
    assert "“Neuron compiles on the first call.” — PyTorch documentation (2025-03)unconfirmed" in line


def test_scope_follows_the_claimants_not_the_proposition_alone(tmp_path):
    claim = two_claimants(tmp_path)
    assert claimant_scopes(claim) == [("AWS", "AWS Trainium (TorchNeuron)"), ("PyTorch", "the CPU and NVIDIA GPUs")]
    assert in_scope(claim) == ["neuron", "cpu"]
    assert scope_note(claim, "cpu") == "" and scope_note(claim, "neuron") == ""
    assert scope_note(claim, "xla").startswith("outside the scope of the claim")


def test_every_committed_claim_shows_unconfirmed_headline_quotes_as_unconfirmed():
    # A reconstructed quote (hf-direct-trainium-coverage, torchtpu-speedups) must never read as verbatim.
    claims = load_claims(ROOT / "claims")
    checked = 0
    for claim in claims.claims.values():
        if claim.relation is Relation.OWN_FINDING:
            continue
        line = claimant_line(claim).astext()
        for claimant in claim.claimants:
            first = next(s for s in claim.sources if s.claimant == claimant)
            if not first.confirmed:
                assert f"“{first.quote}” — {first.publisher} ({first.date})unconfirmed" in line, claim.id
                checked += 1
    assert checked >= 2
