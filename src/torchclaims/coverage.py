"""Measured coverage: run a documented list of items within a time budget and count outcomes.

A coverage figure ("89% of architectures run", "600 operators supported") is
only as good as its denominator. This module fixes the denominator up front:
a script names every item it means to try (an architecture, an operator), each
with a callable that compares the configured device against a reference, and
:func:`run_items` runs them in order until the list or the time budget runs out::

    from torchclaims.coverage import Evidence, run_items

    def llama():
        out, ref = run_on_device(), run_on_cpu()
        return Evidence(match=torch.allclose(out, ref), detail=f"max err {err:.2g}")

    report = run_items([("llama", llama), ("gpt2", gpt2)], budget_s=60)
    print(report.table())
    print(report.summary())      # "1/2 match (50.0%) of all 2 listed items; ..."

Every listed item ends with exactly one outcome (:class:`Outcome`):

``match``
    the callable returned evidence that the device agrees with the reference;
``mismatch``
    it returned evidence that it does not (it ran, the result is wrong);
``fails``
    it raised an exception: the item did not run to completion on the device;
``unsupported``
    it raised :class:`Unsupported` (or one of the exception types the caller
    passes as ``unsupported=``): the backend lacks what the item needs;
``no reference``
    it raised :class:`NoReference`: the reference it compares against could
    not be computed (for example the CPU run itself raised), so the device
    was never judged;
``not reached``
    the time budget ran out before the item was started.

:attr:`CoverageReport.share` is ``match / all listed items``: the denominator
is the whole documented list, so an item that failed, was unsupported, had no
reference or was never reached counts against the figure, never for it.
"Could not check" is not passing. :attr:`CoverageReport.judged_share` leaves
out only the ``no reference`` items, for readers who want the share among the
items that could be compared at all; always state which one is shown.

The budget is checked *between* items: an item that has started runs to the
end (a Python callable cannot be interrupted safely, least of all inside a
device runtime), so the run can overshoot the budget by at most one item;
:attr:`CoverageReport.elapsed_s` shows by how much. Callers that need a
per-item limit must impose it inside their callables.

Pure Python: nothing here imports torch, so the counting is testable anywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

__all__ = ["CoverageReport", "Evidence", "ItemResult", "NoReference", "Outcome", "Unsupported", "run_items"]


class Outcome(str, Enum):
    """What happened to one listed item."""

    MATCH = "match"
    MISMATCH = "mismatch"
    FAILS = "fails"
    UNSUPPORTED = "unsupported"
    NO_REFERENCE = "no reference"
    NOT_REACHED = "not reached"


class Unsupported(Exception):
    """Raised by an item when the backend lacks what the item needs."""


class NoReference(Exception):
    """Raised by an item when its reference (e.g. the CPU result) cannot be computed."""


@dataclass(frozen=True)
class Evidence:
    """What an item returns: did the device agree with the reference, and why.

    ``values`` holds numbers a reader may want per item (a max abs error, a
    token count); they are kept as given and shown by :meth:`CoverageReport.table`.
    An item may also return a plain ``bool``, read as ``Evidence(match=...)``.
    """

    match: bool
    detail: str = ""
    values: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # accept a 0-d bool tensor or numpy bool as ``match``; store a plain bool
        object.__setattr__(self, "match", bool(self.match))


@dataclass(frozen=True)
class ItemResult:
    """The outcome of one listed item."""

    name: str
    outcome: Outcome
    detail: str = ""
    values: Mapping[str, object] = field(default_factory=dict)
    duration_s: float = 0.0


@dataclass(frozen=True)
class CoverageReport:
    """Per-item outcomes of one run, in list order, and the figures derived from them."""

    results: tuple[ItemResult, ...]
    budget_s: float | None
    elapsed_s: float

    @property
    def total(self) -> int:
        """Number of items in the documented list: the denominator of :attr:`share`."""
        return len(self.results)

    def counts(self) -> dict[Outcome, int]:
        """How many items ended with each outcome (every outcome present, zeros included)."""
        tally = {outcome: 0 for outcome in Outcome}
        for result in self.results:
            tally[result.outcome] += 1
        return tally

    def names(self, outcome: Outcome) -> list[str]:
        """The items, in list order, that ended with ``outcome``."""
        return [r.name for r in self.results if r.outcome is outcome]

    @property
    def matched(self) -> int:
        return self.counts()[Outcome.MATCH]

    @property
    def reached(self) -> int:
        """Items that were started before the budget ran out."""
        return self.total - self.counts()[Outcome.NOT_REACHED]

    @property
    def complete(self) -> bool:
        """True when every listed item was reached."""
        return self.reached == self.total

    @property
    def share(self) -> float:
        """``matched / total`` over *all* listed items (0.0 for an empty list)."""
        return self.matched / self.total if self.total else 0.0

    @property
    def judged_share(self) -> float:
        """``matched / (total - no reference)``: the share among items that had a reference."""
        judged = self.total - self.counts()[Outcome.NO_REFERENCE]
        return self.matched / judged if judged else 0.0

    def summary(self) -> str:
        """One line: the share, its denominator, and the other outcomes."""
        counts = self.counts()
        others = ", ".join(f"{counts[o]} {o.value}" for o in Outcome if o is not Outcome.MATCH)
        budget = "no time budget" if self.budget_s is None else f"budget {self.budget_s:g} s"
        return (
            f"{self.matched}/{self.total} match ({100 * self.share:.1f}%) of all {self.total} listed items; "
            f"{others}; {self.elapsed_s:.1f} s, {budget}"
        )

    def table(self, outcomes: Iterable[Outcome] | None = None, detail_width: int = 70) -> str:
        """A fixed-width text table, one row per item (only ``outcomes`` if given)."""
        wanted = set(Outcome if outcomes is None else outcomes)
        rows = [r for r in self.results if r.outcome in wanted]
        width = max([len("item"), *(len(r.name) for r in rows)])
        lines = [f"{'item':<{width}}  {'outcome':<12}  {'s':>6}  detail"]
        for r in rows:
            extra = ", ".join(f"{k}={_fmt(v)}" for k, v in r.values.items())
            detail = "; ".join(filter(None, [extra, r.detail]))
            if len(detail) > detail_width:
                detail = detail[: detail_width - 3] + "..."
            lines.append(f"{r.name:<{width}}  {r.outcome.value:<12}  {r.duration_s:>6.2f}  {detail}")
        return "\n".join(lines)


def _fmt(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def run_items(
    items: Iterable[tuple[str, Callable[[], Evidence | bool]]],
    budget_s: float | None = None,
    *,
    unsupported: tuple[type[BaseException], ...] = (),
    clock: Callable[[], float] = time.perf_counter,
    on_result: Callable[[ItemResult], None] | None = None,
) -> CoverageReport:
    """Run each ``(name, callable)`` in order and tally one :class:`Outcome` per item.

    ``items`` is the documented list; it is read in full before anything runs,
    so its length is the denominator even when the budget stops the run early.
    Names must be unique. ``budget_s`` (None: no limit) is checked before each
    item; once ``clock() - start >= budget_s`` the remaining items are
    ``not reached``. Exceptions of the types in ``unsupported`` (in addition to
    :class:`Unsupported`) count as ``unsupported``, any other ``Exception`` as
    ``fails``; ``KeyboardInterrupt`` and ``SystemExit`` propagate. A callable
    that returns something other than :class:`Evidence` or ``bool`` is a bug in
    the script, not a device outcome: :class:`TypeError` is raised.
    :class:`NoReference` counts as ``no reference`` (checked first, so it wins
    even if listed in ``unsupported``).
    ``on_result`` is called with each result as soon as it is known (progress).
    """
    listed = list(items)
    seen: set[str] = set()
    for name, run in listed:
        if name in seen:
            raise ValueError(f"item {name!r} is listed twice; names must be unique")
        if not callable(run):
            raise TypeError(f"item {name!r}: {run!r} is not callable")
        seen.add(name)
    unsupported_types = (Unsupported, *unsupported)

    start = clock()
    results: list[ItemResult] = []
    for name, run in listed:
        if budget_s is not None and clock() - start >= budget_s:
            result = ItemResult(name, Outcome.NOT_REACHED, f"time budget of {budget_s:g} s spent before this item")
        else:
            began = clock()
            try:
                evidence = run()
            except NoReference as exc:
                outcome, detail, values = Outcome.NO_REFERENCE, _first_line(exc), {}
            except unsupported_types as exc:
                outcome, detail, values = Outcome.UNSUPPORTED, _first_line(exc), {}
            except Exception as exc:  # the item broke on the device: that is the finding
                outcome, detail, values = Outcome.FAILS, _first_line(exc), {}
            else:
                if isinstance(evidence, bool):
                    evidence = Evidence(match=evidence)
                if not isinstance(evidence, Evidence):
                    raise TypeError(f"item {name!r} returned {type(evidence).__name__}; return Evidence or bool")
                outcome = Outcome.MATCH if evidence.match else Outcome.MISMATCH
                detail, values = evidence.detail, dict(evidence.values)
            result = ItemResult(name, outcome, detail, values, round(clock() - began, 4))
        results.append(result)
        if on_result is not None:
            on_result(result)
    return CoverageReport(results=tuple(results), budget_s=budget_s, elapsed_s=round(clock() - start, 4))
