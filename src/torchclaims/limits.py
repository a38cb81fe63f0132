"""Limits on everything torchclaims reads or shows, in one place.

Claim records, results files and script output come from people we do not
know; each reader checks these bounds before parsing, so one oversized or
deeply nested file is reported (file and field) instead of stopping a build or
filling a page; the site's own pages have a weight limit too, and each claim's
run has bounds on what it may take (torchclaims.run.bounds). docs/limits.md
renders them (torchclaims.sphinxext.directives.figures).

Runtime checks read ``LIMITS`` when they run (tests may replace it); the text
types below fix their lengths when the models are defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, Field

from . import text_safety

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass(frozen=True)
class Limits:
    results_file_bytes: int = 8 * MIB  # one results file
    record_file_bytes: int = 1 * MIB  # one result record (records directory)
    claim_file_bytes: int = 64 * KIB  # one claims/*.toml
    script_bytes: int = 256 * KIB  # one gallery script
    json_depth: int = 32  # nesting of arrays and objects in any JSON file
    page_output_bytes: int = 256 * KIB  # what one script prints onto its gallery page
    staged_page_bytes: int = (
        16 * MIB
    )  # the page a script's process writes, output and all: beyond it no output is shown
    log_tail_bytes: int = 8 * KIB  # the end of a script's output kept in its record
    log_tail_lines: int = 40
    page_html_bytes: int = 500_000  # one published page, uncompressed (data a page loads on demand is beside it)
    publish_manifest_bytes: int = 4 * MIB  # the list of files a publish wrote, read back by the next one
    attestations_file_bytes: int = 64 * MIB  # gh's answers for every results file (torchclaims attest)
    # What one claim may take while it runs (torchclaims.run.bounds): each one exceeded is
    # an error record for that claim, naming the field.
    claim_processes: int = 512  # at once, the script's and all it starts (a sweep starts one per core)
    claim_tasks: int = 8192  # processes and threads together, at once
    process_memory_share: float = 0.5  # of the machine's memory: the data each of its processes may hold
    claim_memory_share: float = 0.75  # of the machine's memory: what all its processes hold together
    open_files: int = 4096  # per process
    folder_bytes: int = 4 * GIB  # disk use of the claim's own folder, and the size of any one file
    folder_depth: int = 64  # folders nested in the claim's own folder
    folder_files: int = 200_000  # files and folders in the claim's own folder
    figure_bytes: int = 8 * MIB  # each figure (PNG) kept with its record or page
    # Each claim's own compiler caches, kept between its runs (torchclaims.run.cache_eviction).
    compiler_cache_bytes: int = 2 * GIB  # one claim's, on one backend
    compiler_caches_total_bytes: int = 16 * GIB  # every claim's on every backend, together


LIMITS = Limits()

# Claim records: a contributor is told to shorten the text (lint and build).
STATEMENT_CHARS = 1000  # the proposition
NOTE_CHARS = 1000  # caveats and source notes
QUOTE_CHARS = 600  # besides the 40-word rule
NAME_CHARS = 200  # each claimant, publisher, labels
URL_CHARS = 2000

# Result records: text a script produced is cut, with a mark, never rejected,
# so a verbose script still gets its verdict; counts are hard limits.
RECORD_TEXT_CHARS = 4000  # reasons, check details, condition values
RECORD_NAME_CHARS = 300  # check and measurement names, environment values
MAX_CHECKS = 200
MAX_MEASUREMENTS = 2000  # per check: coverage tables keep a row per item
MAX_FIGURES = 50  # also the most figures one run may leave
MAX_RECORDS = 5000  # per results file
MAX_MAP_ENTRIES = 200  # conditions, packages, environment variables, inputs


def cut(limit: int):
    """A validator keeping the first ``limit`` characters, marking the cut."""

    def validate(text: str) -> str:
        if len(text) <= limit:
            return text
        mark = f" [… {len(text) - limit} more characters cut: the limit is {limit}]"
        return text[: limit - len(mark)] + mark

    return AfterValidator(validate)


# Text from data keeps nothing that acts instead of reading (torchclaims.text_safety):
# record text keeps its lines, titles and labels are one line.
NEUTRAL = AfterValidator(text_safety.shown)
ONE_LINE = AfterValidator(text_safety.one_line)
OneLine = Annotated[str, ONE_LINE]
RecordText = Annotated[str, cut(RECORD_TEXT_CHARS), NEUTRAL]
RecordName = Annotated[str, cut(RECORD_NAME_CHARS), NEUTRAL]
RecordLabel = Annotated[str, cut(RECORD_NAME_CHARS), ONE_LINE]  # a results file's label
ClaimId = Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=100)]
# Backend names become parts of file names: letters, digits, '_' and '-' only.
BackendName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,40}$")]
