"""The ``check-report`` directive: a real ``torchclaims check`` report, made while the site builds.

``{check-report} examples/check/pixel_cnn.py:pixel_cnn_step`` runs the static
check of that example against this build's claims and committed results, in
its own process (``torchclaims.check.page_report``: the Sphinx process never
imports torch), which runs the example's own code in the claim scripts'
sandbox (``torchclaims.check.traced``) and renders the report from what it
handed back; the directive shows the terminal summary with a link to the HTML
report, which it copies to ``_static/check/``. Both are kept in the doctrees folder
under a digest of everything they are made of (the example, the check's code,
claims/ and results/), and the page depends on those files, so it is made
again exactly when one of them changes.

The report takes seconds (its process imports torch), and depends only on
committed files, not on this build's claims. So at ``builder-inited`` the
pages are scanned for the directive and each report not kept already starts
then: it runs while the claims run, largely on the core the fork server leaves
idle while it imports. Reading waits for them (``env-before-read-docs``). The
directive stays the authority: it reports a report that failed early, and
makes any that was not started, as before.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import sys
import weakref
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import SphinxDirective
from sphinx.util.matching import get_matching_files

from ...project import Folders
from ...site_addresses import slug
from ..build.state import get_state, warn

CHECK_CODE = Path(__file__).resolve().parents[2] / "check"
OUT_DIR = "_static/check"
REPORT_TIMEOUT_S = 600  # one page's `torchclaims check` run
# The directive as pages write it (MyST fence or colon fence, reStructuredText): its argument.
_WRITTEN = re.compile(r"^\s*(?:`{3,}|:{3,})\{check-report\}\s+(\S+)|^\s*\.\.\s+check-report::\s+(\S+)", re.M)


def _inputs(root: Path, example: Path) -> list[Path]:
    return [
        example,
        *sorted(CHECK_CODE.glob("*.py")),
        *sorted(Folders(root).claims.glob("*.toml")),
        *sorted(Folders(root).results.glob("*.json")),
    ]


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:20]


@dataclass(frozen=True)
class _Report:
    """One report: its example, the files it is made of, and where it is kept."""

    target: str  # as the directive's argument: "examples/check/x.py:step"
    example: Path
    inputs: list[Path]
    text: Path
    page: Path

    @classmethod
    def of(cls, root: Path, doctreedir: Path, target: str) -> _Report | None:
        """None when the argument names no example inside the project."""
        example = (root / target.rpartition(":")[0]).resolve()
        if not example.is_file() or root.resolve() not in example.parents:
            return None
        inputs = _inputs(root, example)
        cache = Path(doctreedir) / "check-reports" / _digest(inputs)
        return cls(target, example, inputs, cache / "summary.txt", cache / f"{slug(target)}.html")

    def kept(self) -> bool:
        return self.text.is_file() and self.page.is_file()

    @property
    def log(self) -> Path:
        """The process's error output: a file, so a long one never blocks the process on a full pipe."""
        return self.text.parent / "stderr.txt"


def _start(root: Path, report: _Report) -> subprocess.Popen:
    report.text.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(CHECK_CODE.parents[1]), os.environ.get("PYTHONPATH")])),
    }
    command = [
        sys.executable,
        "-m",
        "torchclaims.check.page_report",
        f"{report.example}:{report.target.rpartition(':')[2]}",
        str(root),
        str(report.text),
        str(report.page),
        "../../",
    ]
    with report.log.open("wb") as log:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=env)


def _finish(report: _Report, process: subprocess.Popen) -> str:
    """Wait for a report's process; what went wrong, or ""."""
    try:
        process.wait(timeout=REPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return f"it took longer than {REPORT_TIMEOUT_S} s"
    if process.returncode != 0:
        lines = report.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return (lines or [f"exit code {process.returncode}"])[-1][:300]
    return ""


class CheckReportDirective(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        target = self.arguments[0]
        root = Path(self.env.srcdir)
        report = _Report.of(root, Path(self.env.doctreedir), target)
        if report is None:
            warn(f"no example {target!r} in the project", "check-report", location=self.get_location())
            return []
        for path in report.inputs:
            self.env.note_dependency(str(path))
        if not report.kept():
            problem = _FAILED.get(self.env, {}).get(target) or _finish(report, _start(root, report))
            if problem:
                warn(
                    f"the check report of {target} could not be made: {problem}",
                    "check-report",
                    location=self.get_location(),
                )
                return [nodes.paragraph("", f"The report could not be made in this build: {problem}")]
        published = Path(get_state(self.env).outdir, OUT_DIR, report.page.name)
        published.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(report.page, published)
        href = posixpath.relpath(f"{OUT_DIR}/{report.page.name}", posixpath.dirname(self.env.docname))
        link = nodes.paragraph()
        link += nodes.Text("The same report as one HTML page, with every operator and its evidence: ")
        link += nodes.reference("", report.page.name, refuri=href)
        return [nodes.literal_block("", report.text.read_text(encoding="utf-8")), link]


_EARLY: weakref.WeakKeyDictionary[BuildEnvironment, list[tuple[_Report, subprocess.Popen]]] = (
    weakref.WeakKeyDictionary()
)
_FAILED: weakref.WeakKeyDictionary[BuildEnvironment, dict[str, str]] = weakref.WeakKeyDictionary()  # target -> why


def written_targets(srcdir: Path, include: list[str], exclude: list[str]) -> list[str]:
    """The arguments of every check-report directive the build's pages contain."""
    found = set()
    for name in get_matching_files(srcdir, include, exclude):
        if name.endswith((".md", ".rst")):
            text = (srcdir / name).read_text(encoding="utf-8", errors="replace")
            found.update(a or b for a, b in _WRITTEN.findall(text))
    return sorted(found)


def start_early(app: Sphinx) -> None:
    """builder-inited: start each report the pages ask for and the doctrees do not keep."""
    root = Path(app.srcdir)
    reports = [
        _Report.of(root, Path(app.doctreedir), target)
        for target in written_targets(root, app.config.include_patterns, app.config.exclude_patterns)
    ]
    _EARLY[app.env] = [(r, _start(root, r)) for r in reports if r is not None and not r.kept()]


def wait_early(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    """env-before-read-docs: the reports started early are done; the directive reports any that failed."""
    failed = {
        report.target: problem for report, process in _EARLY.pop(env, []) if (problem := _finish(report, process))
    }
    _FAILED[env] = failed


def stop_early(app: Sphinx, exception: BaseException | None) -> None:
    """build-finished: a build that stopped before reading leaves no report running."""
    for _, process in _EARLY.pop(app.env, []):
        process.kill()
        process.wait()
    _FAILED.pop(app.env, None)


def setup_check_report(app: Sphinx) -> None:
    app.add_directive("check-report", CheckReportDirective)
    app.connect("builder-inited", start_early, priority=300)  # before the claims run (state.prepare, 400)
    app.connect("env-before-read-docs", wait_early)
    app.connect("build-finished", stop_early)
