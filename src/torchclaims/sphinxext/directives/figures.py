"""Figures and limits on the docs pages, generated from their source, never retyped.

``build-speed`` renders what ``benchmarks/build_speed.py --json`` wrote (the
committed ``benchmarks/build_speed.json``); ``measured`` renders one group of
``benchmarks/measured.json`` (figures timed with the command each row names);
``limits-table`` renders the bounds of ``torchclaims.limits`` and the readers
that use them; ``argument-kinds`` the letters a coverage table's argument
tokens use (``torchclaims.evidence.coverage_table``, where the sweep's
``coverage.op_arguments`` takes them). A file that cannot be read gives one
warning naming the file and field, and no table.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from ... import caches, claims, limits
from ...caches import CACHES
from ...claims import MAX_QUOTE_WORDS, Trigger
from ...errors import InvalidFileError
from ...evidence import coverage_table
from ...evidence.memo import MAX_FILE_BYTES as MEMO_BYTES
from ...fileio import read_json
from ...run.bounds import WATCH_S
from ...run.probe_cache import MAX_FILE_BYTES as PROBE_BYTES
from ..build.state import get_state, warn
from ..views.markup import paragraph, table

BUILD_SPEED = "benchmarks/build_speed.json"
MEASURED = "benchmarks/measured.json"
MAX_BYTES = 256 * limits.KIB


def size(n: int) -> str:
    if n % limits.GIB == 0:
        return f"{n // limits.GIB} GiB"
    return f"{n // limits.MIB} MiB" if n % limits.MIB == 0 else f"{n // limits.KIB} KiB"


def limit_rows() -> list[tuple[str, str]]:
    """(input, limit) for every bound a reader checks."""
    L = limits.LIMITS
    return [
        (
            "results file",
            f"{size(L.results_file_bytes)}; arrays and objects nested at most {L.json_depth} deep; at most "
            f"{limits.MAX_RECORDS:,} records, {limits.MAX_CHECKS} checks per record, "
            f"{limits.MAX_MEASUREMENTS:,} measurements per check, "
            f"{limits.MAX_FIGURES} figures per record, {limits.MAX_MAP_ENTRIES} entries per map",
        ),
        (
            "text in a result record",
            f"reasons, details, condition values cut at {limits.RECORD_TEXT_CHARS:,} characters, "
            f"names at {limits.RECORD_NAME_CHARS} (with a mark)",
        ),
        ("one result record file (_build/records)", size(L.record_file_bytes)),
        (
            "claim record (claims/*.toml)",
            f"{size(L.claim_file_bytes)} of UTF-8; proposition at most {limits.STATEMENT_CHARS:,} characters, "
            f"caveats and notes {limits.NOTE_CHARS:,}, "
            f"quotes {limits.QUOTE_CHARS} (and under {MAX_QUOTE_WORDS} words), "
            f"claimants and publishers {limits.NAME_CHARS}, URLs {limits.URL_CHARS:,}",
        ),
        ("gallery script", f"{size(L.script_bytes)} of UTF-8"),
        (
            "a script's output on its gallery page",
            f"{size(L.page_output_bytes)}, then a mark says it was cut; "
            f"none when the page its process wrote passes {size(L.staged_page_bytes)}",
        ),
        (
            "a script's output kept in its record",
            f"the last {L.log_tail_lines} lines, at most {size(L.log_tail_bytes)}",
        ),
        (
            "what a build remembers (the probe's answer, the memo)",
            f"{size(PROBE_BYTES)} and {size(MEMO_BYTES)}; anything malformed is probed or worked out again",
        ),
        (
            "a published page (what the site gives a reader)",
            f"{L.page_html_bytes:,} bytes of HTML, uncompressed; data a page loads "
            "on demand (coverage tables, the matrix's other versions, a claim's table of every record) "
            "lies beside it, once",
        ),
        ("the list of files a publish wrote (read back by the next)", size(L.publish_manifest_bytes)),
        ("the attestations verified for a build (torchclaims attest)", size(L.attestations_file_bytes)),
    ] + claim_rows()


def claim_rows() -> list[tuple[str, str]]:
    """(what, limit) for each resource one claim may take while it runs (torchclaims.run.bounds)."""
    L = limits.LIMITS
    return [
        (
            "a claim's processes (claim_processes, claim_tasks)",
            f"{L.claim_processes:,} at once; {L.claim_tasks:,} processes and threads together, at once: "
            f"both counted by its supervisor every {WATCH_S:g} s, and the second by the kernel too for the "
            "claim alone (RLIMIT_NPROC in its own user namespace; the kernel does not apply it to root)",
        ),
        (
            "memory of each of a claim's processes (process_memory_share)",
            f"{L.process_memory_share:.0%} of the machine's memory, as data (RLIMIT_DATA: what malloc and "
            "torch's CPU allocator take, not the address space CUDA reserves)",
        ),
        (
            "memory of all a claim's processes together (claim_memory_share)",
            f"{L.claim_memory_share:.0%} of the machine's memory, summed by its supervisor every {WATCH_S:g} s "
            "(each process's proportional set size, a page shared by n processes counting 1/n, "
            "and what the claim's own /dev/shm holds)",
        ),
        ("open files of each of a claim's processes (open_files)", f"{L.open_files:,} (RLIMIT_NOFILE)"),
        (
            "a claim's own folder (folder_bytes, folder_depth, folder_files)",
            f"{size(L.folder_bytes)} of disk, measured after the run; each file at most {size(L.folder_bytes)} "
            f"as it is written (RLIMIT_FSIZE); folders nested at most {L.folder_depth} deep; "
            f"{L.folder_files:,} files and folders, counted after the run",
        ),
        (
            "a claim's figures (MAX_FIGURES, figure_bytes)",
            f"{limits.MAX_FIGURES} per run, each at most {size(L.figure_bytes)} (as its size reads: "
            "a sparse file counts whole)",
        ),
        (
            "a claim's own compiler caches (compiler_cache_bytes, compiler_caches_total_bytes)",
            f"{size(L.compiler_cache_bytes)} each, {size(L.compiler_caches_total_bytes)} for every claim's "
            "together, measured after each run: caches past the first are removed, then those of the claims "
            "run longest ago until all fit",
        ),
    ]


class LimitsDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(Path(limits.__file__)))
        return [table(["input", "limit"], [list(row) for row in limit_rows()], ["tc-limits"])]


class CachesDirective(SphinxDirective):
    """Every cache a run or a build keeps, from torchclaims.caches."""

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(Path(caches.__file__)))
        rows = [[c.name, nodes.literal("", c.where), c.holds, c.key] for c in CACHES]
        return [table(["cache", "where", "what it holds", "kept under"], rows, ["tc-caches"])]


class ArgumentKindsDirective(SphinxDirective):
    """How a sample's argument token reads, and every kind letter, from torchclaims.evidence.coverage_table."""

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(Path(coverage_table.__file__)))
        about = paragraph(
            "A sample's argument kinds are one token: the rank of each tensor input in order (one digit, ",
            nodes.literal("", "+"),
            f" for a rank above 9; past the first {coverage_table.MAX_TENSORS} inputs one ",
            nodes.literal("", "+"),
            " for the rest), then ",
            nodes.literal("", "/"),
            " and a letter for each of these kinds the sample had:",
        )
        rows = [[nodes.literal("", letter), kind] for letter, kind in coverage_table.ARGUMENT_KINDS.items()]
        return [about, table(["letter", "the sample had"], rows, ["tc-argument-kinds"])]


class TriggersDirective(SphinxDirective):
    """The argument kinds a defect claim's ``trigger`` may name, from torchclaims.claims.Trigger."""

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(Path(claims.__file__)))
        rows = [[nodes.literal("", trigger.value), trigger.meaning] for trigger in Trigger]
        return [table(["trigger", "some call of the operator has"], rows, ["tc-triggers"])]


def _load(directive: SphinxDirective, name: str) -> dict | None:
    path = get_state(directive.env).root / name
    directive.env.note_dependency(str(path))
    try:
        data = read_json(path, MAX_BYTES, "figures file")
    except InvalidFileError as exc:
        warn(f"{exc}; no table", "figures", location=(directive.env.docname, directive.lineno))
        return None
    if not isinstance(data, dict):
        warn(f"{path}: expected an object; no table", "figures", location=(directive.env.docname, directive.lineno))
        return None
    return data


def _rows(directive, name: str, data: dict, key: str, fields: list[str]) -> list[list[str]] | None:
    items = data.get(key)
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        warn(
            f"{name}: {key} must be a list of objects; no table",
            "figures",
            location=(directive.env.docname, directive.lineno),
        )
        return None
    return [[_text(item.get(f)) for f in fields] for item in items]


def _text(value) -> str:
    return (
        "—"
        if value in (None, "")
        else f"{value:,}"
        if isinstance(value, int) and not isinstance(value, bool)
        else str(value)
    )


class BuildSpeedDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        data = _load(self, BUILD_SPEED)
        if data is None:
            return []
        figures = _rows(self, BUILD_SPEED, data, "figures", ["figure", "value", "unit", "target", "verdict"])
        builds = _rows(
            self,
            BUILD_SPEED,
            data,
            "builds",
            ["build", "seconds", "claims_run", "peak_pss_mb", "torch_imported_by", "left_behind"],
        )
        if figures is None or builds is None:
            return []
        about = paragraph(
            f"Measured {_text(data.get('measured_at'))} on {_text(data.get('cores'))} cores, "
            f"{_text(data.get('claims'))} executable claims, by ",
            nodes.literal("", _text(data.get("source"))),
            f" ({BUILD_SPEED}).",
        )
        return [
            about,
            table(["figure", "value", "unit", "target", "verdict"], figures, ["tc-figures"]),
            table(
                ["build", "wall s", "claims run", "peak PSS MB", "processes importing torch", "left behind"],
                builds,
                ["tc-figures"],
            ),
        ]


class MeasuredDirective(SphinxDirective):
    required_arguments = 1  # the group

    def run(self) -> list[nodes.Node]:
        data = _load(self, MEASURED)
        if data is None:
            return []
        group = self.arguments[0]
        rows = _rows(self, MEASURED, data, "figures", ["group", "what", "figure", "date", "how"])
        if rows is None:
            return []
        chosen = [row[1:] for row in rows if row[0] == group]
        if not chosen:
            warn(f"{MEASURED}: no figures of group {group!r}", "figures", location=(self.env.docname, self.lineno))
            return []
        return [table(["what", "figure", "measured", "how"], chosen, ["tc-figures"])]


def setup_figures(app) -> None:
    app.add_directive("limits-table", LimitsDirective)
    app.add_directive("caches-table", CachesDirective)
    app.add_directive("argument-kinds", ArgumentKindsDirective)
    app.add_directive("claim-triggers", TriggersDirective)
    app.add_directive("build-speed", BuildSpeedDirective)
    app.add_directive("measured", MeasuredDirective)
