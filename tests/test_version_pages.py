"""A small site with runs of two earlier torch releases: strips, range columns, upgrade pages,
the build against history."""

from __future__ import annotations

import html as html_module
import json
import re
import subprocess
import sys

import pytest

from kb import built, moved, page_text
from torchclaims.evidence.builds import build_of, builds_named, kind_words
from torchclaims.evidence.records import Verdict, read_record
from torchclaims.evidence.results import build_results, write_results

pytestmark = pytest.mark.processes  # Sphinx builds of a small knowledge base, which run its claims

UPGRADES_PAGE = "# Upgrades\n\n```{upgrade-index}\n```\n"
CHANGES_PAGE = "# Changes\n\n```{build-against-history}\n```\n\n```{claims-changes}\n```\n"


def release_run(record, version: str, verdict: Verdict, **update):
    """The record as another torch release would have made it; its checks say what its verdict says."""
    env_at = moved(record.environment, torch=version)
    checks = [check.model_copy(update={"outcome": verdict}) for check in record.checks]
    return record.model_copy(
        update={"environment": env_at, "verdict": verdict, "reason": "", "checks": checks, **update}
    ), env_at


@pytest.fixture(scope="module")
def site(new_site):
    root = new_site("versions", ("kb-holds", "holds"), ("kb-unverified", "unverified"))
    (root / "docs" / "upgrades.md").write_text(UPGRADES_PAGE)
    (root / "docs" / "changes.md").write_text(CHANGES_PAGE)
    (root / "index.md").write_text(
        (root / "index.md").read_text().replace("docs/changes\n", "docs/changes\ndocs/upgrades\n")
    )
    built(root)
    holds = read_record(root / "_build" / "records" / "cpu" / "kb-holds.json")
    unverified = read_record(root / "_build" / "records" / "cpu" / "kb-unverified.json")
    build_torch, _, local = holds.environment.torch.partition("+")
    same_build = f"+{local}" if local else ""  # the committed runs used the build's kind of wheel
    (root / "sweep").mkdir()
    (root / "sweep" / "releases.toml").write_text(
        '[series.torch]\nbackend = "cpu"\npackage = "torch"\n'
        f'versions = ["2.9.0", "2.10.0", "2.11.0", "{build_torch}"]\n'
    )
    (root / "sweep" / "constraints.txt").write_text(f"numpy=={holds.environment.packages['numpy']}\n")
    for version, verdict in (("2.9.0", Verdict.HOLDS), ("2.10.0", Verdict.REFUTED)):
        record, env = release_run(holds, version + same_build, verdict)
        other, _ = release_run(unverified, version + same_build, Verdict.UNVERIFIED, reason=unverified.reason)
        write_results(
            root / "results" / f"cpu-torch{version}.json", build_results([record, other], env, label=f"sweep {version}")
        )
    # the build's own release on another kind of wheel: a build, not a release, so no version story
    record, env = release_run(holds, f"{build_torch}+cu130", Verdict.REFUTED)
    write_results(root / "results" / f"cpu-torch{build_torch}-cu130.json", build_results([record], env, label="cu130"))
    return root, build_torch, built(root), holds.environment


def html(root, page: str) -> str:
    return page_text(root / "_build" / "html" / page)


def test_every_claim_shows_its_strip_and_the_sentence_it_says(site):
    root, build_torch, *_ = site
    text = html(root, "docs/topic.html")
    assert "Across releases" in text
    assert f"holds since torch {build_torch}; refuted on torch 2.10.0; holds on torch 2.9.0; no run of 2.11.0" in text
    # the CUDA wheel of the same release is its own strip, named: not "refuted from torch {build_torch}"
    assert "torch, CUDA build (+cu130):" in text and "refuted from torch" not in text
    assert f"refuted on every torch release with a run (torch {build_torch}); no run of 2.9.0, 2.10.0, 2.11.0" in text
    assert "unverified on every torch release with a run" in text and "no accelerator on this machine" in text
    assert "2.11.0 ∅" in text


def test_the_matrix_offers_the_range_beside_the_single_versions(site):
    root, build_torch, _, environment = site
    own, kind = builds_named([build_of(environment)]), build_of(environment).kind  # 'CPU-only build (+cpu)', 'cpu'
    raw = (root / "_build" / "html" / "docs" / "matrix.html").read_text(encoding="utf-8")
    picker = re.search(r'<select data-tc-version="cpu">(.*?)</select>', raw, re.S)[1]
    local = "".join(environment.torch.partition("+")[1:])  # the committed runs' build is the site's
    single = f"torch 2.10.0{local}" + (f" ({kind_words(build_of(environment))})" if local else "")
    assert f'<option value="{single}">{single}</option>' in picker  # one version at a time stays available
    # the CUDA wheel of the build's own release is a version of its own, named, never hidden behind the build's
    assert f'<option value="torch {build_torch}+cu130 (CUDA build)">' in picker
    assert f'<option value="range:torch:{kind}">torch 2.9.0–{build_torch}, {own} (range)</option>' in picker
    assert f'<option value="range:torch:cuda">torch {build_torch}, CUDA build (+cu130) (range)</option>' in picker
    row = re.search(r'<tr class="tc-claim-row" id="[^"]*kb-holds.*?</tr>', raw, re.S)[0]
    assert "range:torch" not in row  # the page holds the version shown first; the others are loaded when picked
    later = (root / "_build" / "html" / "_static" / "data" / "page-docs-matrix.js").read_text(encoding="utf-8")
    assert 'data-tc-src="../_static/data/page-docs-matrix.js"' in raw
    cells = json.loads(later.partition('"] = ')[2].strip().removesuffix(";"))["matrix"]["matrix-kb-holds"]["cpu"]
    view = re.search(
        rf'<span class="tc-run tc-range" data-version="range:torch:{kind}" data-verdict="holds"'
        r'[^>]*hidden>(.*?<span class="tc-range-sentence">.*?</span>)</span>',
        cells,
        re.S,
    )
    assert view is not None, cells
    assert f"holds since torch {build_torch}" in page_text_of(view[1])


def page_text_of(fragment: str) -> str:
    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def test_an_upgrade_section_names_the_two_runs_the_packages_and_what_moved(site):
    root, _, _, environment = site
    own, kind = builds_named([build_of(environment)]), build_of(environment).kind
    suffix = "".join(environment.torch.partition("+")[1:])  # '+cpu': the committed runs' build is the site's
    anchor = f"upgrade-torch-{kind}-2-9-0-2-10-0"  # one kind of build's upgrade
    raw = (root / "_build" / "html" / "docs" / "upgrades.html").read_text(encoding="utf-8")
    section = re.search(rf'<section id="{anchor}">.*?</section>', raw, re.S)
    assert section is not None  # the upgrade's own anchor, on the upgrades page
    text = page_text_of(section[0])
    assert (
        f"Before: cpu-torch2.9.0.json (cpu, torch 2.9.0{suffix}" in text
        and f"After: cpu-torch2.10.0.json (cpu, torch 2.10.0{suffix}" in text
    )
    assert f"torch 2.9.0{suffix} 2.10.0{suffix}" in text  # the packages table
    assert "2 claims compared; 1 changed verdict, 1 of them held before and no longer hold" in text
    assert "kb-holds ✔ holds submitted by hand, not reproduced ✘ refuted submitted by hand, not reproduced" in text
    index = html(root, "docs/upgrades.html")
    assert "torch 2.9.0 → 2.10.0 : 1 verdicts moved" in index and "No committed run yet of 2.11.0" in index
    assert not (root / "docs" / "upgrades").exists()  # nothing generated into the source tree
    search = json.loads(
        (root / "_build" / "html" / "searchindex.js")
        .read_text(encoding="utf-8")
        .removeprefix("Search.setIndex(")
        .removesuffix(")")
    )
    assert search["alltitles"][f"torch 2.9.0 → 2.10.0 on cpu, {own}"][0][1] == anchor  # found by the search
    assert f'href="docs/upgrades.html#{anchor}"' in (root / "_build" / "html" / "index.html").read_text(
        encoding="utf-8"
    )  # in the navigation


def test_the_upgrade_page_and_torchclaims_diff_say_the_same(site):
    root, *_ = site
    diff = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchclaims",
            "diff",
            "--root",
            str(root),
            str(root / "results" / "cpu-torch2.9.0.json"),
            str(root / "results" / "cpu-torch2.10.0.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert diff.returncode == 1  # a claim that held no longer does
    assert (
        "REGRESSION kb-holds: holds -> refuted" in diff.stdout
        and "0 measurements moved beyond their tolerance" in diff.stdout
    )


def test_the_build_is_compared_with_the_committed_history(site):
    root, build_torch, *_ = site
    text = html(root, "docs/changes.html")
    assert (
        f"This build (torch {build_torch}) against the committed run of the nearest earlier release, "
        "torch 2.10.0: 1 claim moved: kb-holds."
    ) in text
    assert "Before: cpu-torch2.10.0.json" in text and "After: this build" in text
    assert "✘ refuted submitted by hand, not reproduced ✔ holds this build" in text  # each verdict with its source


def test_a_pair_that_goes_away_leaves_no_section(site):
    """Runs last: it changes the site the other tests read."""
    root, *_ = site
    (root / "results" / "cpu-torch2.10.0.json").unlink()
    built(root)
    assert 'id="upgrade-torch-' not in (root / "_build" / "html" / "docs" / "upgrades.html").read_text(encoding="utf-8")
    assert "Fewer than two releases of this series have a committed run" in html(root, "docs/upgrades.html")
