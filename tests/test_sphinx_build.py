"""A small knowledge base built with Sphinx, and its HTML asserted."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

from kb import built, moved, page_text, read_page, write_accelerator_pages, write_claim, write_site
from torchclaims.evidence.records import Verdict, read_record
from torchclaims.evidence.results import build_results, write_results

pytestmark = pytest.mark.processes  # Sphinx builds of a small knowledge base, which run its claims


@pytest.fixture(scope="module")
def site(new_site):
    root = new_site(
        "site",
        ("kb-holds", "holds"),
        ("kb-refuted", "refuted"),
        ("kb-unverified", "unverified"),
        ("kb-raise", "raise"),
        ("kb-exit", "exit"),
        ("kb-said", None),  # attributed: no script, no verdict
    )
    # A vendor's claim about other hardware, checked by a narrower proposition on the CPU.
    write_claim(root, "kb-vendor", "holds", about=("neuron",), claimed_by=("AWS",), relation="narrows")
    (root / "docs" / "figures.md").write_text(FIGURES_PAGE)
    (root / "index.md").write_text(
        (root / "index.md").read_text().replace("docs/topic\n", "docs/topic\ndocs/figures\n")
    )
    write_accelerator_pages(root)
    first = built(root)
    # A results file from another backend, as a team with hardware would send.
    record = read_record(root / "_build" / "records" / "cpu" / "kb-holds.json")
    xla_env = moved(record.environment, "xla", "2.9.0", {"torch_xla": "2.9.0"})
    figure = "figures/xla-run/kb-holds/figure-1.png"
    refuted = [check.model_copy(update={"outcome": Verdict.REFUTED}) for check in record.checks]
    xla_record = record.model_copy(
        update={
            "environment": xla_env,
            "verdict": Verdict.REFUTED,
            "checks": refuted,
            "reason": "",
            "figures": [figure],
        }
    )
    (root / "results" / figure).parent.mkdir(parents=True)
    (root / "results" / figure).write_bytes(PNG)
    write_results(root / "results" / "xla-run.json", build_results([xla_record], xla_env, label="xla box"))
    (root / "results" / "broken.json").write_text("{not json")
    second = built(root)
    return root, first, second


FIGURES_PAGE = """# Figures

On the CPU the sum is off by {claim-measure}`kb-holds cpu sum: max abs error`.
On xla it is {claim-measure}`kb-holds xla addition on the device :: sum: max abs error`.
On CUDA it is {claim-measure}`kb-holds cuda sum: max abs error`.
A name no check measured: {claim-measure}`kb-holds cpu speed-up`.
On xla the claim {claim-verdict}`kb-holds xla`; on CUDA {claim-verdict}`kb-holds cuda`.
"""

# The smallest valid PNG: one transparent pixel.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def html(root: Path, page: str) -> str:
    return page_text(root / "_build" / "html" / f"{page}.html")


def test_script_pages_are_reached_from_the_gallery_not_listed_in_the_navigation(site):
    """The gallery's index stays in the site's toctree; its script pages are orphans, in no
    toctree (a theme lists every toctree entry on every page), and Sphinx says nothing of it."""
    root, first, _ = site
    env = pickle.loads((root / "_build" / "html" / ".doctrees" / "environment.pickle").read_bytes())
    scripts = {d for d in env.found_docs if d.startswith("docs/auto_gallery/") and d != "docs/auto_gallery/index"}
    listed = {d for included in env.toctree_includes.values() for d in included}
    assert "docs/auto_gallery/kb_holds" in scripts and "docs/auto_gallery/index" in listed
    assert not scripts & listed
    assert all(env.metadata[d].get("orphan") for d in scripts)
    assert "toctree" not in first.stderr
    index = (root / "_build" / "html" / "docs" / "auto_gallery" / "index.html").read_text()
    assert 'class="tc-card-title" href="kb_holds.html"' in index  # its card


def test_topic_page_shows_each_verdict_with_evidence_and_environment(site):
    root, _, _ = site
    text = html(root, "docs/topic")
    assert "The proposition of claim kb-holds, which is checked by its script." in text
    assert "“A verbatim quote for kb-holds” — PyTorch documentation (2026-10)" in text
    for badge in ("✔ holds", "✘ refuted", "? unverified", "⚠ error", "❝ attributed — no verdict"):
        assert badge in text
    assert re.search(
        r"cpu · \S[^·]* · torch 2\.13\.0\+cpu \(CPU-only build\) ✔ holds this build \d{4}-\d\d-\d\d, this build", text
    )  # backend, device, version, source, date, origin
    assert "sum: max abs error = 0" in text
    assert "no accelerator on this machine" in text
    assert "ValueError: boom from the script" in text
    assert "the script called sys.exit(3)" in text
    assert "model: a tensor of three ones" in text


def test_an_error_record_keeps_what_the_script_printed_on_its_page(site):
    root, _, _ = site
    record = read_record(root / "_build" / "records" / "cpu" / "kb-raise.json")
    assert record.log_tail.startswith(
        "printed before the raise\n"
    )  # the script ran through sphinx-gallery, which captures it
    assert "ValueError: boom from the script" in record.log_tail and "Output from" not in record.log_tail
    assert "printed before the raise" in html(root, "docs/auto_gallery/kb_raise")


def claim_text(text: str, claim_id: str) -> str:
    """The part of a topic page showing one claim."""
    part = text[text.index(f"Claim {claim_id} ¶") :]
    following = part.find("Claim kb-", 10)
    return part if following < 0 else part[:following]


def test_a_vendor_is_never_shown_beside_a_verdict_on_other_hardware_without_saying_so(site):
    root, _, _ = site
    text = claim_text(html(root, "docs/topic"), "kb-vendor")
    assert (
        "Claimed by AWS about AWS Trainium (TorchNeuron): “A verbatim quote for kb-vendor” — PyTorch documentation"
        in text
    )
    assert "We check a narrower proposition of our own" in text
    # One line: the verdict, the device it ran on, and that this is not the vendor's hardware.
    assert re.search(
        r"cpu · [^·]+ · torch 2\.13\.0\+cpu \(CPU-only build\) ✔ holds this build \d{4}-\d\d-\d\d, this build "
        r"\(outside the scope of the claim: says nothing about AWS Trainium \(TorchNeuron\)\)",
        text,
    )
    assert "∅ not run on neuron · AWS Trainium (TorchNeuron): the claim is about it, and no record exists yet" in text
    assert "outside the scope" not in claim_text(html(root, "docs/topic"), "kb-holds").split("xla")[0]
    raw = (root / "_build" / "html" / "docs" / "matrix.html").read_text()
    row = raw[raw.index('id="matrix-kb-vendor"') :]
    cpu_cell = row[row.index('data-backend="cpu"') : row.index("</td>")]
    assert "outside its scope" in cpu_cell  # in the cell itself, beside the verdict
    assert "title=" not in cpu_cell  # no tooltip: the reason and environment are in the evidence the cell leads to
    assert (
        'data-about="neuron"' in row[:200] and 'data-backend="neuron"' not in row[: row.index("</tr>")]
    )  # no column of empty cells
    gallery = html(root, "docs/auto_gallery/kb_vendor")
    assert "(outside the scope of the claim: says nothing about AWS Trainium (TorchNeuron))" in gallery


def test_a_verdict_with_an_errored_check_beside_a_refuting_one_names_it(tmp_path):
    write_site(tmp_path)
    body = """
with v.check("refuted") as check:
    check.equal(1, 2, "one")
with v.check("broken"):
    raise RuntimeError("broken check")
v.finish()
"""
    write_claim(tmp_path, "kb-mixed", body)
    built(tmp_path)
    assert "✘ refuted, 1 check errored" in html(tmp_path, "docs/topic")
    assert "✘ refuted, 1 check errored" in html(tmp_path, "docs/matrix")


def test_figures_in_prose_come_from_the_newest_record_with_backend_device_and_date(site):
    root, _, second = site
    text = html(root, "docs/figures")
    assert re.search(r"off by 0 \(cpu on [^,]+, torch 2\.13\.0\+cpu \(CPU-only build\), \d{4}-\d\d-\d\d\) \.", text)
    assert re.search(r"it is 0 \(xla on [^,]+, torch_xla 2\.9\.0 on torch 2\.9\.0, \d{4}-\d\d-\d\d\) \.", text)
    raw = (root / "_build" / "html" / "docs" / "figures.html").read_text()
    assert (
        'href="topic.html#claim-kb-holds--cpu--torch-2-13-0-cpu-cpu-only-build"' in raw
    )  # each figure links to the evidence of its run


def test_a_figure_without_a_record_says_so_and_warns(site):
    root, _, second = site
    text = html(root, "docs/figures")
    assert "On CUDA it is [no record of kb-holds on cuda] ." in text
    assert "[no single measurement named speed-up in the newest record of kb-holds on cpu]" in text
    assert "claim-measure: no record of kb-holds on cuda" in second.stderr
    assert "has no measurement 'speed-up'" in second.stderr


def test_a_verdict_in_prose_names_its_backend_device_and_scope(site):
    root, _, second = site
    text = html(root, "docs/figures")
    assert re.search(
        r"On xla the claim ✘ refuted submitted by hand, not reproduced — "
        r"xla · [^·]+ · torch_xla 2\.9\.0 on torch 2\.9\.0, \S+, xla-run\.json, labelled “xla box” "
        r"\(outside the scope of the claim: says nothing about the CPU\)",
        text,
    )
    assert "on CUDA ∅ not run (no record on cuda)" in text
    assert "claim-verdict: kb-holds has no record on cuda" in second.stderr


def test_attributed_claim_never_shows_a_verdict(site):
    root, _, _ = site
    text = html(root, "docs/topic")
    said = text[text.index("Claim kb-said") :]
    said = said[: said.index("Claim kb-", 10)] if "Claim kb-" in said[10:] else said
    assert "❝ attributed — no verdict" in said
    assert "holds" not in said and "Evidence" not in said


def test_matrix_merges_the_committed_results_file(site):
    root, _, _ = site
    text = html(root, "docs/matrix")
    raw = (root / "_build" / "html" / "docs" / "matrix.html").read_text()
    # a column for every backend with a record, named by backend, device and version, with its totals
    assert re.search(r"cpu \S[^·]* torch 2\.13\.0\+cpu \(CPU-only build\) ✔ 2 holds", text)
    assert re.search(r"xla \S[^·]* torch_xla 2\.9\.0 on torch 2\.9\.0 ✔ 0 holds ✘ 1 refuted", text)
    # every backend without one is named once, with how many claims are about it, instead of a column of empty cells
    for backend in ("cuda", "rocm", "mps", "xpu", "neuron", "tpu"):
        assert f' data-backend="{backend}"' not in raw.split('class="tc-matrix"', 1)[1]
    assert (
        "No record yet from cuda (NVIDIA GPUs), rocm (AMD GPUs), mps (Apple GPUs), "
        "xpu (Intel GPUs), neuron (AWS Trainium (TorchNeuron)), tpu"
    ) in text
    assert (
        "Claims about them: 0 about cuda, 0 about rocm, 0 about mps, 0 about xpu, 1 about neuron, 0 about tpu" in text
    )
    # each cell links to the evidence of its run and keeps its badge
    assert (
        '<a class="tc-run tc-source-build" href="topic.html#claim-kb-holds--cpu--torch-2-13-0-cpu-cpu-only-build" '
        'data-version="torch 2.13.0+cpu (CPU-only build)" data-verdict="holds"'
    ) in raw
    assert '<th scope="col" data-backend="xla"' in raw and '<th scope="row">' in raw and "<caption>" in raw
    topic = html(root, "docs/topic")
    assert re.search(
        r"xla · [^·]+ · torch_xla 2\.9\.0 on torch 2\.9\.0 ✘ refuted submitted by hand, not reproduced "
        r"\S+, xla-run\.json, labelled “xla box”",
        topic,
    )
    raw = read_page(root / "_build" / "html" / "docs" / "topic.html")
    assert 'alt="figure 1 of the xla · torch_xla 2.9.0 on torch 2.9.0 run"' in raw  # the results file's figure


def test_broken_results_file_is_reported_and_harms_nothing(site):
    root, _, second = site
    assert "broken.json" in second.stderr and "not valid JSON" in second.stderr
    assert "xla-run.json" in html(root, "docs/topic")


def test_gallery_page_shows_code_output_and_verdict(site):
    root, _, _ = site
    text = html(root, "docs/auto_gallery/kb_holds")
    raw = read_page(root / "_build" / "html" / "docs" / "auto_gallery" / "kb_holds.html")
    # the code, highlighted by Sphinx: the names sphinx-gallery found for linking (to nothing) are not kept
    assert '<span class="kn">from</span><span class="w"> </span><span class="nn">torchclaims.verify</span>' in raw
    assert not list((root / "docs" / "auto_gallery").glob("*.codeobj.json"))
    assert "Claim kb-holds: HOLDS" in text  # the script's printed summary
    assert re.search(
        r"✔ holds this build — cpu · [^·]+ · torch 2\.13\.0\+cpu \(CPU-only build\), \d{4}-\d\d-\d\d, this build", text
    )


def test_second_build_reruns_nothing(site):
    _, first, second = site
    assert "torchclaims: running kb-holds" in first.stdout
    assert "torchclaims: running kb-holds" not in second.stdout
    # errors are not evidence, so they are tried again
    assert "torchclaims: running kb-raise (the earlier run was an error)" in second.stdout


def test_this_build_is_published_as_a_results_file(site):
    root, _, _ = site
    data = json.loads((root / "_build" / "html" / "downloads" / "torchclaims-results.json").read_text())
    assert data["format"] == "torchclaims-results"
    assert {r["claim_id"] for r in data["records"]} >= {"kb-holds", "kb-refuted"}
    # the results file committed after the first build is published too
    assert (root / "_build" / "html" / "downloads" / "results" / "xla-run.json").read_bytes() == (
        root / "results" / "xla-run.json"
    ).read_bytes()


def test_changed_result_rerenders_page_and_appears_on_changes_page(tmp_path):
    write_site(tmp_path)
    write_claim(tmp_path, "kb-flip", "holds")
    built(tmp_path)
    assert "✔ holds" in html(tmp_path, "docs/topic")
    script = tmp_path / "gallery" / "kb_flip.py"
    script.write_text(script.read_text().replace("torch.full((3,), 2.0)", "torch.full((3,), 3.0)"))
    rebuilt = built(tmp_path, "-q")  # as nox -s docs builds: Sphinx's own log is quiet, the claims' lines are not
    assert "running kb-flip (changed: gallery/kb_flip.py" in rebuilt.stdout
    assert "torchclaims: re-ran 1 of " in rebuilt.stdout and "kb-flip (changed: gallery/kb_flip.py" in rebuilt.stdout
    topic = html(tmp_path, "docs/topic")
    assert "✘ refuted" in topic and "sum: max abs error = 1" in topic
    changes = html(tmp_path, "docs/changes")
    assert "1 of them changed verdict" in changes
    assert "kb-flip" in changes and "an earlier build" in changes
    # The downloads and the search data follow the new record; a build with
    # nothing new leaves them as they are.
    published = tmp_path / "_build" / "html"
    results, search = (
        published / "downloads" / "torchclaims-results.json",
        published / "_static" / "torchclaims-claims.js",
    )
    assert [r["verdict"] for r in json.loads(results.read_text())["records"]] == ["refuted"]
    assert "refuted on cpu" in search.read_text() and "holds on cpu" not in search.read_text()
    written = {path: path.stat().st_mtime_ns for path in (results, search)}
    built(tmp_path)
    assert {path: path.stat().st_mtime_ns for path in written} == written


def test_adding_renaming_and_removing_a_claim_updates_every_page_listing_it_without_a_full_rebuild(tmp_path):
    write_site(tmp_path)
    write_claim(tmp_path, "kb-first", "holds")  # runs once; the claims added later are attributed: nothing to run
    built(tmp_path)

    def listed() -> dict[str, str]:
        return {page: html(tmp_path, f"docs/{page}") for page in ("topic", "matrix")}

    write_claim(tmp_path, "kb-added", None)
    built(tmp_path)
    assert all("Claim kb-added" in text for text in listed().values())

    record = (tmp_path / "claims" / "kb-added.toml").read_text().replace("kb-added", "kb-renamed")
    (tmp_path / "claims" / "kb-added.toml").unlink()
    (tmp_path / "claims" / "kb-renamed.toml").write_text(record)
    built(tmp_path)
    assert all("Claim kb-renamed" in text and "kb-added" not in text for text in listed().values())

    (tmp_path / "claims" / "kb-renamed.toml").unlink()
    built(tmp_path)
    assert all("kb-renamed" not in text and "Claim kb-first" in text for text in listed().values())


def test_an_accelerator_page_counts_the_claims_about_it_from_the_records(site):
    root, _, _ = site
    text = html(root, "docs/accelerators/neuron")
    assert "1 claim is about AWS Trainium (TorchNeuron)." in text
    assert "0 of the 1 executable ones ran on neuron hardware: no record from there yet." in text
    assert re.search(
        r"1 was checked only on a stand-in: on cpu \(.+?, torch 2\.13\.0\+cpu \(CPU-only build\)\), 1 claim: "
        r"✔ 1 held\. "
        r"A stand-in.s verdict is evidence about what ran there, never about AWS Trainium \(TorchNeuron\)\.",
        text,
    )
    group = text[text.index("Undecided: needs neuron hardware (1)") :]
    assert re.match(
        r"Undecided: needs neuron hardware \(1\) ¶ "
        r"Claim kb-vendor cpu ✔ holds torch 2\.13\.0\+cpu \(CPU-only build\), \S+ this build outside its scope "
        r"a generic PyTorch API on the CPU reference Reading: only runs outside the claim.s scope",
        group,
    )  # a verdict outside the claim's scope decides nothing here: the group says what would
    assert "Decided by: a run on AWS Trainium (TorchNeuron): torchclaims verify --backend neuron kb-vendor" in group
    assert 'torchclaims verify --backend neuron --label "your machine, driver and lab" --output results/' in text
    assert "runs every executable claim (6; 1 of them is about neuron)" in text
    raw = (root / "_build" / "html" / "docs" / "accelerators" / "neuron.html").read_text()
    assert (
        'href="../topic.html#claim-kb-vendor--cpu--torch-2-13-0-cpu-cpu-only-build"' in raw
    )  # each chip leads to the evidence of its run
    xla = html(root, "docs/accelerators/xla")
    assert "0 claims are about torch_xla (TPUs and other PJRT devices)." in xla and "Held on" not in xla


def test_the_accelerator_choice_lists_each_page_with_its_tally_and_the_matrix_headers_link_to_them(site):
    root, _, _ = site
    text = html(root, "docs/accelerators/index")
    assert (
        "neuron · AWS Trainium (TorchNeuron) 1 claim about it · 0 only their word · 0 ran on its hardware · "
        "1 only on a stand-in (cpu)" in text
    )
    assert text.index("neuron · AWS") < text.index("xla · torch_xla")  # the backend most claims are about first
    raw = (root / "_build" / "html" / "docs" / "matrix.html").read_text()
    assert '<span class="tc-backend"><a href="accelerators/xla.html">xla</a></span>' in raw
    assert '<span class="tc-backend">cpu</span>' in raw  # the reference has no page
    assert (
        '<a href="accelerators/neuron.html">neuron</a> (AWS Trainium (TorchNeuron))' in raw
    )  # named once, with its page


def test_a_claim_shows_its_newest_verdict_per_backend_and_folds_every_record_into_one_table(site):
    root, _, _ = site
    page = (root / "_build" / "html" / "docs" / "topic.html").read_text()
    shipped = page[page.index('id="claim-kb-holds"') : page.index('id="claim-kb-raise"')]
    # the table of every record is not in the page: it is written once beside it and loads when the block opens
    assert "tc-runs" not in shipped and 'data-tc-key="claim-kb-holds--runs"' in shipped
    assert 'data-tc-src="../_static/data/page-docs-topic.js"' in shipped
    raw = read_page(root / "_build" / "html" / "docs" / "topic.html")
    section = raw[raw.index('id="claim-kb-holds"') : raw.index('id="claim-kb-raise"')]
    headline = re.search(r'<table class="[^"]*tc-headline.*?</table>', section, re.S)[0]
    assert headline.count("<tr") == 3  # the header, cpu and xla: one line per backend
    evidence = re.search(
        r'<details class="tc-evidence" id="claim-kb-holds--evidence">(.*?)</details>\s*<p>Verification script',
        section,
        re.S,
    )[1]
    rows = re.findall(r'<tr class="[^"]*" id="([^"]+)"', evidence) + re.findall(r'<tr id="([^"]+)"', evidence)
    assert rows == [
        "claim-kb-holds--xla--torch-xla-2-9-0-on-torch-2-9-0"
    ]  # the first run is shown whole above the table, with its anchors
    assert (
        'id="claim-kb-holds--cpu--torch-2-13-0-cpu-cpu-only-build"' in evidence
        and 'id="claim-kb-holds--xla"' in evidence
    )
    assert evidence.count("Environment and conditions") == 1  # the environment once, then only what differs
    text = page_text_of(evidence)
    # a configuration beside another, never an upgrade from it; after the checks that failed
    assert "torch_xla: 2.9.0 here, (absent) there" in text and "→" not in text
    assert text.index("(bound:") < text.index("Configuration unlike the cpu · torch 2.13.0+cpu (CPU-only build) run:")
    assert (
        re.findall(r' title="(?!Link to this)', section) == []
    )  # reasons are text, never tooltips (the theme's ¶ links aside)


def page_text_of(fragment: str) -> str:
    import html as html_module

    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())
