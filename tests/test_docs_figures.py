"""No measured figure is typed by hand in the site's pages: prose reads figures from records.

A figure in prose goes through ``{claim-measure}`<claim> <backend> <measurement>``
(rendered from the newest record, with its backend and date), so a page cannot
drift from the evidence. What counts as a hand-typed measured figure, in
prose outside code blocks, inline code and roles:

- a number with a unit of time, size, ratio or share: ``89 s``, ``72.7 %``,
  ``10x``, ``64 MiB``, ``3 times``;
- a number in scientific notation: ``1e-7``;
- a fraction: ``453/623``;
- a share in words or digits: ``nine in ten``, ``3 out of 31``;
- a number word with a unit: ``ten seconds``.

Settings and inputs that are not measurements (a default time limit, a tensor
size) are written as inline code, e.g. ```300``` seconds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "docs" / "auto_gallery"

WORDS = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand)"
UNITS = r"(?:%|percent|ms|s|sec|secs|seconds?|min|mins|minutes?|hours?|[KMGT]i?B|x|×|times|fold)"
NUMBER = r"\d+(?:\.\d+)?"
FIGURES = [
    re.compile(rf"(?<![\w.\-/^]){NUMBER}[\s-]?{UNITS}(?!\w)", re.I),
    re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[-+]?\d+(?!\w)", re.I),
    re.compile(r"(?<![\w./\-])\d+\s?/\s?\d+(?![\w./\-])"),
    re.compile(rf"\b(?:{WORDS}|\d+)\s+(?:in|out of)\s+(?:{WORDS}|\d+)\b", re.I),
    re.compile(rf"\b{WORDS}[\s-]+{UNITS}(?!\w)", re.I),
]
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
HIDDEN = [
    re.compile(r"\{[\w:-]+\}`[^`]*`"),  # MyST roles, {claim-measure}`...` among them
    re.compile(r":[\w:-]+:`[^`]*`"),  # reST roles
    re.compile(r"``[^`]*``|`[^`]*`"),  # inline code
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"<!--.*?-->|<[^>]+>"),  # HTML comments and tags
]


def prose(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each prose paragraph: fenced blocks and directives
    dropped, code and roles blanked, lines of a paragraph joined."""
    paragraphs: list[tuple[int, list[str]]] = []
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
            continue
        if fence is not None:
            if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
                fence = None
            continue
        if not line.strip():
            paragraphs.append((number + 1, []))
            continue
        if not paragraphs:
            paragraphs.append((number, []))
        paragraphs[-1][1].append(line)
    out = []
    for number, lines in paragraphs:
        joined = " ".join(lines)
        for pattern in HIDDEN:
            joined = pattern.sub(" ", joined)
        out.append((number, joined))
    return out


def hand_typed_figures(text: str) -> list[tuple[int, str]]:
    return [
        (number, match.group(0))
        for number, paragraph in prose(text)
        for pattern in FIGURES
        for match in pattern.finditer(paragraph)
    ]


INCLUDE = re.compile(r"^\s*[`~]{3,}\{include\}\s+(\S+)", re.M)


def pages() -> list[Path]:
    """The site's pages, and the files they include (CONTRIBUTING.md is a page too)."""
    found = [ROOT / "index.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if GENERATED not in p.parents)]
    included = [
        (page.parent / target).resolve()
        for page in found
        for target in INCLUDE.findall(page.read_text(encoding="utf-8"))
    ]
    return found + included


@pytest.mark.parametrize(
    "prose, figure",
    [
        ("about nine in ten of the listed operators match", "nine in ten"),
        ("the record says 453/623 operators", "453/623"),
        ("a share of 72.7% of them", "72.7%"),
        ("a share of 72.7 % of them", "72.7 %"),
        ("outputs differ by about 1e-7 from the CPU", "1e-7"),
        ("each takes about ten\nseconds here", "ten seconds"),
        ("fits in the 60-second budget", "60-second"),
        ("the first call is 500x slower", "500x"),
        ("the build took 89 s", "89 s"),
        ("it allocated 64 MiB", "64 MiB"),
        ("3 out of 31 architectures", "3 out of 31"),
    ],
)
def test_the_detector_finds_hand_typed_measured_figures(prose, figure):
    assert [found for _, found in hand_typed_figures(prose)] == [figure]


@pytest.mark.parametrize(
    "prose",
    [
        "{claim-measure}`opinfo-coverage xla operators that match` of the listed operators match",
        "a time limit of `300` seconds by default",
        "```text\nmax abs error = 1e-07\n```",
        "````{note}\nthe run took 89 s\n````",
        "torch 2.13.0 and torch_xla 2.9.0 on Python 3.11, a 2-core x86-64 machine, float32 and 2^24",
        "[the record](../results/cpu-torch2.14.1-20261129T173218.json)",
        ":claim-verdict:`opinfo-coverage xla`",
    ],
)
def test_the_detector_leaves_code_roles_versions_and_links_alone(prose):
    assert hand_typed_figures(prose) == []


def test_included_files_are_scanned_too():
    assert ROOT / "CONTRIBUTING.md" in pages()


def test_no_page_types_a_measured_figure_by_hand():
    found = [
        f"{page.relative_to(ROOT)}, paragraph at line {number}: {figure!r}"
        for page in pages()
        for number, figure in hand_typed_figures(page.read_text(encoding="utf-8"))
    ]
    assert not found, "figures typed by hand; read them from a record with {claim-measure}:\n" + "\n".join(found)


# Counts of the knowledge base's own contents ("two thousand operators", "the four claims that import
# torch_xla") drift as claims, scripts and op_db change; a page reads them from a record or names no number.
# "One" and "two" are left alone: they are how prose says "a" and "a pair" (two ranks, one script per claim).
COUNTED = r"(?:operators?|claims?|scripts?|architectures?|records?|OpInfo entries)"
LARGE = r"(?:three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand)"
COUNTS = re.compile(rf"\b(?:(?:{WORDS}[\s-]+)*{LARGE}|\d[\d,]*)(?:[\s-]+[a-z]+)?[\s-]+{COUNTED}\b", re.I)
# Words that rank or rate what no record ranks: the architecture sweep takes every registered type.
UNBACKED = re.compile(r"\b(?:popular|most[\s-]used|widely[\s-]used|top[\s-]\d+)\b", re.I)
AUDITED = sorted([*(ROOT / "docs" / "topics").glob("*.md"), ROOT / "docs" / "xla.md", ROOT / "docs" / "methodology.md"])


def hand_counted(text: str) -> list[tuple[int, str]]:
    return [
        (number, match.group(0))
        for number, paragraph in prose(text)
        for pattern in (COUNTS, UNBACKED)
        for match in pattern.finditer(paragraph)
    ]


@pytest.mark.parametrize(
    "prose, figure",
    [
        ("all of PyTorch's two thousand operators", "two thousand operators"),
        ("Only the four claims about torch_xla import it", "four claims"),
        ("the 696 OpInfo entries of op_db", "696 OpInfo entries"),
        ("seven scripts import torch_xla", "seven scripts"),
        ("the share of popular architectures", "popular"),
    ],
)
def test_the_count_detector_finds_counts_typed_by_hand(prose, figure):
    assert [found for _, found in hand_counted(prose)] == [figure]


@pytest.mark.parametrize(
    "prose",
    [
        "one script per claim",
        "two ranks",
        "{claim-measure}`opinfo-coverage xla operators listed` operators",
        "torch 2.13",
    ],
)
def test_the_count_detector_leaves_pairs_roles_and_versions_alone(prose):
    assert hand_counted(prose) == []


def test_topic_pages_the_xla_page_and_methodology_count_nothing_by_hand():
    assert len(AUDITED) > 3
    found = [
        f"{page.relative_to(ROOT)}, paragraph at line {number}: {figure!r}"
        for page in AUDITED
        for number, figure in hand_counted(page.read_text(encoding="utf-8"))
    ]
    assert not found, (
        "counts or rankings typed by hand; read them from a record or leave the number out:\n" + "\n".join(found)
    )
