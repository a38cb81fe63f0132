"""The check in a team's own test suite (pytest, or any runner that reports an AssertionError)::

    from torchclaims.check.testing import assert_moves

    def test_model_moves_to_xla():
        assert_moves(MyModel(), (torch.randn(2, 3),), loss=lambda out: out.sum(), targets=["xla"])

It fails, with the terminal summary as its message, when an operator the model
uses is known to give wrong results on a targeted backend.
"""

from __future__ import annotations

from . import check
from .report import Report
from .terminal import summary


def assert_moves(model, example_inputs, loss=None, **options) -> Report:
    """The static report; AssertionError when it fails its gate (``options``: those of :func:`check`)."""
    report = check(model, example_inputs, loss, **options)
    if report.failed:
        raise AssertionError(summary(report))
    return report
