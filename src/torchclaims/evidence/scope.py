"""What a verdict on one backend says about a claim: where it ran, and whether
that backend is one the claim is about.

A verdict on the CPU reference, or on XLA on the CPU, is evidence about what ran
there. Next to a vendor's name it must never read as a verdict on the vendor's
hardware, so every page prints these two phrases beside it.
"""

from __future__ import annotations

from ..backends import all_backends
from ..claims import Claim
from .records import Environment


def reader_name(backend: str) -> str:
    """'AWS Trainium (TorchNeuron)' for 'neuron'; the name itself for an unknown backend."""
    descriptor = all_backends().get(backend)
    return descriptor.reader_name if descriptor else backend


def ran_on(env: Environment) -> str:
    """The backend and the device a verdict was obtained on: 'xla on XLA CPU (AMD EPYC)'."""
    return f"{env.backend} on {env.device_name}"


def and_words(words: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def about_text(claim: Claim) -> str:
    """'AWS Trainium (TorchNeuron) and NVIDIA GPUs': what the claim is about, in words."""
    return and_words([reader_name(b) for b in claim.about])


def in_scope(claim: Claim) -> list[str]:
    """The backends a verdict is in scope on: the proposition is about them and some claimant speaks about them."""
    return [b for b in claim.about if claim.covers(b)] or list(claim.about)  # lint reports a claim with none


def claimant_scopes(claim: Claim) -> list[tuple[str, str]]:
    """[('AWS', 'AWS Trainium (TorchNeuron)'), ('PyTorch', 'the CPU and NVIDIA GPUs')]: each claimant
    with what its own sources are about, so no claimant reads as speaking for another's backends."""
    return [(claimant, and_words([reader_name(b) for b in scope])) for claimant, scope in claim.claimants.items()]


def scope_note(claim: Claim, backend: str) -> str:
    """'' when a verdict on ``backend`` is within the claim's scope, else what it does not say."""
    if claim.covers(backend):
        return ""
    return f"outside the scope of the claim: says nothing about {and_words([reader_name(b) for b in in_scope(claim)])}"
