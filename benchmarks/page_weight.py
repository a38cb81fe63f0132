"""How heavy the published pages are: HTML bytes, DOM nodes, words, tooltip text, phone height.

For each page it prints the size of its HTML, the DOM nodes and visible words
a browser counts, the bytes held in ``title`` attributes, how often "submitted
by hand" occurs in its text, and the page's height at phone width (390 px,
Debian's Chromium through chromedriver, as tests/test_browser.py drives it).
It asserts nothing. Usage, after a site build (``nox -s docs``)::

    python benchmarks/page_weight.py [--site _build/html] [PAGE ...]

Without pages it measures the home page, every accelerator page and every topic page.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import threading
from pathlib import Path

MEASURE = """
const words = document.body.innerText.split(/\\s+/).filter(Boolean).length;
const titles = Array.from(document.querySelectorAll('[title]'))
  .reduce((n, el) => n + el.getAttribute('title').length, 0);
return {nodes: document.getElementsByTagName('*').length, words, titles,
        hand: (document.body.innerText.match(/submitted by hand/g) || []).length,
        height: document.documentElement.scrollHeight,
        sideways: Math.max(0,
                           ...Array.from(document.querySelectorAll('.tc-matrix-scroll'))
                             .map(b => b.scrollWidth - b.clientWidth),
                           document.documentElement.scrollWidth - document.documentElement.clientWidth)};
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:  # noqa: A002 (the base class's name)
        pass


def pages(site: Path, named: list[str]) -> list[str]:
    if named:
        return named
    found = ["index.html"]
    found += sorted(p.relative_to(site).as_posix() for p in (site / "docs" / "accelerators").glob("*.html"))
    found += sorted(p.relative_to(site).as_posix() for p in (site / "docs" / "topics").glob("*.html"))
    return found


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(
        service=Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options
    )
    driver.set_page_load_timeout(300)
    return driver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default="_build/html", help="the published folder (default: %(default)s)")
    parser.add_argument("pages", nargs="*")
    args = parser.parse_args()
    site = Path(args.site).resolve()
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_port}/"
    driver = browser()
    print(
        f"{'page':36} {'HTML KB':>8} {'nodes':>7} {'words':>7} {'title KB':>8} "
        f"{'by hand':>7} {'in HTML':>7} {'phone px':>9} {'1400 px sideways':>16}"
    )
    try:
        for page in pages(site, args.pages):
            size = (site / page).stat().st_size / 1024
            driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True},
            )
            driver.get(url + page)
            phone = driver.execute_script(MEASURE)
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            driver.get(url + page)
            desktop = driver.execute_script(MEASURE)
            in_html = (site / page).read_text(encoding="utf-8").count("submitted by hand")
            print(
                f"{page:36} {size:8.0f} {desktop['nodes']:7d} {desktop['words']:7d} {desktop['titles'] / 1024:8.1f} "
                f"{desktop['hand']:7d} {in_html:7d} {phone['height']:9d} {desktop['sideways']:14d}px"
            )
    finally:
        driver.quit()
        httpd.shutdown()


if __name__ == "__main__":
    main()
