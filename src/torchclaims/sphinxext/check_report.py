"""The ``check-report`` directive: a real ``torchclaims check`` report, made while the site builds.

``{check-report} examples/check/pixel_cnn.py:pixel_cnn_step`` runs the static
check of that example against this build's claims and committed results, in
its own process (``torchclaims.check.page_report``: the Sphinx process never
imports torch), and shows the terminal summary with a link to the HTML report,
which it writes to ``_static/check/``. Both are kept in the doctrees folder
under a digest of everything they are made of (the example, the check's code,
claims/ and results/), and the page depends on those files, so it is made
again exactly when one of them changes.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from .links import slug
from .state import get_state, warn

CHECK_CODE = Path(__file__).resolve().parent.parent / "check"
OUT_DIR = "_static/check"
TIMEOUT_S = 600


def _inputs(root: Path, example: Path) -> list[Path]:
    return [
        example,
        *sorted(CHECK_CODE.glob("*.py")),
        *sorted((root / "claims").glob("*.toml")),
        *sorted((root / "results").glob("*.json")),
    ]


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:20]


class CheckReportDirective(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        target = self.arguments[0]
        root = Path(self.env.srcdir)
        example = (root / target.rpartition(":")[0]).resolve()
        if not example.is_file() or root not in example.parents:
            warn(f"no example {target!r} in the project", "check-report", location=self.get_location())
            return []
        inputs = _inputs(root, example)
        for path in inputs:
            self.env.note_dependency(str(path))
        name = slug(target)
        cache = Path(self.env.doctreedir) / "check-reports" / _digest(inputs)
        text, page = cache / "summary.txt", cache / f"{name}.html"
        if not (text.is_file() and page.is_file()):
            problem = self._make(root, example, target, text, page)
            if problem:
                warn(
                    f"the check report of {target} could not be made: {problem}",
                    "check-report",
                    location=self.get_location(),
                )
                return [nodes.paragraph("", f"The report could not be made in this build: {problem}")]
        published = Path(get_state(self.env).outdir, OUT_DIR, f"{name}.html")
        published.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, published)
        href = posixpath.relpath(f"{OUT_DIR}/{name}.html", posixpath.dirname(self.env.docname))
        link = nodes.paragraph()
        link += nodes.Text("The same report as one HTML page, with every operator and its evidence: ")
        link += nodes.reference("", f"{name}.html", refuri=href)
        return [nodes.literal_block("", text.read_text(encoding="utf-8")), link]

    def _make(self, root: Path, example: Path, target: str, text: Path, page: Path) -> str:
        text.parent.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(CHECK_CODE.parents[1]), os.environ.get("PYTHONPATH")])),
        }
        command = [
            sys.executable,
            "-m",
            "torchclaims.check.page_report",
            f"{example}:{target.rpartition(':')[2]}",
            str(root),
            str(text),
            str(page),
            "../../",
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"it took longer than {TIMEOUT_S} s"
        if done.returncode != 0:
            return (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1][:300]
        return ""


def setup_check_report(app) -> None:
    app.add_directive("check-report", CheckReportDirective)
