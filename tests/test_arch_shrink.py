"""Tiny models for the architecture sweep: targeted sizes are tried before giving up, and a row the
harness could not build says so as a limit of the harness, quoting the config class's own error."""

from __future__ import annotations

import pytest

from torchclaims.coverage import arch_check
from torchclaims.coverage.arch_config import TARGETED, architectures
from torchclaims.coverage.architectures import CAUSES, classify

REGISTERED = sorted(set(TARGETED) & set(architectures()))


@pytest.mark.parametrize("model_type", REGISTERED)
def test_targeted_sizes_build_a_tiny_model_that_runs_on_the_cpu(model_type):
    model, sizes, parameters, logits, tokens = arch_check.reference(model_type)
    assert "set for " + model_type in sizes  # only the targeted sizes build it: the plain size sets fail
    assert logits.shape[:2] == (1, len(arch_check.PROMPT[0]))


def test_targeted_sizes_are_for_registered_architectures():
    assert len(REGISTERED) == len(TARGETED) >= 6


def test_a_config_no_size_builds_is_reported_as_a_limit_of_the_harness(monkeypatch):
    def refuse(model_type, sizes, targeted=False):
        raise ValueError("mamba_n_heads must divide mamba_expand * hidden_size")

    monkeypatch.setattr(arch_check, "tiny_config", refuse)
    answer = arch_check.check_architecture("bamba", "cpu", probe=None, sync=lambda: None, compare_with_cpu=False)
    cause, detail = classify(answer)["cause"]
    assert cause == "c" and CAUSES[cause] == "harness: config could not be shrunk"
    assert detail.startswith("harness: config could not be shrunk: ")
    assert "mamba_n_heads must divide" in detail and "set for bamba" in detail  # the targeted attempt was made too


def test_logits_record_the_size_of_their_difference_matched_or_not():
    import torch

    expected = torch.tensor([[1.0, -2.0, 4.0]])
    matched, detail = arch_check._compare_logits(expected + torch.tensor([[0.0, 0.0, 2e-3]]), expected)
    assert matched and detail.startswith("max abs error 0.002, max rel error 0.0005, ")  # within 1e-4 + 1e-3 x 4
    matched, detail = arch_check._compare_logits(expected + torch.tensor([[0.0, 0.0827, 0.0]]), expected)
    assert not matched
    assert detail.startswith("logits differ: max abs error 0.0827, max rel error 0.0414, ")
    assert detail.endswith("x the tolerance (rtol 0.001, atol 0.0001)")
    assert arch_check._compare_logits(expected, expected) == (True, "")
