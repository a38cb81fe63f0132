"""The counting in torchclaims.coverage: outcomes, denominator, time budget."""

from __future__ import annotations

import pytest

from torchclaims.coverage import CoverageReport, Evidence, ItemResult, NoReference, Outcome, Unsupported, run_items


class FakeClock:
    """A clock that advances only when an item says so, so budgets are exact."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def item(self, seconds: float, result=True):
        def run():
            self.now += seconds
            if isinstance(result, BaseException):
                raise result
            return result

        return run


def test_each_outcome_is_counted_once():
    clock = FakeClock()
    items = [
        ("good", clock.item(1, Evidence(match=True, detail="exact", values={"max_err": 0.0}))),
        ("also-good", clock.item(1, True)),
        ("wrong", clock.item(1, Evidence(match=False, detail="max err 3"))),
        ("bool-wrong", clock.item(1, False)),
        ("raises", clock.item(1, RuntimeError("kernel missing\nsecond line"))),
        ("lacks", clock.item(1, Unsupported("no fp64 on this device"))),
        ("cpu-broke", clock.item(1, NoReference("CPU reference raised"))),
    ]
    report = run_items(items, budget_s=None, clock=clock)
    counts = report.counts()
    assert counts == {
        Outcome.MATCH: 2,
        Outcome.MISMATCH: 2,
        Outcome.FAILS: 1,
        Outcome.UNSUPPORTED: 1,
        Outcome.NO_REFERENCE: 1,
        Outcome.NOT_REACHED: 0,
    }
    assert [r.name for r in report.results] == [name for name, _ in items]
    assert report.names(Outcome.MISMATCH) == ["wrong", "bool-wrong"]
    by_name = {r.name: r for r in report.results}
    assert by_name["raises"].detail == "RuntimeError: kernel missing"
    assert by_name["lacks"].detail == "Unsupported: no fp64 on this device"
    assert by_name["good"].values == {"max_err": 0.0}
    assert by_name["good"].duration_s == 1.0
    assert by_name["cpu-broke"].detail == "NoReference: CPU reference raised"
    assert report.elapsed_s == 7.0
    assert report.complete


def test_share_uses_every_listed_item_as_denominator():
    clock = FakeClock()
    items = [(f"m{i}", clock.item(1, True)) for i in range(3)]
    items += [("bad", clock.item(1, False)), ("boom", clock.item(1, ValueError("x")))]
    items += [(f"late{i}", clock.item(1, True)) for i in range(5)]
    report = run_items(items, budget_s=5, clock=clock)
    assert report.total == 10
    assert report.matched == 3
    assert report.share == pytest.approx(0.3)  # 3 of all 10, not 3 of the 5 reached
    assert report.reached == 5
    assert not report.complete
    assert report.summary().startswith("3/10 match (30.0%) of all 10 listed items;")
    assert "5 not reached" in report.summary()


def test_budget_exhaustion_marks_the_rest_not_reached_never_passing():
    clock = FakeClock()
    ran = []

    def item(name, seconds):
        def run():
            ran.append(name)
            clock.now += seconds
            return True

        return run

    items = [("a", item("a", 2)), ("b", item("b", 2)), ("c", item("c", 2)), ("d", item("d", 2))]
    report = run_items(items, budget_s=3, clock=clock)
    # a starts at 0, b starts at 2 (< 3) and overruns to 4; c would start at 4 >= 3: not reached
    assert ran == ["a", "b"]
    assert [r.outcome for r in report.results] == [Outcome.MATCH, Outcome.MATCH, Outcome.NOT_REACHED, Outcome.NOT_REACHED]
    assert report.counts()[Outcome.NOT_REACHED] == 2
    assert report.share == 0.5
    assert report.elapsed_s == 4.0  # overshoot by at most the item that was running
    assert all("budget" in r.detail for r in report.results if r.outcome is Outcome.NOT_REACHED)


def test_no_reference_counts_against_share_but_not_judged_share():
    clock = FakeClock()
    items = [("a", clock.item(0, True)), ("b", clock.item(0, False)), ("c", clock.item(0, NoReference("x")))]
    # NoReference wins even when the caller lists a broader exception type as unsupported
    report = run_items(items, clock=clock, unsupported=(Exception,))
    assert report.counts()[Outcome.NO_REFERENCE] == 1
    assert report.share == pytest.approx(1 / 3)
    assert report.judged_share == pytest.approx(1 / 2)
    assert "1 no reference" in report.summary()


def test_zero_budget_reaches_nothing():
    clock = FakeClock()
    report = run_items([("a", clock.item(1)), ("b", clock.item(1))], budget_s=0, clock=clock)
    assert report.counts()[Outcome.NOT_REACHED] == 2
    assert report.matched == 0 and report.share == 0.0


def test_caller_chosen_exception_types_count_as_unsupported():
    clock = FakeClock()
    items = [("no-kernel", clock.item(0, NotImplementedError("aten::foo"))), ("other", clock.item(0, KeyError("k")))]
    report = run_items(items, clock=clock, unsupported=(NotImplementedError,))
    assert [r.outcome for r in report.results] == [Outcome.UNSUPPORTED, Outcome.FAILS]


def test_keyboard_interrupt_propagates():
    clock = FakeClock()
    with pytest.raises(KeyboardInterrupt):
        run_items([("a", clock.item(0, KeyboardInterrupt()))], clock=clock)


def test_bad_return_value_is_a_script_bug():
    with pytest.raises(TypeError, match="returned str"):
        run_items([("a", lambda: "yes")])


def test_duplicate_names_and_non_callables_are_rejected_before_running():
    ran = []
    with pytest.raises(ValueError, match="listed twice"):
        run_items([("a", lambda: ran.append(1) or True), ("a", lambda: True)])
    with pytest.raises(TypeError, match="not callable"):
        run_items([("a", lambda: ran.append(1) or True), ("b", 42)])
    assert ran == []


def test_match_is_coerced_to_bool():
    class TensorLike:  # e.g. a 0-d bool tensor
        def __bool__(self):
            return True

    assert Evidence(match=TensorLike()).match is True


def test_empty_list_and_on_result_callback():
    assert run_items([]).share == 0.0
    seen = []
    run_items([("a", lambda: True), ("b", lambda: False)], on_result=seen.append)
    assert [(r.name, r.outcome) for r in seen] == [("a", Outcome.MATCH), ("b", Outcome.MISMATCH)]


def test_table_lists_rows_and_filters_by_outcome():
    report = CoverageReport(
        results=(
            ItemResult("llama", Outcome.MATCH, "tokens equal", {"max_err": 1.5e-7}, 0.25),
            ItemResult("bloom", Outcome.FAILS, "RuntimeError: boom", {}, 0.1),
        ),
        budget_s=60,
        elapsed_s=0.35,
    )
    table = report.table()
    assert table.splitlines()[0].split() == ["item", "outcome", "s", "detail"]
    assert "llama  match" in table and "max_err=1.5e-07; tokens equal" in table
    only_failures = report.table(outcomes=[Outcome.FAILS])
    assert "bloom" in only_failures and "llama" not in only_failures
