"""The report as one self-contained HTML page in the site's style, with the same evidence links.

The site's own stylesheet is inlined (no file beside the page, no script), and
every value from a record, a claim, the model or the command line is escaped.
"""

from __future__ import annotations

import html
from pathlib import Path

from .links import slug
from .report import NOT_COVERED, STATUSES, WRONG, ColumnReport, Report

STYLESHEET = Path(__file__).resolve().parent.parent / "sphinxext" / "static" / "torchclaims.css"
CLASS = {WRONG: "mismatch", NOT_COVERED: "not-run"}  # statuses drawn with the site's outcome colours
EXTRA_CSS = """
body { font-family: system-ui, sans-serif; max-width: 72em; margin: 1.5em auto; padding: 0 1em; color: #1b1d22; }
table { border-collapse: collapse; margin: .6em 0; }
th, td { border: 1px solid #c9ccd1; padding: .25em .5em; text-align: left; vertical-align: top; }
td.n { text-align: right; } code { font-size: .9em; } .tc-flag { font-weight: 600; color: #7a0d0d; }
"""


def e(value) -> str:
    return html.escape(str(value), quote=True)


def _status(status: str) -> str:
    return f'<span class="tc-o tc-o-{CLASS.get(status, slug(status))}">{e(status)}</span>'


def _linker(base: str):
    """Links as the report has them, relative ones put under ``base`` (where the page lies on the site)."""

    def link(url: str, text: str) -> str:
        href = url if "://" in url or url.startswith(("/", "#")) else base + url
        return f'<a href="{e(href)}">{e(text)}</a>'

    return link


def _column(column: ColumnReport, _link) -> str:
    counts = column.counts()
    rows = []
    for finding in sorted(column.operators, key=lambda f: (STATUSES.index(f.status), f.operator)):
        evidence = "<br>".join(
            f'{_link(x.url, x.what)} <span class="tc-date">({e(x.match)}, {e(x.date)})</span>' for x in finding.evidence
        ) or e(finding.note)
        rows.append(
            f"<tr><td><code>{e(finding.operator)}</code></td><td>{e(finding.dtype)}</td>"
            f"<td>{e(', '.join(finding.phases))}</td><td>{_status(finding.status)}</td><td>{evidence}</td></tr>"
        )
    arch = ""
    if column.architecture is not None:
        a = column.architecture
        arch = f"<p>Architecture: {_status(a.status)} {_link(a.url, a.what)}</p>"
    flag = (
        ' <span class="tc-flag">flagged: an operator the model uses is known wrong here</span>'
        if column.flagged
        else ""
    )
    target = "" if column.targeted else " (not targeted: left out of the exit status)"
    tally = ", ".join(f"{counts[s]} {e(s)}" for s in STATUSES)
    return (
        f'<details class="tc-evidence"{" open" if column.flagged else ""}><summary><strong>{e(column.label)}</strong>'
        f" — measured on {e(column.device_name)}, {e(', '.join(column.dates))}; {tally}{flag}{e(target)}</summary>"
        f"<p>Rows matched: {e(column.matching or 'no operator table')}.</p>{arch}"
        "<table><thead><tr><th>operator</th><th>dtype</th><th>pass</th><th>status</th><th>evidence</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></details>"
    )


def render(report: Report, base: str = "") -> str:
    """The page; ``base`` goes before relative evidence links (the page's way to the site's root)."""
    css = STYLESHEET.read_text(encoding="utf-8") + EXTRA_CSS
    head = ["<tr><th>backend × release</th><th>device</th>" + "".join(f"<th>{e(s)}</th>" for s in STATUSES) + "</tr>"]
    for column in report.columns:
        counts = column.counts()
        head.append(
            f"<tr><th>{e(column.label)}</th><td>{e(column.device_name)}</td>"
            + "".join(f'<td class="n">{counts[s]}</td>' for s in STATUSES)
            + "</tr>"
        )
    measured = ""
    for m in report.measured:
        checks = "".join(
            f"<tr><td>{e(c['name'])}</td><td>{e(c['outcome'])}</td><td>{e(c['detail'])}</td></tr>" for c in m.checks
        )
        measured += (
            f"<h2>Measured on {e(m.backend)}: {e(m.verdict)}</h2><p>Result record in {e(m.results_file)}</p>"
            f"<table><thead><tr><th>check</th><th>outcome</th><th>detail</th></tr></thead><tbody>{checks}</tbody></table>"
        )
    verdict = "FAILED" if report.failed else "no operator is known wrong on a targeted backend"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>torchclaims check {e(report.target)}</title><style>{css}</style></head><body>"
        f"<h1>torchclaims check <code>{e(report.target)}</code></h1>"
        f"<p>{len(report.used)} ATen operator × dtype pairs recorded on the CPU"
        + (f"; architecture <code>{e(report.architecture)}</code>" if report.architecture else "")
        + f". Result: <strong>{e(verdict)}</strong>.</p>"
        f"<table>{''.join(head)}</table>"
        + "".join(_column(c, _linker(base)) for c in report.columns)
        + measured
        + '<p class="tc-date">A static check knows only what the tables measured: the operators in the dtypes and '
        "releases listed, on the devices named (XLA on the CPU is not a TPU). Kernels, numerics and speed on hardware "
        "no table covers are not known.</p></body></html>\n"
    )
