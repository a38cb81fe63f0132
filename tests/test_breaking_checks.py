"""Each claim's check, run against a stand-in on which the claim is false, is refuted for the stated reason."""

from __future__ import annotations

from breaking import lazy_moves, outcomes, refuted, run_gallery

from torchclaims.records import Verdict


def test_eager_mode_holds_on_an_eager_stand_in(monkeypatch, tmp_path):
    record = run_gallery("torchneuron_eager_mode", monkeypatch, tmp_path, as_backend="neuron")
    assert record.verdict is Verdict.HOLDS, outcomes(record)


def test_eager_mode_is_refuted_on_a_lazy_backend(monkeypatch, tmp_path):
    lazy_moves(monkeypatch)
    record = run_gallery("torchneuron_eager_mode", monkeypatch, tmp_path, as_backend="neuron")
    assert refuted(record, "not when a value is read"), outcomes(record)
