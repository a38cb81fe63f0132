"""Each directive and role of torchclaims.sphinxext, alone on a page, against its expected doctree.

One small project (write_project: four claims, fixture records and results) is built once,
in this process, with execution off: the pages read fixture records and
results files, so no claim runs. Each test compares one page's doctree, after
the post-transforms, with tests/doctrees/<page>.txt; a change to what a
directive makes shows as a diff of that file. After an intended change,
``pytest tests/test_directive_doctrees.py --regen-doctrees`` writes the files
again: review their diff like code.
"""

from __future__ import annotations

import json
import os
import re
import traceback
import warnings
from io import StringIO
from pathlib import Path

import pytest
from docutils import nodes
from sphinx.testing.util import SphinxTestApp

from factories import STARTED, make_environment, make_results
from kb import CONF, write_claim
from torchclaims.evidence.records import CheckResult, Measurement, ResultRecord, ScriptInfo, Verdict, write_record
from torchclaims.evidence.results import write_results
from torchclaims.run.sandbox import description
from torchclaims.sphinxext import setup

EXPECTED = Path(__file__).parent / "doctrees"
RELEASES = ("2.9.0", "2.10.0", "2.13.0")

# One page per directive and role that setup() registers (test_every_directive_and_role_has_a_page checks the list).
PAGES = {
    "claim": "```{claim} kb-holds\n```\n",
    "topic-claims": "```{topic-claims} device-switch\n```\n",
    "claim-verdict": "The claim {claim-verdict}`kb-holds` here, {claim-verdict}`kb-holds xla` on xla.\n",
    "claim-measure": "On the CPU the sum is off by {claim-measure}`kb-holds cpu sum: max abs error`.\n",
    "claims-matrix": "```{claims-matrix}\n```\n",
    "claims-changes": "```{claims-changes}\n```\n",
    "accelerators/xla": "```{accelerator} xla\n```\n",  # where accelerator-choice looks for a backend's page
    "accelerator-choice": "```{accelerator-choice}\n```\n",
    "accelerator-groups": "```{accelerator-groups}\n```\n",
    "accelerator-layers": "```{accelerator-layers}\n```\n",
    "backend-descriptors": "```{backend-descriptors}\n```\n",
    "limits-table": "```{limits-table}\n```\n",
    "caches-table": "```{caches-table}\n```\n",
    "argument-kinds": "```{argument-kinds}\n```\n",
    "claim-triggers": "```{claim-triggers}\n```\n",
    "build-speed": "```{build-speed}\n```\n",
    "measured": "```{measured} runner\n```\n",
    "coverage-table": "```{coverage-table} kb-sweep\n```\n",
    "upgrade-index": "```{upgrade-index}\n```\n",
    "build-against-history": "```{build-against-history}\n```\n",
    "check-report": "```{check-report} examples/missing.py:step\n```\n",  # the report itself: test_a_check_report_...
}

VENDOR_WORD = """backend = "xla"
publisher = "PyTorch/XLA"

[[statements]]
subject = "api"
name = "sum"
status = "native"
quote = "A quote for the test."
url = "https://example.org/xla"
release = "2.9"
date = "2026-03"
measured_by = ["kb-holds"]
"""

BUILD_SPEED = {
    "measured_at": "2026-03-01",
    "cores": 2,
    "claims": 3,
    "source": "benchmarks/build_speed.py",
    "figures": [{"figure": "cold build / plain", "value": "0.9", "unit": "x", "target": "<= 0.7", "verdict": "missed"}],
    "builds": [
        {"build": "cold", "seconds": 116, "claims_run": 3, "peak_pss_mb": 900, "torch_imported_by": 2, "left_behind": 0}
    ],
}
MEASURED = {
    "figures": [
        {"group": "runner", "what": "a fork", "figure": "0.2 s", "date": "2026-03-01", "how": "benchmarks/x.py"}
    ]
}


def environment(backend: str = "cpu", torch: str = "2.13.0"):
    if backend == "xla":
        return make_environment(
            backend="xla",
            device="xla:0",
            device_name="XLA CPU",
            torch=torch,
            packages={"torch": torch, "torch_xla": torch, "numpy": "2.4.6"},
        )
    return make_environment(torch=torch)


def script(root: Path, claim_id: str) -> ScriptInfo:
    import hashlib

    path = f"gallery/{claim_id.replace('-', '_')}.py"
    return ScriptInfo(path=path, sha256=hashlib.sha256((root / path).read_bytes()).hexdigest())


def record(root: Path, claim_id: str, verdict: Verdict, env, **fields) -> ResultRecord:
    checks = fields.pop("checks", None) or [
        CheckResult(
            name="addition on the device",
            outcome=verdict,
            measurements=[Measurement(name="sum: max abs error", value=0.0, tolerance="== 0")],
        )
    ]
    reason = "" if verdict in (Verdict.HOLDS, Verdict.REFUTED) else "no accelerator on this machine"
    return ResultRecord(
        claim_id=claim_id,
        verdict=verdict,
        reason=reason,
        checks=checks,
        started_at=STARTED,
        duration_s=1.5,
        script=script(root, claim_id),
        environment=env,
        **fields,
    )


def sweep_table():
    from kb import xla_sweep_table

    return xla_sweep_table()


def write_project(root: Path, pages: dict[str, str] = PAGES) -> None:
    """Claims with scripts, this build's records (execution off), committed results of three releases and
    of xla, the release list and the benchmark figures: what the directives read. The upgrade-index page
    compares the releases' committed runs."""
    (root / "conf.py").write_text(
        CONF + "torchclaims_execute = False\ntorchclaims_max_age_days = 100000  # the fixture records never age\n"
    )
    (root / "gallery").mkdir()
    (root / "gallery" / "GALLERY_HEADER.rst").write_text("Scripts\n=======\n")
    write_claim(root, "kb-holds", "holds", about=("cpu", "xla"))
    with (root / "claims" / "kb-holds.toml").open("a") as toml:  # refuted on xla: its workaround is shown
        toml.write('\n[workaround]\nwhat = "Pass the flag that keeps the sum exact."\nmeasured_by = "kb-unverified"\n')
    write_claim(root, "kb-unverified", "unverified")
    write_claim(root, "kb-said", None)
    write_claim(root, "kb-sweep", "sweep")
    cpu = environment()
    confined = description(6, loopback=False)  # this build's runs were sandboxed; the committed files' predate it
    build = [
        record(root, "kb-holds", Verdict.HOLDS, cpu, sandbox=confined),
        record(root, "kb-unverified", Verdict.UNVERIFIED, cpu, sandbox=confined),
        record(root, "kb-sweep", Verdict.HOLDS, cpu, tables=[sweep_table()], sandbox=confined),
    ]
    for built in build:
        write_record(root / "_build" / "records" / "cpu" / f"{built.claim_id}.json", built)
    (root / "results").mkdir()
    for version, verdict in zip(RELEASES, (Verdict.HOLDS, Verdict.REFUTED, Verdict.HOLDS), strict=True):
        env = environment(torch=version)
        runs = [record(root, "kb-holds", verdict, env), record(root, "kb-unverified", Verdict.UNVERIFIED, env)]
        write_results(
            root / "results" / f"cpu-torch{version}.json",
            make_results(runs, env, label=f"sweep: torch {version} on cpu"),
        )
    xla = environment("xla", "2.9.0")
    write_results(
        root / "results" / "xla-torch2.9.0.json",
        make_results([record(root, "kb-holds", Verdict.REFUTED, xla)], xla, label="xla box"),
    )
    (root / "vendor_word").mkdir()  # the vendor's word on the xla page, beside the kb's records
    (root / "vendor_word" / "xla.toml").write_text(VENDOR_WORD)
    (root / "sweep").mkdir()
    (root / "sweep" / "releases.toml").write_text(
        f'[series.torch]\nbackend = "cpu"\npackage = "torch"\nversions = {json.dumps(list(RELEASES))}\n'
    )
    (root / "sweep" / "constraints.txt").write_text("numpy==2.4.6\n")
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "build_speed.json").write_text(json.dumps(BUILD_SPEED))
    (root / "benchmarks" / "measured.json").write_text(json.dumps(MEASURED))
    for name, body in pages.items():
        page = root / "docs" / f"{name}.md"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"# {name}\n\n{body}")
    (root / "docs" / "check.md").write_text("# Check your own model\n")  # the accelerator pages link to it
    (root / "index.md").write_text(
        "# Directives\n\n```{toctree}\n" + "".join(f"docs/{name}\n" for name in [*pages, "check"]) + "```\n"
    )


def sphinx_build(root: Path):
    """Build ``root`` in this process; the app (to read doctrees from) and the warnings."""
    log = StringIO()
    app = SphinxTestApp("html", srcdir=root, status=StringIO(), warning=log)
    app.build()
    return app, log.getvalue()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("directives")
    write_project(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app, text = sphinx_build(root)
    yield app, text, caught
    app.cleanup()


def doctree_text(app, docname: str) -> str:
    """The page's doctree as the HTML writer gets it, raw HTML a tag a line, without what differs between runs."""
    doctree = app.env.get_and_resolve_doctree(docname, app.builder, tags=app.tags)
    for raw in doctree.findall(nodes.raw):
        raw.children = [nodes.Text(re.sub(r">\s*<", ">\n<", raw.astext()))]
    text = doctree.pformat().split("\n", 1)[1]  # below <document>, whose attributes are docutils' own
    text = text.replace(str(app.srcdir), "<srcdir>")
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "<build time> UTC", text)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_directive_gives_its_expected_doctree(built, name, request):
    app, _, _ = built
    actual = doctree_text(app, f"docs/{name}")
    expected = EXPECTED / f"{name.replace('/', '-')}.txt"
    if request.config.getoption("--regen-doctrees"):
        expected.write_text(actual, encoding="utf-8")
    assert expected.is_file(), f"no {expected}: run pytest {__file__} --regen-doctrees, and review it"
    assert actual == expected.read_text(encoding="utf-8"), (
        f"{name} changed: if intended, --regen-doctrees and review the diff"
    )


def test_every_directive_and_role_has_a_page():
    """A new directive fails here until it has a page above (and an expected doctree)."""

    class Recorder:
        def __init__(self):
            self.calls = []

        def __getattr__(self, name):
            return lambda *args, **kwargs: self.calls.append((name, args))

    app = Recorder()
    setup(app)
    registered = sorted(args[0] for name, args in app.calls if name in ("add_directive", "add_role"))
    used = sorted({re.search(r"\{([a-z-]+)\}", body).group(1) for body in PAGES.values()})
    assert used == registered


def test_the_extension_uses_no_interface_sphinx_has_deprecated(built):
    """Every directive and role, read and resolved: Sphinx deprecates an interface (``env.app``, say)
    releases before it removes it, and says so with a warning attributed to the caller."""
    _, _, caught = built
    deprecated = [
        f"{w.filename}:{w.lineno}: {w.message}"
        for w in caught
        if w.category.__module__.startswith("sphinx") and f"{os.sep}torchclaims{os.sep}" in w.filename
    ]
    assert deprecated == []


def test_the_build_warns_only_where_a_page_asks_for_what_is_missing(built):
    _, log, _ = built
    lines = [line for line in log.splitlines() if "WARNING" in line]
    assert len(lines) == 1 and "no example 'examples/missing.py:step'" in lines[0], log


def test_check_report_directives_are_found_as_pages_write_them(tmp_path):
    from torchclaims.sphinxext.directives.check_report import written_targets

    (tmp_path / "docs").mkdir()
    (tmp_path / "skipped").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "```{check-report} examples/a.py:step\n```\n\n::::{check-report} b.py:f\n::::\n"
    )
    (tmp_path / "docs" / "c.rst").write_text("Title\n=====\n\n.. check-report:: examples/c.py:g\n")
    (tmp_path / "docs" / "d.md").write_text("Say `{check-report} x.py:y` in a sentence: no directive.\n")
    (tmp_path / "skipped" / "e.md").write_text("```{check-report} e.py:h\n```\n")
    found = written_targets(tmp_path, ["docs/**"], ["skipped"])
    assert found == ["b.py:f", "examples/a.py:step", "examples/c.py:g"]


@pytest.fixture
def report_starts(monkeypatch) -> list[str]:
    """Where each check report's process is started: "early" (builder-inited) or "directive"."""
    from torchclaims.sphinxext.directives import check_report

    starts: list[str] = []
    real_start = check_report._start

    def noted_start(root, report):
        callers = [frame.name for frame in traceback.extract_stack()]
        starts.append("early" if "start_early" in callers else "directive")
        return real_start(root, report)

    monkeypatch.setattr(check_report, "_start", noted_start)
    return starts


def check_report_project(tmp_path: Path, target: str) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    example = Path(__file__).resolve().parents[1] / "examples" / "check" / "native_mlp.py"
    (root / "examples").mkdir()
    (root / "examples" / "native_mlp.py").write_bytes(example.read_bytes())
    write_project(root, {"check-report": f"```{{check-report}} {target}\n```\n"})
    return root


@pytest.mark.processes
def test_a_check_report_is_made_in_its_own_process_and_published(tmp_path, report_starts):
    """check-report runs ``torchclaims check`` on an example (a child process that imports torch),
    started before the claims run; the directive then finds it made and starts nothing."""
    app, log = sphinx_build(check_report_project(tmp_path, "examples/native_mlp.py:mlp"))
    try:
        doctree = app.env.get_and_resolve_doctree("docs/check-report", app.builder, tags=app.tags)
    finally:
        app.cleanup()
    assert "[torchclaims.check-report]" not in log, log  # the other pages are not there: links to them warn
    assert report_starts == ["early"]
    (summary,) = doctree.findall(nodes.literal_block)
    assert summary.astext().startswith("torchclaims check native_mlp.py:mlp: ")
    (link,) = doctree.findall(nodes.reference)
    assert (
        link["refuri"].startswith("../_static/check/")
        and (Path(app.outdir) / link["refuri"].removeprefix("../")).is_file()
    )


# An example model whose import writes where it must not, plants a page with a
# script where the build publishes, and replaces the report's renderer.
HOSTILE_EXAMPLE = """
import os
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
PLANTED = '<script>alert("tc-xss")</script>'
for path in (Path.home() / "tc-marker", ROOT / "_build" / "html" / "planted.html",
             ROOT / "_build" / "html" / "_static" / "check" / "planted.html", ROOT / "examples" / "planted.html"):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PLANTED)
    except OSError:
        pass
for folder in ROOT.joinpath("_build", "doctrees", "check-reports").glob("*"):  # where the report is made
    try:
        (folder / "planted.html").write_text(PLANTED)
    except OSError:
        pass
try:
    from torchclaims.check import html_report
    html_report.render = lambda *args, **kwargs: PLANTED
except ImportError:
    pass


def step():
    return torch.nn.Linear(4, 2), (torch.randn(3, 4),)
"""


@pytest.mark.processes
def test_an_example_models_code_runs_sandboxed_and_no_page_it_planted_is_published(tmp_path, monkeypatch):
    """The example's import, its build and its step run in the claim scripts' sandbox: it writes
    nothing outside its own folder, and the published report is the one the build rendered."""
    from hostile import active_markup

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    root = check_report_project(tmp_path, "examples/hostile.py:step")
    (root / "examples" / "hostile.py").write_text(HOSTILE_EXAMPLE)
    app, log = sphinx_build(root)
    try:
        doctree = app.env.get_and_resolve_doctree("docs/check-report", app.builder, tags=app.tags)
    finally:
        app.cleanup()
    (summary,) = doctree.findall(nodes.literal_block)
    assert summary.astext().startswith("torchclaims check hostile.py:step: "), log
    assert not (home / "tc-marker").exists()
    assert sorted(str(p.relative_to(root)) for p in root.rglob("planted.html")) == []
    published = Path(app.outdir, "_static", "check")
    assert [p.name for p in published.iterdir()] == ["examples-hostile-py-step.html"]
    assert active_markup(Path(app.outdir)) == []


@pytest.mark.processes
def test_a_check_report_that_fails_early_is_reported_by_its_page_and_not_made_again(tmp_path, report_starts):
    app, log = sphinx_build(check_report_project(tmp_path, "examples/native_mlp.py:no_such_step"))
    try:
        doctree = app.env.get_and_resolve_doctree("docs/check-report", app.builder, tags=app.tags)
    finally:
        app.cleanup()
    assert report_starts == ["early"]
    warned = [line for line in log.splitlines() if "could not be made" in line]
    assert len(warned) == 1 and "has no function 'no_such_step'" in warned[0], log  # the process's own error
    assert "could not be made in this build" in doctree.astext()
