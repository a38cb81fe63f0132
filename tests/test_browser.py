"""The built site in a real browser: Debian's Chromium, driven through chromedriver.

The site is built once for the session (browser_site.py) and served from its
published folder on the loopback address. Chromium and chromedriver come from
the system (``apt-get install chromium chromium-driver``; .ci/run installs them
where missing; TORCHCLAIMS_CHROMIUM and TORCHCLAIMS_CHROMEDRIVER point
elsewhere). Without them these tests are skipped with that reason, except under
CI, where a missing browser fails the run. Screenshots go to _build/screenshots.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.parse
from pathlib import Path

import pytest

from browser_site import LONG_VALUE, XLA_REASON, Server, build_browser_site
from torchclaims.sphinxext.build.site import leftovers

pytestmark = pytest.mark.browser  # drives Chromium over a built site

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "_build" / "screenshots"
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True}
WAIT = 30.0  # seconds; generous for a loaded 2-core machine
XLA_CELL = "claim-kb-holds--xla--torch-xla-2-9-0-on-torch-2-9-0"


def _browser_paths() -> tuple[str, str]:
    chromium = os.environ.get("TORCHCLAIMS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    driver = os.environ.get("TORCHCLAIMS_CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
    missing = [path for path in (chromium, driver) if not Path(path).is_file()]
    if missing:
        reason = (
            f"{' and '.join(missing)} not found: install Debian's browser "
            "with `apt-get install chromium chromium-driver` "
            "(.ci/run does), or set TORCHCLAIMS_CHROMIUM and TORCHCLAIMS_CHROMEDRIVER"
        )
        if os.environ.get("CI"):
            pytest.fail(reason + "; CI must run the browser tests")
        pytest.skip(reason)
    return chromium, driver


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    return build_browser_site(tmp_path_factory.mktemp("browser-site"))


@pytest.fixture(scope="session")
def server(site):
    server = Server(site.published)
    yield server
    server.close()


@pytest.fixture(scope="session")
def browser():
    chromium, driver_path = _browser_paths()
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(WAIT * 4)
    yield driver
    driver.quit()


@pytest.fixture
def desktop(browser):
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    browser.get_log("browser")  # start each test with an empty console
    return browser


@pytest.fixture
def phone(browser):
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    browser.get_log("browser")
    yield browser
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def wait_for(condition, what: str):
    from selenium.common.exceptions import WebDriverException

    deadline, last = time.monotonic() + WAIT, None
    while time.monotonic() < deadline:
        try:
            value = condition()
        except WebDriverException as exc:  # not there yet
            value, last = None, exc
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}" + (f" ({last.msg})" if last else ""))


def choose(driver, name: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("css selector", f'.tc-filters [name="{name}"]')).select_by_value(value)


def click(driver, element) -> None:
    """A real click, after bringing the element to the middle of the window (clear of sticky headers)."""
    driver.execute_script(
        "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", element
    )  # the theme scrolls smoothly
    element.click()


LANDED = """const t = document.getElementById(arguments[0]);
if (!t) return null;
const r = t.getBoundingClientRect();
const block = t.closest('details');
return {open: !!block && block.open, top: r.top, height: innerHeight, text: block ? block.innerText : ''};"""


def settled(driver, element_id: str) -> dict:
    """Where an anchor's target sits once the page has stopped moving: two reads
    a tenth of a second apart agree (loading and scrolling take as long as they
    take on a given machine; only the final place is the page's behaviour)."""
    previous = {}

    def still() -> dict | None:
        nonlocal previous
        now = driver.execute_script(LANDED, element_id)
        time.sleep(0.1)
        stable = now is not None and now == previous
        previous = now or {}
        return now if stable else None

    return wait_for(still, f"#{element_id} to stop moving")


UNFOLD = """document.querySelectorAll('details:not([open])').forEach(d => d.open = true);
return Array.from(document.querySelectorAll('.tc-later'), h => h.textContent.trim().slice(0, 200));"""


def unfold(driver) -> None:
    """Every folded block open, with the parts a page loads when they open (page_data.py) in
    place; blocks a loaded part brings are opened in turn. A part still missing is named."""
    waiting = []

    def loaded() -> bool:
        waiting[:] = driver.execute_script(UNFOLD)
        return not waiting

    try:
        wait_for(loaded, "the folded parts to load")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; still waiting: {waiting[:5]}") from None


def count_text(driver) -> str:
    return driver.find_element("css selector", ".tc-count").text


def visible_rows(driver) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('tr.tc-claim-row')).filter(r => !r.hidden).map(r => r.id)"
    )


def console_errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def screenshot(driver, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def test_filter_refuted_claims_about_cpu_share_the_url_land_on_the_evidence_and_come_back(desktop, server):
    driver = desktop
    driver.get(server.url)
    total = wait_for(lambda: count_text(driver), "the claim count")
    assert total.endswith("claims") and total.split()[0] == total.split()[2]
    choose(driver, "backend", "cpu")
    choose(driver, "verdict", "refuted")
    wait_for(lambda: count_text(driver).startswith("2 of "), "the two claims about cpu refuted somewhere")
    query = urllib.parse.parse_qs(urllib.parse.urlparse(driver.current_url).query)
    assert query == {"backend": ["cpu"], "verdict": ["refuted"]}
    assert visible_rows(driver) == ["matrix-kb-holds", "matrix-kb-refuted"]
    topics = driver.execute_script(
        "return Array.from(document.querySelectorAll('tr.tc-topic-row'))"
        ".filter(r => !r.hidden).map(r => r.dataset.topic)"
    )
    assert topics == ["device-switch"]  # a topic with nothing left shows no header
    columns = driver.execute_script(
        "return Array.from(document.querySelectorAll('thead th[data-backend]'))"
        ".filter(th => th.offsetParent).map(th => th.dataset.backend)"
    )
    assert columns == ["cpu", "xla"]  # only backends with records have a column, and a filter hides none of them
    screenshot(driver, "matrix-refuted-about-cpu-desktop")

    shared = driver.current_url
    driver.get(server.url)  # a fresh visit, then the shared address
    driver.get(shared)
    wait_for(lambda: count_text(driver).startswith("2 of "), "the shared address to apply its filters")

    cell = driver.find_element("css selector", '#matrix-kb-holds td[data-backend="xla"] a.tc-run:not([hidden])')
    assert "refuted" in cell.text and "outside its scope" in cell.text
    assert cell.get_dom_attribute("title") is None  # no tooltip: the evidence it leads to says where and how it ran
    click(driver, cell)
    wait_for(lambda: driver.current_url.endswith("#" + XLA_CELL), "the evidence page")
    landed = settled(driver, XLA_CELL)
    assert landed["open"] and -1 < landed["top"] < landed["height"], (
        landed
    )  # in view (a layout in fractions of a pixel may scroll a fraction past)
    assert (
        "✘ refuted" in landed["text"]
        and "XLA on the CPU (Test CPU)" in landed["text"]
        and "xla-run.json" in landed["text"]
    )
    screenshot(driver, "evidence-desktop")

    driver.back()
    wait_for(lambda: "backend=cpu" in driver.current_url, "the matrix again")
    wait_for(lambda: count_text(driver).startswith("2 of "), "the filters after Back")
    assert driver.execute_script("return document.querySelector('[name=verdict]').value") == "refuted"
    assert console_errors(driver) == []


def follow_the_xla_cell(driver, server) -> None:
    """The home page, then the address of kb-holds' xla cell (a real visit to it, as with scripts off)."""
    driver.get(server.url)
    cell = driver.find_element("css selector", '#matrix-kb-holds td[data-backend="xla"] a.tc-run')
    driver.get(cell.get_attribute("href"))
    assert driver.current_url.endswith("#" + XLA_CELL)


def test_without_javascript_a_matrix_cell_lands_on_its_run_with_a_link_to_the_record(desktop, server, site):
    """The table of every run loads with a script (page_data.py); without one, the page holds each run's
    anchor in its place, with the run's verdict and its record, and the browser opens the folded block."""
    desktop.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        follow_the_xla_cell(desktop, server)
        target = desktop.find_element("id", XLA_CELL)
        line = target.find_element("xpath", "./ancestor::li[1]")
        assert line.is_displayed() and "✘ refuted" in line.text and "XLA on the CPU" in line.text, line.text
        where = (
            "(r => r.top >= 0 && r.bottom <= innerHeight)"
            f"(document.getElementById('{XLA_CELL}').closest('li').getBoundingClientRect())"
        )
        # evaluated by the browser's debugger, which the page's setting leaves alone; it scrolls once the page loads
        wait_for(
            lambda: desktop.execute_cdp_cmd("Runtime.evaluate", {"expression": where})["result"]["value"],
            "the run's line in view",
        )
        record = line.find_element("css selector", "a").get_attribute("href")
        path = urllib.parse.urlparse(record).path.lstrip("/")
        assert path.endswith(".json") and (site.published / path).is_file(), record
    finally:
        desktop.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


def test_text_filter_no_matches_and_show_all(desktop, server):
    driver = desktop
    driver.get(server.url)
    field = wait_for(lambda: driver.find_element("css selector", '.tc-filters [name="q"]'), "the text field")
    field.send_keys("no claim says this")
    wait_for(lambda: count_text(driver).startswith("0 of "), "no match")
    assert driver.find_element("css selector", ".tc-no-matches").is_displayed()
    assert "q=no+claim+says+this" in driver.current_url
    click(driver, driver.find_element("css selector", "[data-tc-reset]"))
    wait_for(lambda: count_text(driver).split()[0] == count_text(driver).split()[2], "every claim again")
    field.send_keys("kb-long")
    wait_for(lambda: visible_rows(driver) == ["matrix-kb-long"], "the text filter")


def test_a_backend_shows_each_of_its_versions_on_request(desktop, server, site):
    driver = desktop
    driver.get(server.url + "?v.cpu=torch+2.12.0")
    header = wait_for(lambda: driver.find_element("css selector", 'thead th[data-backend="cpu"]'), "the cpu header")
    assert "Older CPU" in header.text and "Test CPU" not in header.text
    cell = wait_for(
        lambda: driver.find_element("css selector", '#matrix-kb-holds td[data-backend="cpu"] .tc-run:not([hidden])'),
        "the older version's cell, loaded when picked",
    )
    assert cell.get_attribute("data-version") == "torch 2.12.0"
    assert cell.get_attribute("href").endswith("#claim-kb-holds--cpu--torch-2-12-0")
    # the page carries only the version each header shows first; the others come once, from a data file beside it
    page = (site.published / "index.html").read_text()
    assert 'data-version="torch 2.12.0" data-verdict' not in page
    assert "claim-kb-holds--cpu--torch-2-12-0" in (site.published / "_static" / "data" / "page-index.js").read_text()
    assert console_errors(driver) == []


PICK_LATER = """const pickers = document.querySelectorAll('table[data-tc-later] select[data-tc-version]');
pickers.forEach((p) => {
  p.selectedIndex = p.options.length - 1; p.dispatchEvent(new Event('change', {bubbles: true}));
});
return pickers.length > 0;"""


def test_every_page_loads_without_console_errors_and_every_internal_link_and_anchor_resolves(desktop, server, site):
    driver = desktop
    pages, seen, broken = [server.url], set(), []
    ids: dict[str, set[str]] = {}
    links: list[tuple[str, str]] = []
    while pages:
        url = pages.pop()
        if url in seen:
            continue
        seen.add(url)
        driver.get(url)
        if driver.execute_script(PICK_LATER):  # the matrix's other versions: their links are checked too
            wait_for(
                lambda: driver.find_elements("css selector", "table.tc-all-versions"),
                "the other versions of the matrix",
            )
        unfold(driver)  # and the anchors and links of what loads when a block opens
        found = driver.execute_script(
            "return {ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id),"
            " links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href)}"
        )
        errors = console_errors(driver)
        assert errors == [], f"{url}: {errors}"
        ids[url] = set(found["ids"])
        for href in found["links"]:
            target, _, fragment = href.partition("#")
            if not target.startswith(server.url):
                continue
            links.append((url, href))
            path = urllib.parse.unquote(urllib.parse.urlparse(target).path).lstrip("/") or "index.html"
            file = site.published / path
            if not file.is_file():
                broken.append(f"{url} -> {href}: no such file")
            elif file.suffix == ".html" and target not in seen:
                pages.append(target)
    for page, href in links:
        target, _, fragment = href.partition("#")
        if fragment and target in ids and urllib.parse.unquote(fragment) not in ids[target]:
            broken.append(f"{page} -> {href}: no such anchor")
    assert len(seen) >= 10
    assert broken == []


PHONE_OVERFLOW = """
const width = document.documentElement.clientWidth;
const offenders = [];
document.querySelectorAll('details').forEach(d => d.open = true);
for (const el of document.body.querySelectorAll('*')) {
  const style = getComputedStyle(el);
  if (style.position === 'fixed' || el.closest('.sidebar-drawer, .toc-drawer')) continue;  // off-canvas menus
  const rect = el.getBoundingClientRect();
  if (rect.width && rect.right > width + 1)
    offenders.push(`${el.tagName.toLowerCase()}.${el.className} ${Math.round(rect.right)}px`);
}
return {width, scroll: document.documentElement.scrollWidth, offenders: offenders.slice(0, 10)};
"""

# A layout that fits only with narrow glyphs fits by luck: the fonts a machine has
# decide it (Debian's DejaVu is wider than most). Every width check runs twice,
# as the page comes and with every glyph widened, so that it fails on any machine
# when something cannot shrink or wrap.
WIDE_TEXT = """
const style = document.createElement('style');
style.id = 'tc-test-wide-text';
style.textContent = '* { letter-spacing: .12em !important; word-spacing: .2em !important; }';
document.head.appendChild(style);
"""


def overflow(driver, script: str = "") -> list[dict]:
    """What sticks out of a phone's width: as the page comes, then with wide text."""
    script = script or PHONE_OVERFLOW
    unfold(driver)
    found = [driver.execute_script(script)]
    driver.execute_script(WIDE_TEXT)
    found.append(driver.execute_script(script))
    driver.execute_script("document.getElementById('tc-test-wide-text').remove()")
    return found


@pytest.mark.parametrize(
    "page",
    [
        "index.html",
        "docs/topic.html",
        "docs/compile.html",
        "docs/changes.html",
        "docs/auto_gallery/index.html",
        "docs/auto_gallery/kb_long.html",
    ],
)
def test_on_a_phone_nothing_scrolls_sideways(phone, server, page):
    phone.get(server.url + page)
    for found in overflow(phone):
        assert found["scroll"] <= found["width"], found
        assert found["offenders"] == [], found
    if page == "index.html":
        screenshot(phone, "matrix-phone")
    elif page == "docs/topic.html":
        screenshot(phone, "topic-phone")


NESTED_SCROLL = """
const boxes = [];
for (const el of document.querySelectorAll('.tc-matrix-page, .tc-matrix-page *')) {
  const style = getComputedStyle(el);
  const scrolls = (a, size, client) => /(auto|scroll)/.test(a) && el[size] > el[client] + 1;
  if (scrolls(style.overflowX, 'scrollWidth', 'clientWidth')
      || scrolls(style.overflowY, 'scrollHeight', 'clientHeight'))
    boxes.push(`${el.tagName.toLowerCase()}.${el.className}`);
}
const width = document.documentElement.clientWidth;
const cells = Array.from(document.querySelectorAll('tr.tc-claim-row:not([hidden]) > *'),
                         c => c.getBoundingClientRect());
const caption = document.querySelector('table.tc-matrix caption');
return {boxes, width, cells: cells.length, outside: cells.filter(r => r.left < -1 || r.right > width + 1).length,
        captionCut: caption.scrollWidth > caption.clientWidth + 1 || caption.getBoundingClientRect().right > width + 1};
"""


def test_on_a_phone_the_matrix_is_in_the_page_s_one_scroll_with_every_column_in_reach(phone, server):
    """No box that scrolls inside the page: a card per claim, each cell named by its backend, within the width."""
    phone.get(server.url)
    wait_for(lambda: count_text(phone), "the matrix")
    for found in (phone.execute_script(NESTED_SCROLL), phone.execute_script(WIDE_TEXT + NESTED_SCROLL)):
        assert found["boxes"] == [], found
        assert found["cells"] > 0 and found["outside"] == 0 and not found["captionCut"], found
    phone.execute_script("document.getElementById('tc-test-wide-text').remove()")
    xla = phone.find_element("css selector", '#matrix-kb-holds td[data-backend="xla"]')
    assert xla.is_displayed() and xla.text.startswith("xla") and "refuted" in xla.text, xla.text
    phone.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", xla)
    screenshot(phone, "matrix-phone-rows")


SMALL_TEXT = """
const small = [];
for (const el of document.querySelectorAll('article *')) {
  const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
  if (!own || !el.getClientRects().length || el.closest('.tc-sr, .headerlink')) continue;
  const size = parseFloat(getComputedStyle(el).fontSize);
  const text = el.textContent.trim().slice(0, 20);
  if (size < 12) small.push(`${el.tagName.toLowerCase()}.${el.className} ${size}px "${text}"`);
}
const pickers = Array.from(document.querySelectorAll('select[data-tc-version]'), s => s.getBoundingClientRect().height);
return {small: small.slice(0, 10), pickers};
"""


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_no_text_on_the_home_page_is_under_12_px_and_version_pickers_are_a_finger_wide(width, request, server):
    driver = request.getfixturevalue(width)
    driver.get(server.url)
    wait_for(lambda: count_text(driver), "the matrix")
    found = driver.execute_script(SMALL_TEXT)
    assert found["small"] == [], found
    assert found["pickers"] and min(found["pickers"]) >= (44 if width == "phone" else 24), found


TALLIES = """
const shown = Array.from(document.querySelectorAll('tr.tc-claim-row')).filter(r => !r.hidden);
const out = {};
document.querySelectorAll('thead th[data-backend]').forEach(th => {
  const said = {}, counted = {};
  th.querySelectorAll('.tc-totals:not([hidden]) [data-kind]').forEach(t => {
    said[t.dataset.kind] = Number(t.querySelector('.tc-n').textContent); counted[t.dataset.kind] = 0; });
  for (const row of shown) {
    const run = row.querySelector(`td[data-backend="${th.dataset.backend}"] .tc-run:not([hidden])`);
    if (run) counted[run.dataset.verdict] += 1;
  }
  out[th.dataset.backend] = {said, counted};
});
return {tallies: out, caption: document.querySelector('.tc-caption-count').textContent, rows: shown.length,
        topics: Array.from(document.querySelectorAll('tr.tc-topic-row:not([hidden]) .tc-topic-count'),
                           t => t.textContent)};
"""


def test_every_count_on_the_home_page_is_over_the_rows_the_filter_shows(desktop, server):
    """Header tallies, caption and topic rows follow the filter; unfiltered, they are the numbers the page is built
    with (read with scripts off)."""
    desktop.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        desktop.get(server.url)
        built = desktop.execute_cdp_cmd(
            "Runtime.evaluate", {"expression": f"(() => {{{TALLIES}}})()", "returnByValue": True}
        )["result"]["value"]
    finally:
        desktop.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})
    desktop.get(server.url)
    wait_for(lambda: count_text(desktop), "the matrix")
    everything = desktop.execute_script(TALLIES)
    assert everything["tallies"] == built["tallies"] and everything["caption"] == built["caption"]
    for backend, tally in everything["tallies"].items():
        assert tally["said"] == tally["counted"], (backend, tally)
    desktop.get(server.url + "?backend=neuron")
    wait_for(lambda: count_text(desktop).startswith("1 of "), "the one claim about neuron")
    neuron = desktop.execute_script(TALLIES)
    total = everything["rows"]
    assert neuron["rows"] == 1 and neuron["caption"] == f"1 of {total} claims", neuron
    assert neuron["topics"] == ["(1 of 6 claims)"], neuron  # kb-vendor among the six device-switch claims
    for backend, tally in neuron["tallies"].items():
        assert tally["said"] == tally["counted"] and sum(tally["said"].values()) == 1, (backend, tally)
    assert neuron["tallies"] != everything["tallies"]
    # the mark says which backend the claim is about, never "target" in a column of another backend
    assert desktop.find_elements("css selector", "#matrix-kb-vendor .tc-target-mark") == []
    desktop.get(server.url)
    mark = wait_for(
        lambda: desktop.find_element("css selector", '#matrix-kb-holds td[data-backend="cpu"] .tc-target-mark'),
        "a mark",
    )
    assert mark.text == "◎ about cpu"


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_a_filtered_address_opens_on_its_rows(width, request, server):
    driver = request.getfixturevalue(width)
    driver.get(server.url + "?backend=cpu&verdict=refuted")
    wait_for(lambda: count_text(driver).startswith("2 of "), "the filtered rows")
    first = driver.find_element("css selector", "tr.tc-claim-row:not([hidden])")
    top = driver.execute_script("return [arguments[0].getBoundingClientRect().top, innerHeight]", first)
    screenshot(driver, f"matrix-filtered-{width}")
    assert 0 <= top[0] < top[1], top


LANDING = """
const target = document.getElementById(arguments[0]);
if (!target) return null;
const landing = target.closest('tr, li, .tc-run');
const at = (text) => {
  const walker = document.createTreeWalker(landing, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.textContent.includes(text)) {
      const r = n.parentElement.getBoundingClientRect();
      return {top: r.top, bottom: r.bottom, node: n};
    }
  }
  return null;
};
const title = at(arguments[1]), reason = at(arguments[2]), measured = at(arguments[3]);
const config = at('Configuration unlike');
const before = (a, b) => !b || !!(a.node.compareDocumentPosition(b.node) & Node.DOCUMENT_POSITION_FOLLOWING);
const strip = (p) => p && {top: p.top, bottom: p.bottom};
return {title: strip(title), reason: strip(reason), measured: strip(measured), height: innerHeight,
        ordered: !!(title && reason && measured) && before(measured, config), text: landing.innerText.slice(0, 400)};
"""


@pytest.mark.parametrize("script", ["with JavaScript", "without JavaScript"])
@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_a_landing_from_an_xla_cell_shows_the_title_its_reason_and_the_failing_measurement_first(
    width, script, request, server
):
    driver = request.getfixturevalue(width)
    off = script == "without JavaScript"
    driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": off})
    try:
        follow_the_xla_cell(driver, server)
        args = (XLA_CELL, "Claim kb-holds", XLA_REASON, "max abs error = 1 (bound:")

        def landed():
            if off:  # the page's scripts are off: the browser's debugger reads it
                expression = f"(function() {{{LANDING}}}).apply(null, {json.dumps(args)})"
                found = driver.execute_cdp_cmd("Runtime.evaluate", {"expression": expression, "returnByValue": True})
                found = found["result"].get("value")
            else:
                found = driver.execute_script(LANDING, *args)
            parts = found and [found["title"], found["reason"], found["measured"]]
            in_view = parts and all(p and 0 <= p["top"] and p["bottom"] <= found["height"] for p in parts)
            return found if in_view else None

        found = wait_for(landed, f"title, reason and failing measurement in the first viewport ({width}, {script})")
        assert found["ordered"], found  # the failing measurement before any configuration difference
        screenshot(driver, f"landing-xla-{width}-{'nojs' if off else 'js'}")
    finally:
        driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


CONTRAST = """
const lum = (rgb) => {
  const c = rgb.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]; };
const parse = (s) => s.match(/[\\d.]+/g).map(Number);
const background = (el) => { for (; el; el = el.parentElement) { const c = parse(getComputedStyle(el).backgroundColor);
  if (c.length < 4 || c[3] > 0.5) return c.slice(0, 3); } return [255, 255, 255]; };
document.querySelectorAll('details').forEach(d => d.open = true);
const low = [];
for (const el of document.querySelectorAll(arguments[0])) {
  const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
  // the theme's ¶ shows on hover only
  if (!own || !el.getClientRects().length || el.closest(".tc-sr, .headerlink")) continue;
  const fg = lum(parse(getComputedStyle(el).color).slice(0, 3)), bg = lum(background(el));
  const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
  if (ratio < 4.5)
    low.push(`${el.tagName.toLowerCase()}.${el.className}: ${ratio.toFixed(2)} `
             + `"${el.textContent.trim().slice(0, 30)}"`);
}
return low;
"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("page", ["index.html", "docs/topic.html", "docs/auto_gallery/index.html"])
def test_text_meets_wcag_aa_contrast(desktop, server, page, scheme):
    desktop.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
    )
    desktop.get(server.url + page)
    unfold(desktop)
    low = desktop.execute_script(CONTRAST, ".tc-matrix-page *, .tc-claim *, .tc-card *")
    desktop.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert low == [], "\n".join(low)


def test_search_lands_on_claim_anchors_with_snippets(desktop, server):
    desktop.get(server.url + "search.html?q=kb-refuted")
    first = wait_for(lambda: desktop.find_elements("css selector", ".tc-search-claims li"), "claim results")[0]
    link = first.find_element("css selector", "a.tc-search-title")
    assert link.get_attribute("href").endswith("docs/topic.html#claim-kb-refuted")
    assert "The proposition of claim kb-refuted" in first.text and "✘ refuted on cpu" in first.text
    wait_for(lambda: "Search finished" in desktop.find_element("id", "search-results").text, "the page results")
    assert console_errors(desktop) == []


def test_opened_from_a_file_search_and_filters_work_without_errors(desktop, site):
    index = site.published / "index.html"
    desktop.get(index.as_uri() + "?backend=neuron")
    wait_for(lambda: count_text(desktop).startswith("1 of "), "filters from a file:// address")
    desktop.get((site.published / "search.html").as_uri() + "?q=kb-holds")
    block = wait_for(lambda: desktop.find_elements("css selector", ".tc-search-claims"), "claim results")[0]
    assert "Opened from a file" in block.text and "Claim kb-holds" in block.text
    wait_for(lambda: "Search finished" in desktop.find_element("id", "search-results").text, "the page results")
    assert console_errors(desktop) == []


def test_a_long_value_ends_with_an_ellipsis_and_unfolds_whole(desktop, server):
    desktop.get(server.url + "docs/compile.html#claim-kb-long--cpu")
    folded = wait_for(
        lambda: desktop.find_element("css selector", "#claim-kb-long--cpu details.tc-long"), "the long value"
    )
    assert (
        folded.find_element("css selector", "summary").text.split("…")[0].startswith("the flags = XLA_FLAGS= --xla_cpu")
    )
    click(desktop, folded.find_element("css selector", "summary"))
    whole = folded.find_element("css selector", ".tc-whole").text
    assert whole.strip() == f"the flags = {LONG_VALUE}".strip()  # every character: "--" never turned into a dash


def test_the_published_folder_has_no_build_leftovers_and_serves_every_results_file(site):
    assert leftovers(site.published) == []
    assert not (site.published / "_sources").exists() and not (site.published / ".doctrees").exists()
    downloads = sorted(p.relative_to(site.published).as_posix() for p in (site.published / "downloads").rglob("*.*"))
    assert "downloads/results/xla-run.json" in downloads and "downloads/results/xla-run.csv" in downloads
    assert "downloads/torchclaims-results.json" in downloads and "downloads/results/cpu-older.csv" in downloads
    xla = json.loads((site.published / "downloads/results/xla-run.json").read_text())
    assert xla["label"] == "xla-run box"
    assert (site.published / "_static" / "favicon.svg").is_file()


# -- coverage tables ---------------------------------------------------------------------


def sweep_rows(driver) -> list[list[str]]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('table.tc-sweep-table tbody tr:not(.tc-sweep-details)'))"
        ".map(r => Array.from(r.children).map(c => c.textContent))"
    )


def sweep_select(driver, label: str):
    from selenium.webdriver.support.ui import Select

    control = driver.find_element(
        "xpath", f"//form[@class='tc-sweep-controls']/label[starts-with(normalize-space(), '{label}')]/*"
    )
    return Select(control) if control.tag_name == "select" else control


def test_coverage_table_searches_filters_and_compares_two_runs(desktop, server):
    driver = desktop
    driver.get(server.url + "docs/coverage.html")
    wait_for(lambda: len(sweep_rows(driver)) == 3, "the three operators of the newest run")
    runs = [o.text for o in sweep_select(driver, "Run").options]
    assert len(runs) == 3  # this build, and the two results files (XLA, an older torch)
    sweep_select(driver, "Run").select_by_visible_text(next(r for r in runs if "(this build)" in r))
    wait_for(lambda: sweep_rows(driver) and sweep_rows(driver)[0][1] == "native", "the CPU run")
    sweep_select(driver, "Search").send_keys("hist")
    wait_for(lambda: [r[0] for r in sweep_rows(driver)] == ["histc"], "the search to keep histc only")
    sweep_select(driver, "Search").clear()
    sweep_select(driver, "Compare with").select_by_visible_text(next(r for r in runs if r.startswith("xla")))
    sweep_select(driver, "Show").select_by_value("started to mismatch")
    wait_for(lambda: [r[0] for r in sweep_rows(driver)] == ["norm"], "norm, which started to mismatch")
    assert sweep_rows(driver)[0][1] == "excluded by OpInfo → mismatch"
    sweep_select(driver, "Show").select_by_value("stopped being native or matching")
    wait_for(lambda: [r[0] for r in sweep_rows(driver)] == ["histc"], "histc, native on the CPU, a fallback on XLA")
    click(driver, driver.find_element("css selector", "table.tc-sweep-table tbody tr"))
    details = wait_for(lambda: driver.find_element("css selector", ".tc-sweep-details").text, "the row's details")
    assert "CPU fallback: aten::histc" in details
    assert console_errors(driver) == []
    screenshot(driver, "coverage-compare")


def test_on_a_phone_the_coverage_page_scrolls_only_inside_its_tables(phone, server):
    phone.get(server.url + "docs/coverage.html")
    wait_for(lambda: len(sweep_rows(phone)) == 3, "the table")
    for found in overflow(
        phone,
        PHONE_OVERFLOW.replace(
            "if (el.closest('.tc-matrix-scroll')) continue;",
            "if (el.closest('.tc-matrix-scroll, .tc-sweep-scroll, table.tc-sweep-summary')) continue;",
        ),
    ):
        assert found["scroll"] <= found["width"], found
        assert found["offenders"] == [], found
    screenshot(phone, "coverage-phone")


# -- the answer per accelerator: home page, backend filter, accelerator pages, claim sections --------

SCHEME = "Emulation.setEmulatedMedia"


def themed(driver, scheme: str) -> None:
    driver.execute_cdp_cmd(SCHEME, {"features": [{"name": "prefers-color-scheme", "value": scheme}]})


HOME_LAYOUT = """
const box = document.querySelector('.tc-matrix-scroll').getBoundingClientRect();
const scroll = document.querySelector('.tc-matrix-scroll');
const choice = document.querySelector('ul.tc-choice').getBoundingClientRect();
const cells = Array.from(document.querySelectorAll('.tc-matrix a.tc-run:not([hidden])'))
  .map(a => a.getBoundingClientRect());
return {choiceTop: choice.top, choiceBottom: choice.bottom, boxTop: box.top, innerHeight,
        sideways: scroll.scrollWidth - scroll.clientWidth,
        page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        cut: cells.filter(r => r.right > box.right + 1 || r.left < box.left - 1).length, cells: cells.length,
        titles: document.querySelectorAll('.tc-matrix-page [title]').length};
"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_at_1400_px_the_home_page_shows_the_accelerator_choice_first_and_every_decided_cell_without_scrolling_sideways(
    desktop, server, scheme
):
    themed(desktop, scheme)
    desktop.get(server.url)
    wait_for(lambda: count_text(desktop), "the matrix")
    assert desktop.execute_script("return innerWidth") == 1400
    found = [desktop.execute_script(HOME_LAYOUT)]
    desktop.execute_script(WIDE_TEXT)  # and with every glyph widened: the fit must not hang on a font
    found.append(desktop.execute_script(HOME_LAYOUT))
    desktop.execute_script("document.getElementById('tc-test-wide-text').remove()")
    low = desktop.execute_script(CONTRAST, "ul.tc-choice *, .tc-no-record *, .tc-backend-note *")
    screenshot(desktop, f"home-1400-{scheme}")
    desktop.execute_cdp_cmd(SCHEME, {"features": []})
    assert low == [], "\n".join(low)
    for layout in found:
        assert 0 <= layout["choiceTop"] < layout["choiceBottom"] < layout["innerHeight"], layout  # in the first screen
        assert layout["choiceBottom"] <= layout["boxTop"], layout  # above the table
        assert layout["sideways"] <= 0 and layout["page"] <= 0 and layout["cut"] == 0 and layout["cells"] > 0, layout
        assert layout["titles"] == 0, layout  # no tooltip text: reasons and environments are in the evidence
    heads = desktop.execute_script(
        "return Array.from(document.querySelectorAll('thead th[data-backend]'))"
        ".map(th => [th.dataset.backend, th.querySelector('a') && th.querySelector('a').getAttribute('href')])"
    )
    assert heads == [
        ["cpu", None],
        ["xla", "docs/accelerators/xla.html"],
    ]  # only backends with records; each leads to its page
    said = desktop.find_element("css selector", ".tc-no-record")
    assert said.is_displayed() and "neuron (AWS Trainium (TorchNeuron))" in said.text and "1 about neuron" in said.text
    attributed = desktop.find_elements("css selector", "#matrix-kb-said td")
    assert len(attributed) == 1 and "no public method" in attributed[0].text  # said once across the row
    choice = [a.get_attribute("href") for a in desktop.find_elements("css selector", "ul.tc-choice a")]
    assert choice == [
        server.url + "docs/accelerators/xla.html",
        server.url + "docs/accelerators/neuron.html",
    ]  # one claim each: descriptor order
    assert console_errors(desktop) == []


def test_the_backend_filter_keeps_the_claims_about_it_and_shows_the_stand_ins_beside_them(desktop, server):
    driver = desktop
    driver.get(server.url + "?backend=neuron")
    wait_for(lambda: count_text(driver).startswith("1 of "), "the one claim about neuron")
    assert "about neuron" in count_text(driver)
    assert visible_rows(driver) == ["matrix-kb-vendor"]
    note = driver.find_element("css selector", '.tc-backend-note[data-backend="neuron"]')
    assert note.is_displayed() and "never about AWS Trainium (TorchNeuron)" in note.text
    assert note.find_element("css selector", "a").get_attribute("href") == server.url + "docs/accelerators/neuron.html"
    assert [n for n in driver.find_elements("css selector", ".tc-backend-note") if n.is_displayed()] == [note]
    stand_in = driver.find_element("css selector", '#matrix-kb-vendor td[data-backend="cpu"] a.tc-run:not([hidden])')
    assert stand_in.is_displayed() and "✔ holds" in stand_in.text and "outside its scope" in stand_in.text
    choose(driver, "backend", "xla")
    wait_for(lambda: visible_rows(driver) == ["matrix-kb-figure"], "the claim about xla")
    choose(driver, "backend", "")
    wait_for(lambda: count_text(driver).split()[0] == count_text(driver).split()[2], "every claim again")
    assert all(not n.is_displayed() for n in driver.find_elements("css selector", ".tc-backend-note"))
    assert console_errors(driver) == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_an_accelerator_page_answers_in_its_first_screen_and_its_chips_lead_to_the_evidence(desktop, server, scheme):
    themed(desktop, scheme)
    desktop.get(server.url + "docs/accelerators/neuron.html")
    tally = wait_for(lambda: desktop.find_element("css selector", "ul.tc-tally"), "the tally")
    top = desktop.execute_script("return arguments[0].getBoundingClientRect().bottom <= innerHeight", tally)
    assert top, "the tally is not in the first screen"
    assert (
        "1 claim is about AWS Trainium (TorchNeuron)." in tally.text
        and "0 of the 1 executable ones ran on neuron" in tally.text
    )
    low = desktop.execute_script(CONTRAST, ".tc-accelerator *")
    screenshot(desktop, f"accelerator-neuron-{scheme}")
    desktop.execute_cdp_cmd(SCHEME, {"features": []})
    assert low == [], "\n".join(low)
    chip = desktop.find_element("css selector", ".tc-standing a:has(> .tc-chip)")
    assert "cpu ✔ holds" in chip.text and "outside its scope" in chip.text
    target = chip.get_attribute("href").rpartition("#")[2]
    assert target.startswith("claim-kb-vendor--cpu--torch-2-13-0"), target  # the run the chip names
    click(desktop, chip)
    wait_for(lambda: desktop.current_url.endswith("#" + target), "the evidence")
    landed = settled(desktop, target)
    assert landed["open"] and 0 <= landed["top"] < landed["height"], landed
    assert console_errors(desktop) == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("page", ["docs/accelerators/neuron.html", "docs/accelerators/index.html"])
def test_on_a_phone_an_accelerator_page_never_scrolls_sideways(phone, server, page, scheme):
    themed(phone, scheme)
    phone.get(server.url + page)
    wait_for(lambda: phone.find_elements("css selector", "ul.tc-tally, ul.tc-choice"), "the page")
    results = overflow(phone)
    low = phone.execute_script(CONTRAST, ".tc-accelerator *, ul.tc-choice *")
    screenshot(phone, f"accelerator-phone-{page.split('/')[-1][:-5]}-{scheme}")
    phone.execute_cdp_cmd(SCHEME, {"features": []})
    for found in results:
        assert found["scroll"] <= found["width"], found
        assert found["offenders"] == [], found
    assert low == [], "\n".join(low)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_claim_shows_one_line_per_backend_with_its_reason_in_view_and_its_evidence_folded(desktop, server, scheme):
    themed(desktop, scheme)
    desktop.get(server.url + "docs/topic.html")  # a fresh load: nothing opened by an earlier visit
    section = wait_for(lambda: desktop.find_element("id", "claim-kb-unverified"), "the claim")
    lines = section.find_elements("css selector", "table.tc-headline tbody tr")
    assert [line.text.split(" · ")[0] for line in lines] == ["cpu", "xla"]  # the newest verdict of each backend, once
    reason = lines[0].find_element("css selector", "p:has(> em)")
    assert reason.is_displayed() and "no accelerator on this machine" in reason.text  # text, never a tooltip
    evidence = section.find_element("css selector", "details.tc-evidence")
    assert (
        evidence.get_attribute("open") is None and not evidence.find_element("css selector", ".tc-later").is_displayed()
    )
    assert not evidence.find_elements("css selector", "table.tc-runs")  # not in the page: it loads when the block opens
    click(desktop, evidence.find_element("css selector", "summary"))
    runs = wait_for(
        lambda: [r for r in evidence.find_elements("css selector", "table.tc-runs tbody tr") if r.is_displayed()],
        "the records",
    )
    assert len(runs) == 3  # cpu this build, the older cpu and xla: one table
    assert section.text.count("Environment and conditions") == 1  # the environment once, then what differs
    assert (
        desktop.execute_script("return arguments[0].querySelectorAll('[title]:not(.headerlink)').length", section) == 0
    )
    low = desktop.execute_script(CONTRAST, "#claim-kb-unverified *")
    desktop.execute_cdp_cmd(SCHEME, {"features": []})
    assert low == [], "\n".join(low)
    assert console_errors(desktop) == []


# -- coverage tables that can be shared ---------------------------------------------------


@pytest.fixture(params=["desktop", "phone"])
def width(request, browser):
    """The browser at desktop width, then at a phone's."""
    return request.getfixturevalue(request.param)


def sweep_state(driver) -> dict:
    """What the controls show, the URL's query, and the first column of the table."""
    return driver.execute_script(
        """const form = document.querySelector('form.tc-sweep-controls');
        const value = (name) => form.elements.namedItem(name).value;
        return {run: value('run'), vs: value('vs'), q: value('q'), show: value('show'),
                query: Object.fromEntries(new URLSearchParams(location.search)),
                rows: Array.from(document.querySelectorAll('table.tc-sweep-table tbody tr[data-name]'))
                  .map(r => r.dataset.name),
                status: document.querySelector('.tc-sweep-status').textContent};"""
    )


def run_named(driver, starts: str) -> str:
    return next(o.get_attribute("value") for o in sweep_select(driver, "Run").options if o.text.startswith(starts))


def test_coverage_state_is_in_the_url_and_back_restores_controls_and_table(width, server):
    driver = width
    driver.get(server.url + "docs/coverage.html")
    wait_for(lambda: len(sweep_rows(driver)) == 3, "the table")
    cpu = next(o for o in sweep_select(driver, "Run").options if "(this build)" in o.text)
    sweep_select(driver, "Run").select_by_value(cpu.get_attribute("value"))
    xla = run_named(driver, "xla")
    sweep_select(driver, "Compare with").select_by_value(xla)
    sweep_select(driver, "Show").select_by_value("started to mismatch")
    wait_for(lambda: sweep_state(driver)["rows"] == ["norm"], "norm, which started to mismatch")
    state = sweep_state(driver)
    assert state["query"] == {"run": cpu.get_attribute("value"), "vs": xla, "show": "started to mismatch"}
    shared = driver.current_url

    # Away to the evidence and Back: the controls and the table show the same run and comparison.
    click(driver, driver.find_element("link text", "verdict and environment"))
    wait_for(lambda: "docs/compile.html" in driver.current_url, "the evidence page")
    driver.back()
    wait_for(lambda: sweep_state(driver)["rows"] == ["norm"], "the table after Back")
    after = sweep_state(driver)
    assert (after["run"], after["vs"], after["show"]) == (cpu.get_attribute("value"), xla, "started to mismatch")
    assert sweep_rows(driver)[0][1] == "excluded by OpInfo → mismatch"  # the table is the comparison the controls name

    # The shared address, opened afresh, shows the same.
    driver.get(server.url)
    driver.get(shared)
    wait_for(lambda: sweep_state(driver)["rows"] == ["norm"], "the shared address")
    assert sweep_state(driver)["vs"] == xla and "compared with xla" in sweep_state(driver)["status"]
    assert console_errors(driver) == []


def test_a_linked_run_that_is_gone_shows_the_newest_and_says_so(desktop, server):
    desktop.get(server.url + "docs/coverage.html?run=no-such-run&q=hist")
    wait_for(lambda: sweep_state(desktop)["rows"] == ["histc"], "the search from the URL")
    state = sweep_state(desktop)
    assert state["run"] == sweep_select(desktop, "Run").options[0].get_attribute("value")
    assert "The linked run is not on this page" in state["status"]


def test_enter_opens_and_closes_a_focused_row_and_the_url_names_it(width, server):
    from selenium.webdriver.common.keys import Keys

    driver = width
    driver.get(server.url + "docs/coverage.html")
    wait_for(lambda: len(sweep_rows(driver)) == 3, "the table")
    # Tab from the last control reaches the first row; Tab again the next one.
    driver.execute_script("document.querySelector('.tc-sweep-controls [name=show]').focus()")
    for _ in range(6):  # the controls' last field, the scroll box, then the rows' names
        driver.switch_to.active_element.send_keys(Keys.TAB)
        if driver.execute_script("return document.activeElement.closest('tr[data-name]') !== null"):
            break
    assert driver.execute_script("return document.activeElement.closest('tr').dataset.name") == "add"
    driver.switch_to.active_element.send_keys(Keys.TAB)
    opener = driver.switch_to.active_element
    assert driver.execute_script("return document.activeElement.closest('tr').dataset.name") == "histc"
    opener.send_keys(Keys.ENTER)
    details = wait_for(lambda: driver.find_elements("css selector", ".tc-sweep-details"), "the row's details")
    assert "float32" in details[0].text and opener.get_attribute("aria-expanded") == "true"
    assert driver.current_url.endswith("#row-histc")
    opener.send_keys(Keys.ENTER)
    wait_for(lambda: not driver.find_elements("css selector", ".tc-sweep-details"), "the details to close")
    assert "#" not in driver.current_url and opener.get_attribute("aria-expanded") == "false"


def test_a_row_link_opens_that_row_in_view(width, server):
    driver = width
    driver.get(server.url + "docs/coverage.html?run=no-such-run&q=add#row-norm")
    wait_for(lambda: driver.find_elements("css selector", ".tc-sweep-details"), "the linked row's details")
    state = driver.execute_script(
        """const row = document.getElementById('row-norm'); const r = row.getBoundingClientRect();
        return {focused: document.activeElement.closest('tr') === row, top: r.top, bottom: r.bottom,
                height: innerHeight, open: row.nextElementSibling.className,
                search: document.querySelector('.tc-sweep-controls [name=q]').value};"""
    )
    assert state["focused"] and state["open"] == "tc-sweep-details", state
    assert 0 <= state["top"] and state["bottom"] <= state["height"], state
    assert state["search"] == "norm"  # the search that hid it gave way to the row's name


def row_results(driver, url: str) -> list:
    """The site search's results that lead to a coverage row (#row-… or #run-…/row-…), in their order."""
    driver.get(url)
    links = "#search-results a"
    return wait_for(
        lambda: [a for a in driver.find_elements("css selector", links) if "row-" in a.get_attribute("href")],
        "an operator result",
    )


def test_the_site_search_lists_an_operator_and_leads_to_its_row(desktop, server):
    link = row_results(desktop, server.url + "search.html?q=histc")[0]
    assert link.get_attribute("href").endswith("docs/coverage.html#row-histc") and link.text == "histc"
    click(desktop, link)
    wait_for(lambda: desktop.find_elements("css selector", ".tc-sweep-details"), "the operator's row, open")
    assert desktop.execute_script("return document.activeElement.closest('tr').dataset.name") == "histc"
    assert console_errors(desktop) == []


def test_the_site_search_lists_the_run_where_a_row_fails_first_and_opens_the_table_on_it(desktop, server):
    links = row_results(desktop, server.url + "search.html?q=norm")
    titles = [a.text for a in links]
    assert titles[0].startswith("norm — mismatch on xla · torch_xla 2.9.0 on torch") and "norm" in titles[1:], titles
    assert "/row-norm" in links[0].get_attribute("href") and "#run-" in links[0].get_attribute("href")
    click(desktop, links[0])
    wait_for(lambda: desktop.find_elements("css selector", ".tc-sweep-details"), "the row, open")
    state = sweep_state(desktop)
    assert state["run"] == run_named(desktop, "xla") == state["query"]["run"], state
    assert desktop.execute_script("return document.activeElement.closest('tr').dataset.name") == "norm"
    norm = next(r for r in sweep_rows(desktop) if r[0] == "norm")
    assert norm[1] == "mismatch"  # the xla run's cell, not the CPU reference's
    assert desktop.current_url.endswith("#row-norm")  # the run now lives in the query, as when picked by hand
    assert console_errors(desktop) == []


def test_the_run_picker_and_search_come_before_the_summaries(width, server):
    width.get(server.url + "docs/coverage.html")
    wait_for(lambda: len(sweep_rows(width)) == 3, "the table")
    tops = width.execute_script(
        """const top = (el) => el.getBoundingClientRect().top + scrollY;
        return {run: top(document.querySelector('.tc-sweep-controls [name=run]')),
                search: top(document.querySelector('.tc-sweep-controls [name=q]')),
                summary: top(document.querySelector('.tc-sweep-run'))};"""
    )
    assert tops["run"] < tops["summary"] and tops["search"] < tops["summary"], tops


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_coverage_cells_meet_wcag_aa_contrast(width, server, scheme):
    driver = width
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
    )
    try:
        driver.get(server.url + "docs/coverage.html")
        wait_for(lambda: len(sweep_rows(driver)) == 3, "the table")
        theme = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
        assert (theme == "rgb(255, 255, 255)") == (scheme == "light"), theme  # the theme followed the scheme
        low = driver.execute_script(CONTRAST, ".tc-sweep *, .tc-sweep-run *")
        sweep_select(driver, "Compare with").select_by_value(run_named(driver, "xla"))
        wait_for(lambda: "compared with" in sweep_state(driver)["status"], "the comparison")
        low += driver.execute_script(CONTRAST, ".tc-sweep *")
        cells = driver.execute_script("return document.querySelectorAll('table.tc-sweep-table td.tc-o').length")
    finally:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert cells >= 3
    assert low == [], "\n".join(low)


def test_on_a_phone_the_coverage_controls_fit_whatever_the_width_of_their_text(phone, server):
    """Every option given a label far wider than a phone, as a wide font would make it: the controls still fit."""
    phone.get(server.url + "docs/coverage.html")
    wait_for(lambda: len(sweep_rows(phone)) == 3, "the table")
    found = phone.execute_script(
        """document.querySelectorAll('.tc-sweep-controls option').forEach(o => o.textContent += ' ' + 'W'.repeat(120));
        document.querySelector('.tc-sweep-controls input').placeholder += 'W'.repeat(120);
        const width = document.documentElement.clientWidth;
        const wide = Array.from(document.querySelectorAll('.tc-sweep-controls select, .tc-sweep-controls input'))
          .filter(c => c.getBoundingClientRect().right > width + 1)
          .map(c => `${c.name} ${Math.round(c.getBoundingClientRect().right)}px`);
        return {width, wide, scroll: document.documentElement.scrollWidth};"""
    )
    assert found["wide"] == [] and found["scroll"] <= found["width"], found


def test_a_row_named_in_the_query_opens_as_a_row_link_does(desktop, server):
    """?row=<name>, as torchclaims check links to a row, opens it; the fragment names it from then on."""
    desktop.get(server.url + "docs/coverage.html?row=norm")
    wait_for(lambda: desktop.find_elements("css selector", ".tc-sweep-details"), "the row's details")
    assert desktop.execute_script("return document.activeElement.closest('tr').dataset.name") == "norm"
    query = urllib.parse.parse_qs(urllib.parse.urlparse(desktop.current_url).query)
    assert "row" not in query and desktop.current_url.endswith("#row-norm"), desktop.current_url


LAYOUT_SHIFT = """const done = arguments[arguments.length - 1];
let total = 0;
new PerformanceObserver((list) => {
  for (const shift of list.getEntries()) if (!shift.hadRecentInput) total += shift.value;
}).observe({type: 'layout-shift', buffered: true});
setTimeout(() => done(total), 500);"""
MAX_LAYOUT_SHIFT = 0.01  # the table arriving moves nothing (Web Vitals call a whole page good below 0.1)


@pytest.fixture
def slow_network(width):
    """Every request takes 300 ms, as on a phone's network: the page paints before the table's data is in."""
    width.execute_cdp_cmd("Network.enable", {})
    conditions = {"offline": False, "downloadThroughput": -1, "uploadThroughput": -1}
    width.execute_cdp_cmd("Network.emulateNetworkConditions", {**conditions, "latency": 300})
    yield width
    width.execute_cdp_cmd("Network.emulateNetworkConditions", {**conditions, "latency": 0})


def test_the_coverage_table_arrives_without_moving_what_is_below_it(slow_network, server):
    """The table is made after its data loads; the space it takes is kept from the
    first paint, so the run summaries below it never jump."""
    driver = slow_network
    driver.get(server.url + "docs/coverage.html")
    wait_for(lambda: len(sweep_rows(driver)) == 3, "the table")
    shifted = driver.execute_async_script(LAYOUT_SHIFT)
    assert shifted < MAX_LAYOUT_SHIFT, f"cumulative layout shift {shifted:.3f}"


DETAILS_LOADED = "return performance.getEntriesByType('resource').filter(e => e.name.endsWith('.details.js')).length"


def open_row(driver, name: str) -> str:
    """Open the row ``name`` and wait for its samples (or its lack of them) to be in: the details' text."""
    click(driver, driver.find_element("css selector", f"table.tc-sweep-table tr[data-name='{name}']"))
    return wait_for(
        lambda: (lambda text: "loading the samples" not in text and text)(
            driver.find_element("css selector", ".tc-sweep-details").text
        ),
        f"the details of {name}",
    )


def test_an_opened_row_shows_its_kernels_and_each_samples_argument_kinds_loaded_with_it(desktop, server):
    """What only an opened row shows is loaded when a row opens, never with the first view; a run recorded
    before sweeps kept argument kinds shows its sample codes alone, and says so."""
    driver = desktop
    driver.get(server.url + "docs/coverage.html")
    wait_for(lambda: len(sweep_rows(driver)) == 3, "the table")
    sweep_select(driver, "Run").select_by_value(run_named(driver, "xla"))
    wait_for(lambda: ["norm", "mismatch", "—"] in sweep_rows(driver), "the xla run")
    assert driver.execute_script(DETAILS_LOADED) == 0
    details = open_row(driver, "norm")
    assert driver.execute_script(DETAILS_LOADED) == 1
    assert "float32 · xla" in details and "mismatch — 1 of 3 samples differ" in details
    assert "samples: n 2/ · m 0/ · n 22/k" in details
    assert "dispatched on the device: aten::abs, aten::linalg_vector_norm" in details
    assert "dispatched on the CPU: aten::linalg_vector_norm" in details
    assert "Sample codes: n matched, m mismatch." in details and ": k keepdim=True." in details
    token = driver.find_element("xpath", "//tr[@class='tc-sweep-details']//code[text()='22/k']")
    assert token.get_attribute("title") == "ranks of the tensor inputs; keepdim=True"
    assert driver.execute_script(CONTRAST, ".tc-sweep-details *") == []
    screenshot(driver, "coverage-row-kinds")
    sweep_select(driver, "Run").select_by_value(
        next(o.get_attribute("value") for o in sweep_select(driver, "Run").options if "(this build)" in o.text)
    )
    wait_for(lambda: ["norm", "excluded by OpInfo", "—"] in sweep_rows(driver), "the run of this build")
    details = open_row(driver, "add")
    assert "samples: n · n" in details and "records no argument kinds for these samples" in details
    assert "dispatched on the device" not in details and "Argument kinds:" not in details
    assert console_errors(driver) == []
    screenshot(driver, "coverage-row-without-kinds")


def test_a_row_whose_details_cannot_load_shows_its_outcomes_and_says_so(desktop, server):
    driver = desktop
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*.details.js"]})
    try:
        driver.get(server.url + "docs/coverage.html")
        wait_for(lambda: len(sweep_rows(driver)) == 3, "the table")
        sweep_select(driver, "Run").select_by_value(run_named(driver, "xla"))
        wait_for(lambda: ["norm", "mismatch", "—"] in sweep_rows(driver), "the xla run")
        details = open_row(driver, "norm")
    finally:
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    assert "mismatch — 1 of 3 samples differ" in details
    assert "The samples could not be loaded: cannot load " in details and "samples:" not in details
