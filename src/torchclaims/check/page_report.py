"""A report for the docs, made at build time: ``python -m torchclaims.check.page_report``.

    python -m torchclaims.check.page_report TARGET ROOT SUMMARY.txt REPORT.html BASE

runs the static check of TARGET against the knowledge base at ROOT (the
model's code sandboxed, as a claim script: :mod:`.traced`) and writes
the terminal summary (links from the site's root) and the HTML report (links
under BASE, the report's way back to the site's root). The docs directive
(``torchclaims.sphinxext.directives.check_report``) runs it in its own process, so the
Sphinx process never imports torch.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..fileio import write_if_changed
from . import check_target
from .html_report import render
from .terminal import summary


def main(argv: list[str]) -> int:
    target, root, text_path, html_path, base = argv
    report = check_target(target, root=root, name=Path(target).name, site_url="")  # links in the site
    write_if_changed(Path(text_path), summary(report) + "\n")
    write_if_changed(Path(html_path), render(report, base))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
