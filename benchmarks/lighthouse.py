"""Lighthouse performance (mobile) and HTML weight of the published site, against their targets.

Prints, for one page of every type the site has (``PAGES`` in
tests/test_lighthouse.py), Lighthouse's performance score (target: at least
90) with the audits that cost it points, and the heaviest pages' HTML sizes
against the limit in torchclaims.limits (which tests/test_page_weight.py
asserts). Performance depends on the host and its load, so these are
figures, not tests; tests/test_lighthouse.py asserts the categories that
judge markup (accessibility, best practices, SEO) on the same pages with the
same tools and the same calibrated CPU slowdown. Usage, after ``nox -s docs`` and
``npm ci --prefix tests/lighthouse``::

    python benchmarks/lighthouse.py [--site _build/html]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]

import test_lighthouse as lh  # noqa: E402 - the test's own runner, calibration and pages
from browser_site import Server  # noqa: E402
from torchclaims import limits  # noqa: E402
from torchclaims.sphinxext.build.site import heavy_pages  # noqa: E402

TARGET_SCORE = 90


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    site = parser.parse_args().site
    tools = (lh.shutil.which("node"), lh.os.environ.get("CHROME_PATH") or "/usr/bin/chromium")
    server = Server(site, compress=True)
    try:
        slowdown = lh.calibrated_slowdown(tools, server.url)
        for name, choose in lh.PAGES.items():
            page = choose(site)
            if page is None:
                print(f"{name}: no such page")
                continue
            path = page.relative_to(site).as_posix()
            report = lh.lighthouse(
                tools,
                server.url + path,
                lh.REPORTS / f"perf-{name.replace(' ', '-')}.json",
                categories=("performance",),
                slowdown=slowdown,
            )
            score = round(100 * report["categories"]["performance"]["score"])
            met = "met" if score >= TARGET_SCORE else "NOT met"
            print(f"performance {path}: {score} (target >= {TARGET_SCORE}: {met}); CPU slowdown {slowdown}")
            for audit in lh._failing(report, "performance"):
                print(f"    {audit}")
    finally:
        server.close()
    sizes = sorted(((p.stat().st_size, p.relative_to(site).as_posix()) for p in site.rglob("*.html")), reverse=True)
    print(
        f"HTML weight: {len(heavy_pages(site))} of {len(sizes)} pages over {limits.LIMITS.page_html_bytes:,} bytes "
        "(limit: none over)"
    )
    for size, path in sizes[:8]:
        print(f"    {size:>10,}  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
