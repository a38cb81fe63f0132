"""Coverage tables on the site: summaries, plot, downloads, data files, comparison of runs."""

from __future__ import annotations

import json

import pytest

from kb import build, page_text, write_claim, write_site, xla_sweep_table
from torchclaims.records import Environment, read_record
from torchclaims.results import build_results, write_results

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("coverage-site")
    write_site(root)
    write_claim(root, "kb-sweep", "sweep", topic="op-coverage")
    (root / "docs" / "coverage.md").write_text("# Coverage\n\n```{coverage-table} kb-sweep\n```\n")
    (root / "docs" / "topic-ops.md").write_text("# Ops\n\n```{topic-claims} op-coverage\n```\n")
    index = root / "index.md"
    index.write_text(index.read_text().replace("docs/topic\n", "docs/topic\ndocs/coverage\ndocs/topic-ops\n"))
    assert build(root).returncode == 0
    # The same claim from an xla run, where histc falls back to the CPU and norm differs.
    record = read_record(root / "_build" / "records" / "cpu" / "kb-sweep.json")
    env = Environment.model_validate({**record.environment.model_dump(), "backend": "xla", "device": "xla:0",
                                      "torch": "2.9.0", "packages": {"torch": "2.9.0", "torch_xla": "2.9.0"}})
    xla = record.model_copy(update={"environment": env, "tables": [xla_sweep_table()]})
    (root / "results").mkdir(exist_ok=True)
    write_results(root / "results" / "xla-run.json", build_results([xla], env, label="xla box"))
    result = build(root)
    assert result.returncode == 0, result.stderr[-3000:]
    return root


def test_each_backend_gets_counts_with_their_denominator_and_a_plot(site):
    text = page_text(site / "_build" / "html" / "docs" / "coverage.html")
    assert "cpu · torch 2.13" in text and "xla · torch_xla 2.9.0" in text
    assert "listed (denominator) 3 1" in text  # float32 lists three operators, int64 one
    assert "CPU fallback 1 (33.3%)" in text and "mismatch 1 (33.3%)" in text
    raw = (site / "_build" / "html" / "docs" / "coverage.html").read_text()
    assert raw.count('<svg class="tc-sweep-plot"') == 2
    assert "<title>CPU fallback: 1 of 3 (33.3%)</title>" in raw


def test_downloads_and_data_files_hold_every_cell(site):
    raw = (site / "_build" / "html" / "docs" / "coverage.html").read_text()
    runs = json.loads(__import__("html").unescape(raw.split("data-runs='")[1].split("'")[0]))
    assert sorted(r["label"].split(" — ")[0].split(" · ")[0] for r in runs) == ["cpu", "xla"]
    xla = next(r for r in runs if r["label"].startswith("xla"))
    data_dir = site / "_build" / "html" / "_static" / "coverage"
    stem = xla["src"].rsplit("/", 1)[1].removesuffix(".js")
    data = json.loads((data_dir / f"{stem}.json").read_text())
    assert data["environment"]["backend"] == "xla" and data["table"]["columns"][0]["codes"] == "NFM"
    assert (data_dir / f"{stem}.csv").read_text().splitlines()[2] == "histc,float32,CPU fallback,,CPU fallback: aten::histc"
    script = (data_dir / f"{stem}.js").read_text()
    assert script.startswith(f'(window.tcSweeps = window.tcSweeps || {{}})["{stem}"] = ')
    assert (site / "_build" / "html" / "docs" / xla["src"]).resolve() == (data_dir / f"{stem}.js").resolve()


def test_the_page_stays_small_and_loads_the_table_script(site):
    path = site / "_build" / "html" / "docs" / "coverage.html"
    assert path.stat().st_size < 1_000_000
    assert "torchclaims-sweep.js" in path.read_text()
    assert (site / "_build" / "html" / "_static" / "torchclaims-sweep.js").is_file()


def test_a_data_file_removed_from_the_output_comes_back_with_the_next_build(site):
    data_dir = site / "_build" / "html" / "_static" / "coverage"
    removed = sorted(data_dir.glob("*.js"))[0]
    text = removed.read_text()
    removed.unlink()
    assert build(site).returncode == 0  # nothing else changed: the data files are otherwise left alone
    assert removed.read_text() == text
