"""Lighthouse's judgement of the published site on a phone: accessibility, best practices and SEO.

The site is the real one, as ``nox -s docs`` publishes it into _build/html
(TORCHCLAIMS_SITE names another folder), served gzip-compressed on the
loopback address as a static host serves it. Lighthouse (the npm package,
pinned in tests/lighthouse/package.json: ``npm ci --prefix tests/lighthouse``;
.ci/run does) runs its mobile profile through the system Chromium
(CHROME_PATH; TORCHCLAIMS_CHROMIUM as in test_browser.py) on one page of
every type the site has (PAGES: the largest where there are several) and must
score at least 95 for accessibility, 90 for best practices and 100 for SEO.
Performance and page weight are figures of a host and its load, measured
against their targets by benchmarks/lighthouse.py on the same pages. It needs no network. Lighthouse's 4x
CPU slowdown is calibrated for a high-end desktop (benchmark index
1500-2000, its docs/throttling.md); a slower or busier host gets the slowdown
that brings it to the same phone, from the benchmark index Lighthouse
measures on it (TORCHCLAIMS_LIGHTHOUSE_CPU sets it instead). Without the
built site, Node, Lighthouse or Chromium these tests are skipped with that
reason, except under CI, where they fail. Reports go to _build/lighthouse.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from browser_site import Server

pytestmark = pytest.mark.browser  # drives Chromium over a built site

ROOT = Path(__file__).resolve().parents[1]
LIGHTHOUSE = ROOT / "tests" / "lighthouse" / "node_modules" / "lighthouse" / "cli" / "index.js"
REPORTS = ROOT / "_build" / "lighthouse"
# Accessibility and best practices judge the markup a page ships, the same on any
# host. Performance is a timing figure of the host and its load: it is measured,
# against its target of 90, by benchmarks/lighthouse.py, as page weight is.
MIN_SCORES = {"accessibility": 95, "best-practices": 90, "seo": 100}
CATEGORIES = tuple(MIN_SCORES)
UNINDEXED = {"search"}  # Sphinx's search page asks crawlers to stay away (robots noindex): SEO does not apply
DESKTOP_BENCHMARK = 1750  # the middle of the range Lighthouse's default 4x slowdown is calibrated for
CHROME_FLAGS = (
    "--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-background-networking --no-first-run"
)


def _require(found, reason: str):
    if not found:
        if os.environ.get("CI"):
            pytest.fail(reason + "; CI must run these tests")
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def site() -> Path:
    folder = Path(os.environ.get("TORCHCLAIMS_SITE") or ROOT / "_build" / "html")
    return _require(
        folder if (folder / "index.html").is_file() else None, f"no built site in {folder}: run `nox -s docs` first"
    )


@pytest.fixture(scope="module")
def tools() -> tuple[str, str]:
    node = _require(shutil.which("node"), "node not found: install Node.js 18 or newer (`apt-get install nodejs npm`)")
    _require(LIGHTHOUSE.is_file(), f"{LIGHTHOUSE} not found: run `npm ci --prefix tests/lighthouse`")
    chromium = (
        os.environ.get("TORCHCLAIMS_CHROMIUM")
        or os.environ.get("CHROME_PATH")
        or shutil.which("chromium")
        or "/usr/bin/chromium"
    )
    _require(
        Path(chromium).is_file(), f"{chromium} not found: install Debian's browser with `apt-get install chromium`"
    )
    return node, chromium


@pytest.fixture(scope="module")
def server(site):
    server = Server(site, compress=True)
    yield server
    server.close()


def _largest(pages: list[Path]) -> Path | None:
    return max(pages, key=lambda page: page.stat().st_size, default=None)


def _largest_in(folder: str):
    """The largest page of a folder but its index: the one of its type that costs the most."""
    return lambda site: _largest([p for p in (site / folder).glob("*.html") if p.name != "index.html"])


# One page of each type the site has: each is made by different directives and scripts.
PAGES = {
    "home": lambda site: site / "index.html",
    "accelerator": _largest_in("docs/accelerators"),
    "accelerator choice": lambda site: site / "docs" / "accelerators" / "index.html",
    "largest topic": _largest_in("docs/topics"),
    "claim script": _largest_in("docs/auto_gallery"),
    "gallery": lambda site: site / "docs" / "auto_gallery" / "index.html",
    "operator table": lambda site: site / "docs" / "coverage" / "operators.html",
    "architecture table": lambda site: site / "docs" / "coverage" / "architectures.html",
    "changes": lambda site: site / "docs" / "changes.html",
    "upgrades": lambda site: site / "docs" / "upgrades.html",
    "prose": lambda site: site / "docs" / "methodology.html",
    "search": lambda site: site / "search.html",
}


def lighthouse(
    tools: tuple[str, str], url: str, report: Path, categories=CATEGORIES, slowdown: float | None = None
) -> dict:
    node, chromium = tools
    report.parent.mkdir(parents=True, exist_ok=True)
    command = [
        node,
        str(LIGHTHOUSE),
        url,
        "--output=json",
        f"--output-path={report}",
        f"--only-categories={','.join(categories)}",
        f"--chrome-flags={CHROME_FLAGS}",
        "--disable-full-page-screenshot",
        "--quiet",
    ]
    if slowdown is not None:
        command.append(f"--throttling.cpuSlowdownMultiplier={slowdown}")
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=600, env=dict(os.environ, CHROME_PATH=chromium)
    )
    assert result.returncode == 0, f"lighthouse failed on {url}:\n{result.stderr[-3000:]}"
    return json.loads(report.read_text())


@pytest.fixture(scope="module")
def cpu_slowdown(tools, server) -> float:
    return calibrated_slowdown(tools, server.url)


def calibrated_slowdown(tools: tuple[str, str], url: str) -> float:
    """The CPU slowdown that makes this host the phone Lighthouse's default makes of a high-end desktop."""
    if os.environ.get("TORCHCLAIMS_LIGHTHOUSE_CPU"):
        return float(os.environ["TORCHCLAIMS_LIGHTHOUSE_CPU"])
    report = lighthouse(tools, url + "search.html", REPORTS / "calibration.json", categories=("performance",))
    index = report["environment"]["benchmarkIndex"]
    slowdown = round(max(1.0, min(4.0, 4 * index / DESKTOP_BENCHMARK)), 2)
    print(f"lighthouse: benchmark index {index} on this host, CPU slowdown {slowdown}")
    return slowdown


def _failing(report: dict, category: str) -> list[str]:
    """The audits of a category that cost it points, with their scores, for the failure message."""
    audits = report["audits"]
    refs = [ref for ref in report["categories"][category]["auditRefs"] if ref["weight"] > 0]
    return [
        f"{ref['id']}: {audits[ref['id']]['score']} {audits[ref['id']].get('displayValue', '')}".rstrip()
        for ref in refs
        if audits[ref["id"]]["score"] is not None and audits[ref["id"]]["score"] < 1
    ]


@pytest.mark.parametrize("name", list(PAGES))
def test_lighthouse_on_a_phone_meets_the_accessibility_best_practices_and_seo_targets(
    tools, server, site, cpu_slowdown, name
):
    page = PAGES[name](site)
    if page is None and name == "accelerator":
        pytest.skip("the site has no accelerator page (docs/accelerators/) to judge")
    assert page is not None and page.is_file(), f"{name}: {page} is not in the published site"
    path = page.relative_to(site).as_posix()
    judged = [category for category in CATEGORIES if not (category == "seo" and name in UNINDEXED)]
    # performance is run too, unjudged: its network audit shows whether the page arrived compressed
    report = lighthouse(
        tools,
        server.url + path,
        REPORTS / f"{name.replace(' ', '-')}.json",
        categories=("performance", *judged),
        slowdown=cpu_slowdown,
    )
    settings = report["configSettings"]
    assert settings["formFactor"] == "mobile" and settings["throttling"]["cpuSlowdownMultiplier"] == cpu_slowdown
    document = next(
        r for r in report["audits"]["network-requests"]["details"]["items"] if r["resourceType"] == "Document"
    )
    assert document["transferSize"] < document["resourceSize"] / 2, f"{path} was not served compressed: {document}"
    scores = {category: round(100 * report["categories"][category]["score"]) for category in judged}
    print(
        f"lighthouse {path}: {scores}, CPU slowdown {cpu_slowdown} "
        f"(benchmark index {report['environment']['benchmarkIndex']})"
    )
    low = {category: _failing(report, category) for category, score in scores.items() if score < MIN_SCORES[category]}
    assert low == {}, f"{path} scores {scores}: " + json.dumps(low, indent=1)
