"""The report as one self-contained HTML page in the site's style, with the same evidence links.

The site's own stylesheet is inlined (no file beside the page, no script), and
every value from a record, a claim, the model or the command line is escaped:
markupsafe's ``Markup.format`` escapes each value that is not markup already.
"""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from ..evidence.records import Verdict
from ..site_addresses import slug
from .device_evidence import passing_hint
from .report import NOT_COVERED, RUN_WORDS, SET_ASIDE, STATUSES, WRONG, BackendRun, ColumnReport, Report

STYLESHEET = Path(__file__).resolve().parent.parent / "sphinxext" / "static" / "torchclaims.css"
CLASS = {WRONG: "mismatch", NOT_COVERED: "not-run"}  # statuses drawn with the site's outcome colours
EXTRA_CSS = """
body { font-family: system-ui, sans-serif; max-width: 72em; margin: 1.5em auto; padding: 0 1em; color: #1b1d22; }
table { border-collapse: collapse; margin: .6em 0; }
th, td { border: 1px solid #c9ccd1; padding: .25em .5em; text-align: left; vertical-align: top; }
td.n { text-align: right; } code { font-size: .9em; } .tc-flag { font-weight: 600; color: #7a0d0d; }
"""


def _status(status: str) -> Markup:
    return Markup('<span class="tc-o tc-o-{}">{}</span>').format(CLASS.get(status, slug(status)), status)


def _linker(base: str):
    """Links as the report has them, relative ones put under ``base`` (where the page lies on the site)."""

    def link(url: str, text: str) -> Markup:
        href = url if "://" in url or url.startswith(("/", "#")) else base + url
        return Markup('<a href="{}">{}</a>').format(href, text)

    return link


def _column(column: ColumnReport, _link) -> Markup:
    counts = column.counts()
    rows = Markup("")
    for finding in sorted(column.operators, key=lambda f: (STATUSES.index(f.status), f.operator)):
        evidence = Markup("<br>").join(
            Markup('{} <span class="tc-date">({}, {})</span>{}').format(
                _link(x.url, x.what),
                x.match,
                x.date,
                Markup("<br><strong>Workaround:</strong> {}").format(x.workaround) if x.workaround else "",
            )
            for x in finding.evidence
        ) or Markup("{}").format(finding.note)
        rows += Markup("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>").format(
            finding.operator, finding.dtype, ", ".join(finding.phases), _status(finding.status), evidence
        )
    arch = ""
    if column.architecture is not None:
        a = column.architecture
        arch = Markup("<p>Architecture: {} {}</p>").format(_status(a.status), _link(a.url, a.what))
    flag = (
        Markup(' <span class="tc-flag">flagged: an operator the model uses is known wrong here</span>')
        if column.flagged
        else ""
    )
    target = "" if column.targeted else " (not targeted: left out of the exit status)"
    tally = ", ".join(f"{counts[s]} {s}" for s in STATUSES)
    return Markup(
        '<details class="tc-evidence"{}><summary><strong>{}</strong> — measured on {}, {}; {}{}{}</summary>'
        "<p>Rows matched: {}.</p>{}"
        "<table><thead><tr><th>operator</th><th>dtype</th><th>pass</th><th>status</th><th>evidence</th></tr></thead>"
        "<tbody>{}</tbody></table></details>"
    ).format(
        Markup(" open") if column.flagged else "",
        column.label,
        column.device_name,
        ", ".join(column.dates),
        tally,
        flag,
        target,
        column.matching or "no operator table",
        arch,
        rows,
    )


def _run(m: BackendRun) -> Markup:
    """A backend run: its outcome, record, reason and checks, and the log of one that errored."""
    where = Markup("<p>Result record ({}) in {}</p>").format(m.verdict, m.results_file) if m.results_file else ""
    why = Markup("<p>Reason: {}</p>").format(m.reason) if m.reason else ""
    rows = Markup("").join(
        Markup("<tr><td>{}</td><td>{}</td><td>{}</td></tr>").format(c["name"], c["outcome"], c["detail"])
        for c in m.checks
    )
    checks = (
        Markup(
            "<table><thead><tr><th>check</th><th>outcome</th><th>detail</th></tr></thead><tbody>{}</tbody></table>"
        ).format(rows)
        if m.checks
        else ""
    )
    log = Markup('<pre class="tc-log">{}</pre>').format(m.log_tail) if m.log_tail and m.outcome is Verdict.ERROR else ""
    mode = Markup(" ({})").format(m.mode) if m.mode else ""
    return Markup("<h2>Run on {}{}: {}</h2>{}{}{}{}{}").format(
        m.backend, mode, RUN_WORDS[m.outcome], where, why, checks, _shown(m), log
    )


def _shown(m: BackendRun) -> Markup:
    """What the run's measurements show: precision mode, CPU fallbacks, and each difference against its tolerance."""
    items = []
    if m.precision:
        items.append(Markup("Precision mode: <code>{}</code>").format(m.precision))
    if m.fallbacks is not None:
        names = Markup(", ").join(Markup("<code>{}</code>").format(n) for n in m.fallbacks)
        items.append(
            Markup("Ran on the CPU through the fallback: {}").format(names or "none, by the backend's counters")
        )
    if m.refused:
        names = Markup(", ").join(Markup("<code>{}</code>").format(n) for n in m.refused)
        items.append(Markup("Raised with the fallback forbidden, so it needs it: {}").format(names))
    items += [Markup("{}").format(d.describe()) for d in m.differences]
    if m.passing_atol is not None:
        items.append(Markup("<strong>{}</strong>").format(passing_hint(m.passing_atol)))
    if m.set_aside:
        items.append(Markup("{}").format(SET_ASIDE))
    return (
        Markup("<ul>{}</ul>").format(Markup("").join(Markup("<li>{}</li>").format(i) for i in items)) if items else ""
    )


def _standings(report: Report, _link) -> Markup:
    """Every target backend: what is measured, what is unknown, and every attributed claim about it."""
    rows = Markup("")
    for standing in report.backends:
        word = Markup("<br>").join(
            Markup("{} ({}{})").format(
                _link(v.url, v.claim), v.publisher, Markup(", ") + _link(v.source, v.source) if v.source else ""
            )
            for v in standing.vendor
        )
        rows += Markup("<tr><th>{}{}</th><td>{}</td><td>{}</td></tr>").format(
            standing.backend, " (targeted)" if standing.asked else "", standing.line(), word or "none"
        )
    return Markup(
        "<h2>Target backends</h2><table><thead><tr><th>backend</th><th>measured and unknown</th>"
        "<th>the vendor's word (attributed claims, no verdict)</th></tr></thead><tbody>{}</tbody></table>"
    ).format(rows)


def render(report: Report, base: str = "") -> str:
    """The page; ``base`` goes before relative evidence links (the page's way to the site's root)."""
    css = STYLESHEET.read_text(encoding="utf-8") + EXTRA_CSS
    head = Markup("<tr><th>backend × release</th><th>device</th>{}</tr>").format(
        Markup("").join(Markup("<th>{}</th>").format(s) for s in STATUSES)
    )
    for column in report.columns:
        counts = column.counts()
        head += Markup("<tr><th>{}</th><td>{}</td>{}</tr>").format(
            column.label,
            column.device_name,
            Markup("").join(Markup('<td class="n">{}</td>').format(counts[s]) for s in STATUSES),
        )
    architecture = Markup("; architecture <code>{}</code>").format(report.architecture) if report.architecture else ""
    link = _linker(base)
    return Markup(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>torchclaims check {}</title><style>{}</style></head><body>"
        "<h1>torchclaims check <code>{}</code></h1>"
        "<p>{} ATen operator × dtype pairs recorded on the CPU{}. Result: <strong>{}</strong>.</p>"
        "<table>{}</table>{}{}{}"
        '<p class="tc-date">A static check knows only what the tables measured: the operators in the dtypes and '
        "releases listed, on the devices named (XLA on the CPU is not a TPU). Kernels, numerics and speed on hardware "
        "no table covers are not known.</p></body></html>\n"
    ).format(
        report.target,
        Markup(css),  # trusted: the site's own stylesheet, from the package
        report.target,
        len(report.used),
        architecture,
        report.result_line(),
        head,
        _standings(report, link),
        Markup("").join(_column(c, link) for c in report.columns),
        Markup("").join(_run(m) for m in report.measured),
    )
