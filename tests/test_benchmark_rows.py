"""The benchmarks that write rows of benchmarks/measured.json: the sphinx-gallery releases and the lanes' times.
A row says what was measured or checked, and a check that could not run is never written as passed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def benchmarks(monkeypatch, tmp_path):
    """The benchmark modules, writing into a copy of measured.json."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import lane_times
    import measured_rows
    import sphinx_gallery_releases

    copy = tmp_path / "measured.json"
    shutil.copy(ROOT / "benchmarks" / "measured.json", copy)
    monkeypatch.setattr(measured_rows, "MEASURED", copy)
    return measured_rows, sphinx_gallery_releases, lane_times, copy


def groups(path: Path) -> list[str]:
    return [f["group"] for f in json.loads(path.read_text(encoding="utf-8"))["figures"]]


def test_a_groups_rows_are_replaced_in_place_one_a_line(benchmarks):
    measured_rows, _, _, path = benchmarks
    before = groups(path)
    measured_rows.replace_group("downloads", [measured_rows.row("downloads", "one", "1 MB", "du")])
    after = groups(path)
    assert after[0] == "downloads" and after.count("downloads") == 1
    assert [g for g in after if g != "downloads"] == [g for g in before if g != "downloads"]
    measured_rows.replace_group("new", [measured_rows.row("new", "a", "b", "c")])
    assert groups(path)[-1] == "new"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert sum(line.startswith('  {"group": ') for line in lines) == len(groups(path)), "one row a line"


def test_a_release_that_could_not_be_checked_is_recorded_so_and_fails_the_run(benchmarks, monkeypatch):
    _, releases, _, path = benchmarks
    outcomes = {"0.22.0": ("passed", "15 passed"), "0.22.1": ("could not check", "install: no such release")}
    monkeypatch.setattr(releases, "releases_in", lambda requirement: list(outcomes))
    monkeypatch.setattr(releases, "check", lambda version, folder: outcomes[version])
    assert releases.main([]) == 1
    rows = [f for f in json.loads(path.read_text())["figures"] if f["group"] == "sphinx-gallery"]
    assert [r["figure"] for r in rows] == ["passed: 15 passed", "could not check: install: no such release"]
    assert rows[1]["what"].startswith("sphinx-gallery 0.22.1, pinned ")
    with pytest.raises(SystemExit):
        releases.main(["--versions", "0.21.0"])  # outside the pinned range


def test_the_lanes_are_recorded_only_when_all_three_ran_and_a_failing_one_says_so(benchmarks, monkeypatch):
    _, _, lanes, path = benchmarks
    monkeypatch.setattr(lanes, "timed", lambda command, env: (90.0, 1 if "-m" in command[3:] else 0, "3 passed"))
    before = path.read_text()
    assert lanes.main(["--lanes", "fast"]) == 1 and path.read_text() == before
    assert lanes.main(["--select", "tests/test_layout.py"]) == 1 and path.read_text() == before
    assert lanes.main([]) == 1
    rows = [f for f in json.loads(path.read_text())["figures"] if f["group"] == "lanes"]
    assert [r["figure"] for r in rows] == [
        "1.5 min (failed, exit 1: 3 passed)",
        "1.5 min (3 passed)",
        "1.5 min (3 passed)",
    ]
    assert rows[0]["what"].startswith("the fast lane: nox -s tests -- --fast, on ")


def test_a_lanes_figure_ends_with_pytests_summary_or_the_builds_count_of_warnings(benchmarks):
    _, _, lanes, _ = benchmarks
    assert lanes.closing(["collected 3", "==== 3 passed in 1.0s ===="]) == "3 passed in 1.0s"
    warning = "/home/me/x.json: WARNING: names figure figures/f.png, which is not in /home/me/results"
    assert lanes.closing(["reading sources", warning, warning]) == "2 warning(s)"
    assert lanes.closing([]) == "(no output)"


def test_the_lanes_run_the_noxfiles_own_commands(benchmarks):
    _, _, lanes, _ = benchmarks
    commands = lanes.lanes([])
    nox = lanes.noxfile()
    assert commands["fast"][1][-2:] == ["-m", nox.FAST_LANE]
    assert commands["docs"][1][-len(nox.SPHINX_BUILD) :] == list(nox.SPHINX_BUILD)
    assert commands["docs"][2]["TORCHCLAIMS_FORCE"] == "1"
