"""A claim across releases: the strip, the sentence it says, neighbouring pairs, and upgrade comparisons."""

from __future__ import annotations

from datetime import timedelta

from factories import STARTED, make_environment, make_record
from torchclaims.evidence.records import CheckResult, Measurement, Verdict
from torchclaims.evidence.store import THIS_BUILD, Entry, Store
from torchclaims.history.changes import predecessor
from torchclaims.history.releases import Series
from torchclaims.history.upgrades import compare, moved_beyond_tolerance
from torchclaims.history.version_history import (
    Run,
    baseline_for,
    consecutive,
    range_sentence,
    runs,
    series_runs,
    strand_of,
    strip,
)

TORCH = Series("torch", "cpu", "torch", ("2.9.0", "2.10.0", "2.11.0", "2.12.1"), held={"numpy": "2.4.6"})


def run(version: str, verdicts: dict[str, str], origin: str | None = None, day: int = 0, **env) -> Run:
    environment = make_environment(torch=version, **env)
    records = {
        claim_id: make_record(claim_id, verdict, environment=environment, started_at=STARTED + timedelta(days=day))
        for claim_id, verdict in verdicts.items()
    }
    return Run(origin or f"cpu-torch{version}.json", environment, records)


def sentence(*verdicts: str | None) -> str:
    chosen = {
        version: run(version, {"c": verdict})
        for version, verdict in zip(TORCH.versions, verdicts, strict=True)
        if verdict is not None
    }
    return range_sentence(TORCH, strip(TORCH, chosen, "c"))


def test_the_sentence_says_since_when_a_claim_holds_and_what_came_before():
    assert sentence("unverified", "unverified", "holds", "holds") == (
        "holds since torch 2.11.0; unverified before torch 2.11.0 (unverified for a test reason)"
    )
    assert sentence("holds", "holds", "holds", "refuted") == "refuted from torch 2.12.1; holds before torch 2.12.1"
    assert (
        sentence("holds", "holds", "holds", "holds")
        == "holds on every torch release with a run (torch 2.9.0 to 2.12.1)"
    )


def test_a_release_without_a_run_is_named_and_never_counted():
    text = sentence("holds", None, "holds", "holds")
    assert text == "holds on every torch release with a run (torch 2.9.0 to 2.12.1); no run of 2.10.0"
    assert sentence(None, None, None, None) == "not run on any torch release of the sweep"


def test_a_verdict_that_flips_more_than_once_lists_every_stretch():
    assert sentence("holds", "refuted", "refuted", "holds") == (
        "holds since torch 2.12.1; refuted on torch 2.10.0 to 2.11.0; holds on torch 2.9.0"
    )


def test_stale_runs_are_marked():
    chosen = {v: run(v, {"c": "holds"}) for v in TORCH.versions}
    steps = strip(TORCH, chosen, "c", stale=lambda record: record.environment.torch == "2.9.0")
    assert [s.stale for s in steps] == [True, False, False, False]
    assert range_sentence(TORCH, steps).endswith("the runs of 2.9.0 used an older version of the script")


def test_the_store_groups_runs_and_strips_prefer_this_build_to_a_file_of_its_release():
    store = Store(build_environment=make_environment(torch="2.10.0"))
    for r in (run("2.9.0", {"a": "holds", "b": "holds"}), run("2.10.0", {"a": "refuted"})):
        for record in r.records.values():
            store.add(Entry(record, r.origin))
    build = run("2.10.0", {"a": "holds"}, origin=THIS_BUILD, day=1)
    store.add(Entry(build.records["a"], THIS_BUILD))
    found = runs(store)
    assert sorted(r.origin for r in found) == ["cpu-torch2.10.0.json", "cpu-torch2.9.0.json", THIS_BUILD]
    [strand] = series_runs(found, TORCH)
    assert strand.runs["2.10.0"].origin == THIS_BUILD
    [committed] = series_runs([r for r in found if r.committed], TORCH)
    assert committed.runs["2.10.0"].origin == "cpu-torch2.10.0.json"
    assert consecutive(committed.runs) == [("2.9.0", "2.10.0")]


def test_a_run_with_other_held_versions_is_no_release_of_the_series():
    other = run("2.10.0", {"a": "holds"}, packages={"torch": "2.10.0", "numpy": "1.26.4"})
    assert series_runs([other], TORCH) == []


def test_two_builds_of_one_release_tell_no_version_story():
    """The site's torch 2.13.0+cpu against a sweep of CUDA wheels: the +cpu run is no later
    release of the CUDA strand, so no sentence says the claim broke in 2.13.0."""
    series = Series("torch", "cpu", "torch", ("2.12.1", "2.13.0"), held={"numpy": "2.4.6"})
    sweep = [run(v, {"c": "holds"}, origin=f"cpu-torch{v}.json", day=-1) for v in ("2.12.1+cu130", "2.13.0+cu130")]
    build = run("2.13.0+cpu", {"c": "refuted"}, origin=THIS_BUILD)
    strands = series_runs([*sweep, build], series)
    assert [(s.kind, list(s.runs), s.builds) for s in strands] == [
        ("cuda", ["2.12.1", "2.13.0"], "CUDA build (+cu130)"),
        ("cpu", ["2.13.0"], "CPU-only build (+cpu)"),
    ]
    sentences = [range_sentence(series, strip(series, s.runs, "c")) for s in strands]
    assert sentences == [
        "holds on every torch release with a run (torch 2.12.1 to 2.13.0)",
        "refuted on every torch release with a run (torch 2.13.0); no run of 2.12.1",
    ]
    assert strand_of(strands, build.environment) is strands[1]


def test_the_cuda_version_of_a_wheel_moves_with_the_release_and_is_named():
    series = Series("torch", "cpu", "torch", ("2.10.0", "2.11.0"), held={"numpy": "2.4.6"})
    [strand] = series_runs([run("2.10.0+cu128", {"c": "holds"}), run("2.11.0+cu130", {"c": "refuted"})], series)
    assert strand.builds == "CUDA builds (+cu128, +cu130)"
    assert range_sentence(series, strip(series, strand.runs, "c")) == (
        "refuted from torch 2.11.0; holds before torch 2.11.0"
    )


def test_a_record_is_compared_with_the_last_one_of_its_own_build():
    """The 'what changed' page: this build's +cpu record against the newest +cpu record before it,
    not against the CUDA wheel's run of the same day; with none of its kind, the one before it."""
    entries = [
        Entry(run(v, {"c": "holds"}, day=-i).records["c"], f"cpu-torch{v}.json")
        for i, v in enumerate(("2.13.0+cpu", "2.13.0+cu130", "2.12.1+cpu"))
    ]
    assert predecessor(entries).origin == "cpu-torch2.12.1+cpu.json"
    assert predecessor(entries[:2]).origin == "cpu-torch2.13.0+cu130.json"


def test_a_run_whose_torch_is_no_version_stands_for_no_release():
    broken = run("2.10.0-custom", {"c": "holds"})  # a results file's fingerprint that PEP 440 cannot read
    assert TORCH.release_of(broken.environment) == "2.10.0-custom"
    assert series_runs([broken], TORCH) == []


def test_the_build_is_compared_with_its_release_or_the_nearest_earlier_one():
    committed = {v: run(v, {"a": "holds"}) for v in ("2.9.0", "2.11.0")}
    assert baseline_for(committed, "2.12.1").origin == "cpu-torch2.11.0.json"
    assert baseline_for(committed, "2.9.0").origin == "cpu-torch2.9.0.json"
    assert baseline_for(committed, "2.0.0").origin == "cpu-torch2.9.0.json"
    assert baseline_for({}, "2.9.0") is None


def measurement(value, tolerance="", unit="") -> Measurement:
    return Measurement(name="m", value=value, tolerance=tolerance, unit=unit)


def test_measurements_move_beyond_tolerance_by_their_kind():
    bound = "<= 1e-05 + 0.0001 x |reference|"
    assert not moved_beyond_tolerance(measurement(1e-7, bound), measurement(3e-6, bound))
    assert moved_beyond_tolerance(
        measurement(1e-7, bound), measurement(2e-5, bound)
    )  # moved more than the bound, and crossed it
    assert moved_beyond_tolerance(measurement(3, ">= 1"), measurement(0, ">= 1"))
    assert not moved_beyond_tolerance(
        measurement(4.1e4, ">= 10"), measurement(2.4e5, ">= 10")
    )  # far above a lower bound
    assert moved_beyond_tolerance(
        measurement(0.5, "<= 1e-05"), measurement(0.1, "<= 1e-05")
    )  # an error that moved by more than its tolerance
    assert moved_beyond_tolerance(measurement("cpu", "== 'cpu'"), measurement("meta", "== 'cpu'"))
    assert moved_beyond_tolerance(measurement(2, ""), measurement(3, ""))  # a count
    assert moved_beyond_tolerance(measurement(True), measurement(False))
    assert not moved_beyond_tolerance(measurement(0.52, ""), measurement(0.91, ""))  # a timing nobody judges
    assert not moved_beyond_tolerance(measurement(0.5, "budget 60 s"), measurement(9.0, "budget 60 s"))


def test_an_upgrade_comparison_names_packages_verdicts_and_measurements():
    def checked(value: float):
        return [CheckResult(name="matches", outcome=Verdict.HOLDS, measurements=[measurement(value, "<= 1e-05", "")])]

    old = run("2.9.0", {"a": "holds", "b": "holds", "gone": "holds"})
    new = run("2.10.0", {"a": "refuted", "b": "holds", "added": "holds"})
    old.records["b"] = old.records["b"].model_copy(update={"checks": checked(0.0)})
    new.records["b"] = new.records["b"].model_copy(update={"checks": checked(0.5)})
    comparison = compare(old, new)
    assert comparison.packages["torch"] == ("2.9.0", "2.10.0")
    assert [(c.claim_id, c.old.verdict.value, c.new.verdict.value) for c in comparison.verdicts] == [
        ("a", "holds", "refuted")
    ]
    assert [c.claim_id for c in comparison.regressions] == ["a"]
    assert [(m.claim_id, m.what, m.before, m.after) for m in comparison.moved["measurements"]] == [
        ("b", "matches :: m", "0", "0.5")
    ]
    assert (comparison.only_old, comparison.only_new, comparison.compared) == (["gone"], ["added"], 2)


def test_a_reason_shown_beside_the_sentence_is_left_out_of_it_and_only_that_one():
    chosen = {
        v: run(v, {"c": verdict})
        for v, verdict in zip(TORCH.versions, ["error", "error", "unverified", "unverified"], strict=True)
    }
    steps = strip(TORCH, chosen, "c")
    assert range_sentence(TORCH, steps, said="unverified for a test reason") == (
        "unverified from torch 2.11.0; error before torch 2.11.0 (error for a test reason)"
    )
    assert "unverified from torch 2.11.0 (unverified for a test reason)" in range_sentence(TORCH, steps)


def test_a_series_of_another_package_names_the_build_as_torchs():
    """torch_xla's wheels carry no build label of their own: the build is the torch beneath them."""
    series = Series("torch", "cpu", "torch", ("2.10.0",), held={"numpy": "2.4.6"})
    [strand] = series_runs([run("2.10.0+cu128", {"c": "holds"})], series)
    assert strand.builds_under("torch") == "CUDA build (+cu128)"
    assert strand.builds_under("torch_xla") == "with torch's CUDA build (+cu128)"
