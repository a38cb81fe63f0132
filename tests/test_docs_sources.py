"""README and CONTRIBUTING stay short and quote only generated figures; the docs pages' figures
and limits come from their source."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kb import build, page_text, write_site
from test_docs_figures import hand_typed_figures
from torchclaims import limits
from torchclaims.claims import MAX_QUOTE_WORDS
from torchclaims.sphinxext.directives.figures import BUILD_SPEED, MEASURED, limit_rows

ROOT = Path(__file__).resolve().parents[1]
README, CONTRIBUTING = ROOT / "README.md", ROOT / "CONTRIBUTING.md"


def generated() -> set[str]:
    """Every figure a front page may quote: those of the committed measurements and of the limits."""
    measured = json.loads((ROOT / MEASURED).read_text(encoding="utf-8"))
    speed = json.loads((ROOT / BUILD_SPEED).read_text(encoding="utf-8"))
    texts = [f["figure"] for f in measured["figures"]] + [f"{f['value']}{f['unit']}" for f in speed["figures"]]
    return {figure for text in texts + [limit for _, limit in limit_rows()] for _, figure in hand_typed_figures(text)}


def test_readme_is_one_screen_and_contributing_starts_with_a_short_path():
    assert README.stat().st_size <= 10 * 1024 and len(README.read_text().splitlines()) <= 90
    text = CONTRIBUTING.read_text(encoding="utf-8")
    assert CONTRIBUTING.stat().st_size <= 15 * 1024
    path = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert len(path) <= 15 and path[-1].startswith("git push") and any("torchclaims new" in line for line in path)


@pytest.mark.parametrize("page", [README, CONTRIBUTING], ids=lambda p: p.name)
def test_front_pages_quote_only_figures_their_sources_hold(page):
    allowed = generated()
    copied = [figure for _, figure in hand_typed_figures(page.read_text(encoding="utf-8")) if figure not in allowed]
    assert not copied, f"{page.name} states figures no committed measurement or limit holds: {copied}"
    words = {int(n) for n in re.findall(r"under (\d+) words", page.read_text(encoding="utf-8"))}
    assert words <= {MAX_QUOTE_WORDS}


def test_a_figure_that_drifts_from_its_source_is_caught():
    assert "3.5 min" in generated()
    drifted = "On 2 cores a first `nox -s docs` took 3.6 min, and a wheel of 190 MB."
    assert [f for _, f in hand_typed_figures(drifted) if f not in generated()] == ["3.6 min"]


def test_the_limits_table_follows_limits_py(monkeypatch):
    assert dict(limit_rows())["gallery script"] == f"{limits.LIMITS.script_bytes // limits.KIB} KiB of UTF-8"
    monkeypatch.setattr(limits, "LIMITS", limits.Limits(script_bytes=2 * limits.MIB))
    assert dict(limit_rows())["gallery script"] == "2 MiB of UTF-8"


def test_the_limits_table_shows_each_bound_of_a_claim_by_its_name_and_value(monkeypatch):
    """An error record names the field it went past; the table shows each one, with its value."""
    rows = " ".join(limit for _, limit in limit_rows()) + " ".join(what for what, _ in limit_rows())
    names = ("claim_processes", "claim_tasks", "process_memory_share", "claim_memory_share", "open_files")
    assert all(name in rows for name in (*names, "folder_bytes", "folder_depth", "folder_files", "figure_bytes"))
    assert all(name in rows for name in ("MAX_FIGURES", "compiler_cache_bytes", "compiler_caches_total_bytes"))
    monkeypatch.setattr(limits, "LIMITS", limits.Limits(claim_processes=77, folder_bytes=3 * limits.GIB))
    rows = dict(limit_rows())
    assert rows["a claim's processes (claim_processes, claim_tasks)"].startswith("77 at once")
    assert rows["a claim's own folder (folder_bytes, folder_depth, folder_files)"].startswith("3 GiB of disk")


def test_the_committed_speed_figures_have_the_shape_the_benchmark_writes(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import build_speed

    written = build_speed.report(build_speed.Bench(tmp_path), None, {})
    committed = json.loads((ROOT / BUILD_SPEED).read_text(encoding="utf-8"))
    assert set(committed) == set(written)
    figure_keys = {"figure", "value", "unit", "target", "verdict"}
    assert all(set(f) == figure_keys for f in committed["figures"]) and committed["figures"]


def test_the_benchmark_takes_each_ratio_from_the_medians_and_compares_every_cold_builds_verdicts(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import build_speed

    from build_watch import Run

    def run(seconds: float) -> Run:
        return Run([], seconds, 0, 100.0, 90.0, [], [], [], "")

    bench = build_speed.Bench(tmp_path)
    site = {
        "claims": 2,
        "site cold": [run(60), run(90), run(66)],  # median 66
        "plain cold": [run(100), run(80), run(200)],  # median 100
        "site same": [run(1.0), run(9.0), run(1.2)],
        "plain same": [run(1.5), run(1.1), run(1.3)],
        "site touched": run(5),
        "plain touched": run(4),
        "verdicts": [({"a": "holds", "b": "refuted"}, {"a": "holds", "b": "refuted"})] * 2
        + [({"a": "holds", "b": "unverified"}, {"a": "holds", "b": "refuted"})],
        "compute": 100.0,
    }
    bench.rows = [("(c) torchclaims: nothing changed #1", run(1), 0)]
    figures = {f["figure"]: f for f in build_speed.report(bench, site, {})["figures"]}
    cold = figures["cold build / plain sphinx-gallery cold (medians of 3 each)"]
    assert (cold["value"], cold["verdict"]) == (0.66, "met")
    assert figures["cold builds #2: 2 workers / serial"]["value"] == 1.12
    assert figures["no-change rebuild / plain no-change rebuild (medians of 3)"]["value"] == round(1.2 / 1.3, 2)
    differ = figures["claims whose verdict differs between any two cold builds"]
    assert (differ["value"], differ["verdict"]) == (1, "NOT MET")


@pytest.mark.processes
def test_the_pages_render_the_figures_and_limits_from_their_files(tmp_path):
    write_site(tmp_path)
    (tmp_path / "benchmarks").mkdir()
    for name in (BUILD_SPEED, MEASURED):
        (tmp_path / name).write_text((ROOT / name).read_text(encoding="utf-8"))
    page = (
        "# Figures\n\n```{build-speed}\n```\n\n```{measured} commands\n```\n\n"
        "```{limits-table}\n```\n\n```{measured} no-such-group\n```\n"
    )
    (tmp_path / "docs" / "figures.md").write_text(page)
    (tmp_path / "index.md").write_text(
        (tmp_path / "index.md").read_text().replace("docs/topic\n", "docs/topic\ndocs/figures\n")
    )
    result = build(tmp_path, TORCHCLAIMS_EXECUTE="0", TORCHCLAIMS_PUBLISH_DIR="_build/site-100%")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "The site is in _build/site-100%." in result.stdout and "The HTML pages are in" not in result.stdout
    assert "torchclaims: 0 executable claims, this build: none; 0 attributed (no verdict)" in result.stdout
    text = page_text(tmp_path / "_build" / "html" / "docs" / "figures.html")
    speed = json.loads((ROOT / BUILD_SPEED).read_text(encoding="utf-8"))
    assert f"Measured {speed['measured_at']}" in text and speed["figures"][0]["figure"] in text
    assert "3.5 min" in text and f"{limits.LIMITS.results_file_bytes // limits.MIB} MiB" in text
    assert "no figures of group 'no-such-group'" in result.stderr
    (tmp_path / BUILD_SPEED).write_text("{not json")
    broken = build(tmp_path, TORCHCLAIMS_EXECUTE="0")
    assert "build_speed.json" in broken.stderr and "not valid JSON" in broken.stderr


# -- the argument kinds: listed by {argument-kinds} from their source, never retyped ------------------------

# The word prose names each kind by; each is in its kind's meaning, and a kind without one fails below.
KIND_WORDS = {"c": "complex", "e": "empty", "n": "negative", "k": "keepdim=True", "a": "accumulate=True"}
DOCS_PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "index.md", README, CONTRIBUTING]


def retyped_kind_lists(text: str) -> list[str]:
    """The paragraphs (and table rows) that name more than half the argument kinds: the list, typed where
    {argument-kinds} belongs."""
    blocks = [block.strip() for block in re.split(r"\n\s*\n", text)]
    paragraphs = [row for block in blocks for row in (block.splitlines() if block.startswith("|") else [block])]
    return [p for p in paragraphs if sum(word in p for word in KIND_WORDS.values()) > len(KIND_WORDS) / 2]


def test_each_argument_kind_has_the_word_prose_names_it_by():
    from torchclaims.evidence.coverage_table import ARGUMENT_KINDS as KIND_LEGEND

    assert set(KIND_WORDS) == set(KIND_LEGEND)
    assert all(KIND_WORDS[letter] in meaning for letter, meaning in KIND_LEGEND.items())


def test_a_retyped_list_of_argument_kinds_is_caught():
    retyped = (
        "- each sample's argument kinds are kept beside its code: the rank of each\n"
        "  tensor input, and whether it had a complex or an empty input, a negative\n"
        "  integer argument (a dim, start or shift), `keepdim=True` or\n  `accumulate=True`;\n"
    )
    others = "| a | table |\n|---|---|\n| complex | one |\n| empty | negative |\n\nA complex input, a negative start.\n"
    assert retyped_kind_lists("Intro.\n\n" + retyped + "\n" + others) == [retyped.strip()]


@pytest.mark.parametrize("page", DOCS_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_retypes_the_argument_kinds(page):
    assert retyped_kind_lists(page.read_text(encoding="utf-8")) == [], f"use {{argument-kinds}} in {page.name}"


def test_the_pages_that_explain_argument_kinds_list_them_from_the_code():
    for page in ("docs/coverage/operators.md", "docs/check.md"):
        assert "```{argument-kinds}\n```" in (ROOT / page).read_text(encoding="utf-8"), page


def test_the_argument_kinds_directive_lists_the_legend_the_sweep_uses(monkeypatch):
    from types import SimpleNamespace

    from torchclaims.evidence import coverage_table
    from torchclaims.sphinxext.directives.figures import ArgumentKindsDirective

    kinds = {**coverage_table.ARGUMENT_KINDS, "z": "a kind added later"}
    monkeypatch.setattr(coverage_table, "ARGUMENT_KINDS", kinds)
    monkeypatch.setattr(coverage_table, "MAX_TENSORS", 5)
    directive = ArgumentKindsDirective.__new__(ArgumentKindsDirective)
    env = SimpleNamespace(note_dependency=lambda path: None)
    directive.state = SimpleNamespace(document=SimpleNamespace(settings=SimpleNamespace(env=env)))
    about, table = directive.run()
    assert "past the first 5 inputs" in about.astext()
    rows = [[entry.astext() for entry in row] for row in table.findall(lambda n: n.tagname == "row")][1:]
    assert rows == [[letter, meaning] for letter, meaning in kinds.items()]


@pytest.mark.processes
def test_the_sphinx_extension_imports_no_torch():
    """docs/install.md: a rebuild with nothing changed imports torch nowhere; the extension's own modules must not."""
    import pkgutil

    import torchclaims.sphinxext as extension

    names = [m.name for m in pkgutil.walk_packages(extension.__path__, "torchclaims.sphinxext.")]
    code = f"import importlib, sys\nfor name in {names!r}: importlib.import_module(name)\nprint('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False", f"importing {len(names)} extension modules imported torch"
