"""Coverage tables on the site: summaries, plot, downloads, data files, comparison of runs."""

from __future__ import annotations

import html
import json
import re

import pytest

from kb import add_page, built, moved, page_text, xla_sweep_table
from torchclaims.evidence.records import read_record
from torchclaims.evidence.results import build_results, write_results

pytestmark = pytest.mark.processes  # Sphinx builds of a small knowledge base, which run its claims


@pytest.fixture(scope="module")
def site(new_site):
    root = new_site("coverage-site", ("kb-sweep", "sweep", "op-coverage"))
    add_page(root, "coverage", "# Coverage\n\n```{coverage-table} kb-sweep\n```\n")
    add_page(root, "topic-ops", "# Ops\n\n```{topic-claims} op-coverage\n```\n")
    built(root)
    # The same claim from an xla run, where histc falls back to the CPU and norm differs.
    record = read_record(root / "_build" / "records" / "cpu" / "kb-sweep.json")
    env = moved(record.environment, "xla", "2.9.0", {"torch_xla": "2.9.0"})
    xla = record.model_copy(update={"environment": env, "tables": [xla_sweep_table()]})
    (root / "results").mkdir(exist_ok=True)
    write_results(root / "results" / "xla-run.json", build_results([xla], env, label="xla box"))
    built(root)
    return root


def test_each_backend_gets_counts_with_their_denominator_and_a_plot(site):
    text = page_text(site / "_build" / "html" / "docs" / "coverage.html")
    assert "cpu · torch 2.13" in text and "xla · torch_xla 2.9.0" in text
    assert "listed (denominator) 3 1" in text  # float32 lists three operators, int64 one
    assert "CPU fallback 1 (33.3%)" in text and "mismatch 1 (33.3%)" in text
    raw = (site / "_build" / "html" / "docs" / "coverage.html").read_text()
    assert raw.count('<svg class="tc-sweep-plot"') == 2
    assert "<title>CPU fallback: 1 of 3 (33.3%)</title>" in raw


def data_runs(raw: str) -> list[dict]:
    return json.loads(html.unescape(re.search(r'data-runs="([^"]*)"', raw).group(1)))


def data_of(script: str, name: str) -> dict:
    """The payload of a data script (sphinxext/build/page_data.py)."""
    prefix = f'(window.tcPageData = window.tcPageData || {{}})["{name}"] = '
    assert script.startswith(prefix) and script.endswith(";\n")
    return json.loads(script[len(prefix) : -2])


def test_each_run_ships_once_as_a_data_script_and_a_csv(site):
    raw = (site / "_build" / "html" / "docs" / "coverage.html").read_text()
    runs = data_runs(raw)
    assert sorted(r["label"].split(" — ")[0].split(" · ")[0] for r in runs) == ["cpu", "xla"]
    xla = next(r for r in runs if r["label"].startswith("xla"))
    data_dir = site / "_build" / "html" / "_static" / "coverage"
    assert (site / "_build" / "html" / "docs" / xla["src"]).resolve() == (data_dir / f"{xla['name']}.js").resolve()
    data = data_of((data_dir / f"{xla['name']}.js").read_text(), xla["name"])
    assert data["environment"]["backend"] == "xla" and data["table"]["columns"][0]["codes"] == "NFM"
    assert (data_dir / f"{xla['name']}.csv").read_text().splitlines()[
        2
    ] == "histc,float32,CPU fallback,,CPU fallback: aten::histc"
    # One copy of each table: a script for the first view, one for opened rows and a CSV per run, no JSON; and
    # the list of its unknown dispatcher overloads, as text (empty for a table that states none)
    suffixes = sorted("".join(p.suffixes) for p in data_dir.iterdir())
    assert suffixes == [".csv", ".csv", ".details.js", ".details.js", ".js", ".js", ".txt", ".txt"]


def run_data(site, label: str) -> tuple[dict, dict]:
    """A run's two data scripts, found where torchclaims-sweep.js looks: beside its src, under its name."""
    raw = (site / "_build" / "html" / "docs" / "coverage.html").read_text()
    run = next(r for r in data_runs(raw) if r["label"].startswith(label))
    first = site / "_build" / "html" / "docs" / run["src"]
    details = first.with_name(first.name.removesuffix(".js") + ".details.js")
    return data_of(first.read_text(), run["name"]), data_of(details.read_text(), f"{run['name']}-details")


def test_what_only_an_opened_row_shows_is_out_of_the_first_view_and_in_the_row_details(site):
    first, details = run_data(site, "xla")
    table = first["table"]
    assert not {"operators", "kernels", "sample_legend", "argument_legend", "overloads"} & set(table)
    assert all(set(column) == {"name", "codes", "legend", "details"} for column in table["columns"])
    norm = str(table["rows"].index("norm"))
    assert details["columns"]["float32"] == {"samples": {norm: "nmn"}, "arguments": {norm: "2/ 0/ 22/k"}}
    assert details["kernels"] == {norm: ["aten::abs", "aten::linalg_vector_norm"]}
    assert details["operators"] == {norm: ["aten::linalg_vector_norm"]}
    assert details["argument_legend"]["k"] == "keepdim=True" and details["sample_legend"]["m"] == "mismatch"


def test_a_table_recorded_before_argument_kinds_and_kernels_gives_row_details_without_them(site):
    first, details = run_data(site, "cpu")
    add, histc = (str(first["table"]["rows"].index(name)) for name in ("add", "histc"))
    assert details["columns"]["float32"] == {"samples": {add: "nn", histc: "n"}, "arguments": {}}
    assert details["kernels"] == {} and details["argument_legend"] == {}


def test_the_json_download_is_the_results_file_that_holds_the_record(site):
    raw = (site / "_build" / "html" / "docs" / "coverage.html").read_text()
    links = re.findall(r'href="([^"]+)">results file \(JSON\)', raw)
    assert sorted(links) == ["../downloads/results/xla-run.json", "../downloads/torchclaims-results.json"]
    published = json.loads((site / "_build" / "html" / "downloads" / "results" / "xla-run.json").read_text())
    assert [r["tables"][0]["columns"][0]["codes"] for r in published["records"]] == ["NFM"]


def test_the_searchable_table_comes_before_the_summaries(site):
    raw = (site / "_build" / "html" / "docs" / "coverage.html").read_text()
    assert raw.index('class="tc-sweep"') < raw.index("tc-sweep-run") < raw.index("tc-sweep-plot")


def search_objects(site) -> tuple[dict, dict]:
    """The search index's data, and its objects by their shown name."""
    index = (site / "_build" / "html" / "searchindex.js").read_text()
    data = json.loads(index[index.index("(") + 1 : index.rindex(")")])
    objects = {
        (prefix + "." if prefix else "") + entry[4]: entry
        for prefix, entries in data["objects"].items()
        for entry in entries
    }
    return data, objects


def test_the_site_search_lists_every_row_name_with_its_anchor(site):
    data, objects = search_objects(site)
    page = data["docnames"].index("docs/coverage")
    for name in ("add", "histc", "norm"):
        doc, kind, priority, anchor, _ = objects[name]
        assert doc == page and priority == (2 if name == "norm" else 1)  # norm fails on xla: its run comes first
        assert data["objnames"][str(kind)][2] == "operator"
        assert anchor == f"row-{name}"


def test_the_site_search_lists_a_run_where_a_row_fails_first_linking_to_that_run(site):
    data, objects = search_objects(site)
    raw = (site / "_build" / "html" / "docs" / "coverage.html").read_text()
    runs = json.loads(html.unescape(re.search(r'data-runs="([^"]+)"', raw).group(1)))
    xla = next(run["name"] for run in runs if run["label"].startswith("xla"))
    failing = {shown: entry for shown, entry in objects.items() if " — " in shown}
    # Only norm fails (a mismatch on xla); histc falls back to the CPU, which is no failure.
    assert list(failing) == [f"norm — mismatch on {objects_column(raw)}"], list(failing)
    doc, kind, priority, anchor, _ = next(iter(failing.values()))
    assert doc == data["docnames"].index("docs/coverage") and data["objnames"][str(kind)][2] == "operator"
    assert anchor == f"run-{xla}/row-norm"
    # searchtools.js: priority 0 adds 15, 2 adds -5; the exact name match (11) cannot lift the plain row above it.
    assert priority == 0 and objects["norm"][2] == 2


def objects_column(raw: str) -> str:
    """The xla run's column as the page names it: 'xla · torch_xla 2.9.0 on torch …'."""
    return re.search(r"<strong>(xla · [^<]+)</strong>", raw).group(1)


def test_only_failing_outcomes_list_a_run_and_each_outcome_once():
    from torchclaims.coverage.operators import OUTCOMES
    from torchclaims.evidence.coverage_table import TableBuilder
    from torchclaims.sphinxext.build.coverage_index import failing_outcomes

    builder = TableBuilder("operators", "operator", ["a", "b", "c"], {"float32": OUTCOMES, "int64": OUTCOMES})
    for row, codes in {"a": "NF", "b": "MR", "c": "KK"}.items():
        builder.set(row, "float32", codes[0])
        builder.set(row, "int64", codes[1])
    assert failing_outcomes(builder.table()) == {"b": ["mismatch", "raises"], "c": ["no kernel"]}


def test_every_failing_outcome_is_one_a_sweep_writes():
    """A renamed outcome would silently stop a failing row from coming first in the search."""
    from torchclaims.coverage.architectures import CAUSES, STAGES
    from torchclaims.coverage.operators import OUTCOMES
    from torchclaims.sphinxext.build.coverage_index import FAILING

    assert FAILING <= {*OUTCOMES.values(), *STAGES.values(), *CAUSES.values()}


def test_a_second_table_on_one_page_is_refused_with_a_warning(new_site):
    root = new_site("two-tables", ("kb-sweep", "sweep", "op-coverage"))
    add_page(root, "coverage", "# Coverage\n\n```{coverage-table} kb-sweep\n```\n\n```{coverage-table} kb-sweep\n```\n")
    result = built(root)
    assert "coverage.md" in result.stderr and "a page holds one coverage table" in result.stderr
    assert (root / "_build" / "html" / "docs" / "coverage.html").read_text().count('class="tc-sweep"') == 1


def test_the_table_script_is_only_on_pages_with_a_table(site):
    html_dir = site / "_build" / "html"
    assert "torchclaims-sweep.js" in (html_dir / "docs" / "coverage.html").read_text()
    assert "torchclaims-sweep.js" not in (html_dir / "index.html").read_text()
    assert "torchclaims-sweep.js" not in (html_dir / "docs" / "topic.html").read_text()


def test_a_data_file_removed_from_the_output_comes_back_with_the_next_build(site):
    data_dir = site / "_build" / "html" / "_static" / "coverage"
    removed = sorted(data_dir.glob("*.js"))[0]
    text = removed.read_text()
    removed.unlink()
    built(site)  # nothing else changed: the data files are otherwise left alone
    assert removed.read_text() == text


def test_a_row_anchor_is_a_safe_fragment_whatever_the_name():
    from torchclaims.site_addresses import row_anchor

    assert row_anchor("nn.functional.pixel_shuffle") == "row-nn.functional.pixel_shuffle"
    hostile = row_anchor('x" onmouseover="alert(1)#<b> é')
    assert hostile == "row-x%22%20onmouseover%3D%22alert%281%29%23%3Cb%3E%20%C3%A9"
    assert re.fullmatch(r"[A-Za-z0-9._~%-]+", hostile)


def test_a_row_anchor_in_a_run_keeps_the_run_apart_from_any_name():
    from torchclaims.site_addresses import run_row_anchor

    assert run_row_anchor("kb-sweep-xla-1", "a/row-b") == "run-kb-sweep-xla-1/row-a%2Frow-b"  # the first / ends the run
    assert run_row_anchor("Run <x>", "n") == "run-run-x/row-n"
