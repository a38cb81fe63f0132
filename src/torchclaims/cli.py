"""Command line: verify, lint, diff, merge, show, new, schema, sweep, check, bundle, doctor.

Works in the current environment with no site build. ``verify`` runs the same
scripts through the same isolated runner as the Sphinx build. Usage errors are
caught in one place (``main``) and printed to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING

from . import config
from .backends import BACKEND_ENV_VAR, requested_backend, resolve_backend
from .claims import claim_json_schema, load_claims
from .errors import InvalidFileError, Problem, TorchclaimsError, UsageError
from .evidence.admission import Admission
from .evidence.attestation import verifier_from
from .evidence.judging import read_own_record
from .evidence.provenance import from_github_actions
from .evidence.records import Verdict
from .evidence.results import ResultsFile, build_results, read_results
from .history.changes import describe
from .text_safety import guarded

if TYPE_CHECKING:
    from .history.upgrades import Moved


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # a claim errored, lint found problems, diff found a regression, check found the model wrong
    USAGE_ERROR = 2
    INVALID_INPUT = 3  # a results file or record failed validation
    CHECK_ERROR = 4  # check: the model could not run (it raised here) or the run on the backend broke
    CHECK_UNVERIFIED = 5  # check: the backend could not be checked here, or a targeted backend was never measured
    INTERRUPTED = 130  # Ctrl-C, as shells report it


def _root(args) -> Path:
    root = Path(args.root).resolve()
    if not root.is_dir():
        raise UsageError(f"--root {args.root}: no such directory")
    return root


def _admission(root: Path) -> Admission:
    """The load checks for this project; without a claims/ folder, the ones that need none."""
    if not (root / "claims").is_dir():
        print(f"note: no claims/ in {root}: claim ids and script versions are not checked", file=sys.stderr)
        return Admission()
    return Admission.for_project(root, load_claims(root / "claims").claims)


def _report(problems: list[Problem], verb: str = "rejected") -> None:
    for problem in problems:
        print(f"{verb}: {problem}", file=sys.stderr)


def cmd_verify(args) -> ExitCode:
    from .evidence.output import write_run
    from .run.execution import Settings, verify

    root = _root(args)
    timeout = config.seconds(
        os.environ.get("TORCHCLAIMS_TIMEOUT", "300") if args.timeout is None else args.timeout,
        "--timeout / TORCHCLAIMS_TIMEOUT",
    )
    records_dir = config.directory(args.records_dir, "--records-dir") if args.records_dir else None
    jobs = config.count(args.jobs, "--jobs")
    provenance = from_github_actions() if args.workflow_run else None
    backend = requested_backend(args.backend)
    if backend != "auto":
        resolve_backend(backend)  # an unknown name is a usage error here, before any process starts
    claims = load_claims(root / "claims")
    for problem in claims.problems:
        print(f"warning: skipping broken record: {problem}", file=sys.stderr)
    selected = claims.executable()
    if args.claims:
        unknown = sorted(set(args.claims) - set(claims.claims))
        if unknown:
            raise UsageError(f"unknown claim id(s): {', '.join(unknown)}")
        selected = [c for c in selected if c.id in args.claims]
    settings = Settings(
        root=root,
        backend=backend,
        timeout=timeout,
        parallel=jobs,
        records_dir=records_dir,
        force=args.force,
        require_usable=True,  # a results file never holds a backend that could not run
        results_dir=root / "results",  # their durations order a first run (scheduling.py)
    )
    figures = FiguresKept(settings)
    try:
        outcome = verify(
            selected,
            settings,
            extra_reasons=figures.reasons,
            log=print,
            warn=lambda m: print(f"warning: {m}", file=sys.stderr),
        )
    except KeyboardInterrupt as exc:
        raise KeyboardInterrupt(f"{exc or 'interrupted'}; no results file written") from None
    refused = figures.refused(selected, outcome)
    if refused:
        print(
            f"left out of the results file: {', '.join(refused)}: {NO_FIGURES}; run again with --force", file=sys.stderr
        )
    records = [outcome.records[c.id] for c in selected if c.id in outcome.records and c.id not in refused]
    results = build_results(records, outcome.probe.environment, label=args.label, provenance=provenance)
    output = Path(args.output) if args.output else root / "_build" / "results"
    executable = {c.id for c in claims.executable()}
    path = write_run(results, output, settings.records_root() / outcome.probe.backend, executable, log=print)
    print_table(records)
    print(f"results file: {path}")
    errored = [r.claim_id for r in records if r.verdict is Verdict.ERROR]
    if errored:
        print(f"{len(errored)} claim(s) could not be verified (error): {', '.join(errored)}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


NO_FIGURES = (
    "its cached record has no figures although the script draws (a site build keeps them on the gallery page only)"
)


class FiguresKept:
    """A results file never goes out without the figures its records had: a claim
    whose cached record lost them (a site build made it) re-runs, and one that could
    not (``--backend auto`` knows the records' folder only after probing) is left out."""

    def __init__(self, settings):
        from .run.cache import InputScanner

        self.settings, self.scanner = settings, InputScanner(settings.root)

    def lost(self, claim, record) -> bool:
        if not record.checks or record.figures:
            return False
        return any(
            module.split(".")[0] == "matplotlib" for module in self.scanner.uses_of(self.settings.root / claim.script)
        )

    def reasons(self, claim) -> list[str]:
        """extra_reasons for verify."""
        from .run.execution import record_path

        if self.settings.backend == "auto":
            return []
        try:
            record = read_own_record(record_path(self.settings, self.settings.backend, claim.id))
        except InvalidFileError:
            return []  # absent or unreadable: it runs anyway
        return [NO_FIGURES] if self.lost(claim, record) else []

    def refused(self, claims, outcome) -> list[str]:
        """Claims whose record would go out without its figures; they are left out of the results file."""
        return [
            c.id
            for c in claims
            if c.id in outcome.records and c.id not in outcome.reran and self.lost(c, outcome.records[c.id])
        ]


def print_table(records) -> None:
    width = max([len(r.claim_id) for r in records] + [5])
    print(f"\n{'claim':<{width}}  {'verdict':<10}  {'time':>7}  reason")
    for r in sorted(records, key=lambda r: r.claim_id):
        print(f"{r.claim_id:<{width}}  {r.verdict.value:<10}  {r.duration_s:>6.1f}s  {r.reason[:100]}")
    counts = {v.value: sum(r.verdict is v for r in records) for v in Verdict}
    print(", ".join(f"{n} {v}" for v, n in counts.items()))


def cmd_lint(args) -> ExitCode:
    from .authoring.lint import lint

    problems = lint(_root(args))
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) found", file=sys.stderr)
        return ExitCode.FAILED
    print("lint: no problems found")
    return ExitCode.OK


def _admitted(path: Path, admission: Admission) -> tuple[ResultsFile, dict]:
    results = read_results(path)
    admitted = admission.check(path, results)
    _report(admitted.problems, "left out")
    return results, {r.claim_id: r for r in admitted.records}


def cmd_diff(args) -> ExitCode:
    from .history.upgrades import compare
    from .history.version_history import Run

    admission = _admission(_root(args))
    (old, before), (new, after) = _admitted(Path(args.old), admission), _admitted(Path(args.new), admission)
    if args.reproduce and old.backend != new.backend:
        print(f"not compared: {args.old} is from backend {old.backend}, {args.new} from {new.backend}")
        return ExitCode.OK
    # The same comparison as the upgrade pages (torchclaims.history.upgrades), on the records the load checks admit.
    comparison = compare(
        Run(args.old, old.environment, before, old.label), Run(args.new, new.environment, after, new.label)
    )
    changes = comparison.verdicts
    print(f"old: {args.old} ({old.backend}, torch {old.environment.torch}, {old.created:%Y-%m-%d})")
    print(f"new: {args.new} ({new.backend}, torch {new.environment.torch}, {new.created:%Y-%m-%d})")
    if old.backend != new.backend:
        print(f"note: the files come from different backends ({old.backend} and {new.backend})")
    print(f"versions: {describe(old.environment, new.environment)}")
    for label, ids in (("only in old", comparison.only_old), ("only in new", comparison.only_new)):
        if ids:
            print(f"{label} (not compared): {', '.join(ids)}")
    print(f"{comparison.compared} claims compared, {len(changes)} changed verdict")
    for change in changes:
        mark = "REGRESSION " if change.regression else ""
        print(f"{mark}{change.claim_id}: {change.old.verdict.value} -> {change.new.verdict.value}")
        if change.new is not None and change.new.reason:
            print(f"    now: {change.new.reason[:200]}")
    for name, rows in comparison.moved.items():
        MOVED_PRINTERS.get(name, print_moved)(name, rows, args.cells)
    if args.reproduce and changes:
        print(f"not reproduced: {len(changes)} claim(s) gave another verdict in {args.new}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.FAILED if comparison.regressions and not args.no_gate and not args.reproduce else ExitCode.OK


def print_moved(name: str, rows: list[Moved], every: bool) -> None:
    print(f"{len(rows)} {name} moved beyond their tolerance" + (":" if rows else ""))
    for row in rows:
        note = f" ({row.note})" if row.note else ""
        print(f"  {row.claim_id}: {row.what}: {row.before} -> {row.after}{note}")


def print_coverage_changes(name: str, rows: list[Moved], every: bool, shown: int = 30) -> None:
    """Coverage cells that changed outcome, per claim, grouped by what became what."""
    by_claim: dict[str, list[Moved]] = {}
    for row in rows:
        by_claim.setdefault(row.claim_id, []).append(row)
    for claim_id, cells in sorted(by_claim.items()):
        print(f"{claim_id}: {len(cells)} table cells changed outcome")
        groups: dict[tuple[str, str], list[Moved]] = {}
        for cell in cells:
            groups.setdefault((cell.before, cell.after), []).append(cell)
        for (old, new), group in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"  {old} -> {new} ({len(group)})")
            for cell in group if every else group[:shown]:
                print(f"    {cell.what}" + (f": {cell.note}" if every and cell.note else ""))
            if not every and len(group) > shown:
                print(f"    ... and {len(group) - shown} more (--cells lists every one)")


MOVED_PRINTERS = {
    "coverage": print_coverage_changes
}  # by comparer name (upgrades.RECORD_COMPARERS); others: print_moved


def cmd_merge(args) -> ExitCode:
    from .evidence.output import merge_file

    root = _root(args)
    target = config.directory(args.into, "--into")
    admission = _admission(root)
    status = ExitCode.OK
    for name in args.files:
        try:
            print(merge_file(Path(name), target, admission, args.verify_attestation))
        except InvalidFileError as exc:
            _report(exc.problems)
            print(f"rejected: {name} was not merged ({len(exc.problems)} problem(s) above)", file=sys.stderr)
            status = ExitCode.INVALID_INPUT
    return status


def _local_records(records_root: Path) -> list:
    """Records this machine's runs left in _build/records (every backend)."""
    records = []
    for path in sorted(records_root.glob("*/*.json")):
        try:
            records.append(read_own_record(path))
        except InvalidFileError as exc:
            print(f"skipping: {exc}", file=sys.stderr)
    return records


def cmd_show(args) -> ExitCode:
    from .evidence.store import THIS_MACHINE, Entry, load_store
    from .verify import summary

    root = _root(args)
    results_dir = root / args.results_dir
    if not results_dir.is_dir():
        raise UsageError(f"results directory {results_dir} does not exist (use --results-dir)")
    claims = load_claims(root / "claims")
    _report(claims.problems, "skipped")
    verifier = verifier_from(os.environ.get("TORCHCLAIMS_VERIFY_ATTESTATIONS"))  # attested only when verified now
    store = load_store({}, None, results_dir, admission=Admission.for_project(root, claims.claims), verifier=verifier)
    _report(store.problems)
    if args.claims:
        unknown = sorted(set(args.claims) - set(claims.claims))
        if unknown:
            raise UsageError(f"unknown claim id(s): {', '.join(unknown)}")
        for record in _local_records(root / "_build" / "records"):
            store.add(Entry(record, THIS_MACHINE))
        for claim_id in args.claims:
            entries = store.history(claim_id)
            print(f"{claim_id}: {len(entries)} record(s)" + ("" if entries else " (not run)"))
            for entry in entries:
                print(f"\n[{entry.source.describe()}]\n{summary(entry.record)}")
        return ExitCode.INVALID_INPUT if store.problems else ExitCode.OK
    for line in matrix_lines(claims, store):
        print(line)
    return ExitCode.INVALID_INPUT if store.problems else ExitCode.OK


SHOW_WIDTH = 120  # show's table fits a terminal this wide; more columns go on in another block below
CELL = 9  # a verdict word and a trust mark, and a space
SHORT = {"holds": "holds", "refuted": "refuted", "unverified": "unverif", "error": "error"}


def column_key(column: str) -> tuple:
    """'cpu · torch 2.10.0' after 'cpu · torch 2.9.0': versions compare as versions
    (packaging.version); a string that is no version sorts after them, as text."""
    from packaging.version import InvalidVersion, Version

    group, _, version = column.rpartition(" ")
    try:
        return (group, 0, Version(version), "")
    except InvalidVersion:
        return (group, 1, None, version)


def column_blocks(columns: list[str], per_block: int) -> list[list[str]]:
    """Columns in blocks of at most ``per_block``; a group (backend and package) starts a new
    block where it would not fit whole."""
    blocks: list[list[str]] = [[]]
    groups: dict[str, list[str]] = {}
    for column in columns:
        groups.setdefault(column.rpartition(" ")[0], []).append(column)
    for group in groups.values():
        if blocks[-1] and len(blocks[-1]) + len(group) > per_block:
            blocks.append([])
        for column in group:
            if len(blocks[-1]) == per_block:
                blocks.append([])
            blocks[-1].append(column)
    return blocks


def matrix_lines(claims, store) -> list[str]:
    """The claims x columns table in blocks of at most SHOW_WIDTH characters, then where each
    column's records come from."""
    from .evidence.provenance import Trust

    mark = {Trust.BY_HAND: "*", Trust.ATTESTED: "+"}
    columns = sorted(store.columns(), key=column_key)
    width = min(max([len(c) for c in claims.claims] + [5]), 40)
    per_block = max(2, (SHOW_WIDTH - width - 2) // CELL)  # two: a group label always has room
    rows = sorted(claims.claims.items())
    lines = []
    for block in column_blocks(columns, per_block):
        groups, versions = "", ""
        for i, column in enumerate(block):
            group, _, version = column.rpartition(" ")
            if i == 0 or block[i - 1].rpartition(" ")[0] != group:
                following = next((j for j in range(i + 1, len(block)) if block[j].rpartition(" ")[0] != group), None)
                room = (following - i) * CELL - 1 if following else SHOW_WIDTH
                groups = f"{groups:<{i * CELL}}" + (group if len(group) <= room else group[: room - 1] + "…")
            versions += f"{version[: CELL - 1]:<{CELL}}"
        lines += ["", f"{'claim':<{width}}  {groups}"[:SHOW_WIDTH], f"{'':<{width}}  " + versions.rstrip()]
        for claim_id, claim in rows:
            latest = store.latest_by_column(claim_id)
            cells = ""
            for column in block:
                entry = latest.get(column) if claim.executable else None
                cell = (
                    "-"
                    if claim.executable and entry is None
                    else SHORT[entry.record.verdict.value] + mark.get(entry.source.trust, "")
                    if entry
                    else ""
                )
                cells += f"{cell:<{CELL}}"
            text = cells.rstrip() if claim.executable else "attributed: no verdict"
            lines.append(f"{claim_id[:width]:<{width}}  {text}")
    lines.append("")
    for column in columns:
        entries = [e for claim_id in claims.claims for e in [store.latest_by_column(claim_id).get(column)] if e]
        dates = sorted({e.record.date for e in entries})
        origins = sorted({e.origin for e in entries})
        more = f" and {len(origins) - 2} more" if len(origins) > 2 else ""
        span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}" if dates else "no records"
        lines.append(f"{column}: {len(entries)} records, {span}, from {', '.join(origins[:2])}{more}"[:SHOW_WIDTH])
    lines.append("-: not run; *: submitted by hand, not reproduced by the project; +: the project's workflow, attested")
    lines.append("every record in full, with its evidence: torchclaims show CLAIM-ID")
    return lines


def cmd_sweep(args) -> ExitCode:
    import time

    from .history.release_sweep import CPU_INDEX, PeakDisk, Sweep, report, select
    from .history.releases import load_releases

    root = _root(args)
    releases = load_releases(root)
    unknown = sorted(set(args.series) - set(releases.series))
    if unknown:
        raise UsageError(f"unknown series {', '.join(unknown)}; sweep/releases.toml names {', '.join(releases.series)}")
    if args.matrix:  # one CI job per release (.github/workflows/sweep.yml)
        chosen = select(releases, args.series, args.versions)
        print(
            json.dumps(
                {
                    "include": [
                        {"series": r.series.name, "version": r.version, "backend": r.series.backend} for r in chosen
                    ]
                }
            )
        )
        return ExitCode.OK
    # 'auto' and 'pypi' are what the nox sessions' TORCHCLAIMS_TORCH_INDEX may say: for the sweep, the package index
    index = CPU_INDEX if args.torch_index == "cpu" else "" if args.torch_index in ("auto", "pypi") else args.torch_index
    timeout = config.seconds(
        os.environ.get("TORCHCLAIMS_TIMEOUT", "300") if args.timeout is None else args.timeout,
        "--timeout / TORCHCLAIMS_TIMEOUT",
    )
    work_dir = Path(args.work_dir).resolve()
    sweep = Sweep(
        root, releases, work_dir, root / "results", torch_index=index, timeout=timeout, workflow_run=args.workflow_run
    )
    started = time.perf_counter()
    work_dir.mkdir(parents=True, exist_ok=True)
    with PeakDisk(work_dir) as peak:
        measured = sweep.sweep(
            select(releases, args.series, args.versions), dry_run=args.dry_run, rerun=tuple(args.rerun)
        )
    print("\n".join(["", "sweep summary:"] + report(measured, time.perf_counter() - started, peak.peak)))
    return ExitCode.FAILED if any(m.status == "failed" for m in measured) else ExitCode.OK


def cmd_bundle(args) -> ExitCode:
    import time

    from .run.bundle import bundle

    started = time.perf_counter()
    packed = bundle(
        _root(args), Path(args.output).resolve(), args.python_version, allow_uncommitted=args.allow_uncommitted
    )
    print(
        f"packed {packed.path}: {len(packed.wheels)} wheels, {packed.size / 2**20:.1f} MB, "
        f"in {time.perf_counter() - started:.0f} s"
    )
    print(
        f"on the machine with torch: {packed.path / 'run.sh'} --backend <backend>  (PYTHON=... names its interpreter)"
    )
    return ExitCode.OK


def cmd_new(args) -> ExitCode:
    from .authoring.scaffold import scaffold

    for path in scaffold(_root(args), args.claim_id, topic=args.topic):
        print(f"created {path}")
    print(f"next: edit both files, then run `torchclaims verify {args.claim_id}` and `torchclaims lint`")
    return ExitCode.OK


def cmd_schema(args) -> ExitCode:
    text = json.dumps(claim_json_schema(), indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    return ExitCode.OK


def cmd_check(args) -> ExitCode:
    from .check.command import run_check
    from .check.model_errors import ModelError
    from .check.report import ERROR, FAILED, PASSED, UNVERIFIED

    codes = {
        FAILED: ExitCode.FAILED,
        ERROR: ExitCode.CHECK_ERROR,
        UNVERIFIED: ExitCode.CHECK_UNVERIFIED,
        PASSED: ExitCode.OK,
    }
    try:
        return codes[run_check(args)]
    except ModelError as exc:  # the model's own error: one line naming its frame, no evidence either way
        print(f"torchclaims: {exc}", file=sys.stderr)
        return ExitCode.CHECK_ERROR


def cmd_doctor(args) -> ExitCode:
    from .run.doctor import run_doctor

    return ExitCode.OK if run_doctor(args.backend or os.environ.get(BACKEND_ENV_VAR)) else ExitCode.FAILED


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="torchclaims", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=".", help="project root holding claims/ and gallery/ (default: .)")
    sub = top.add_subparsers(dest="command", required=True)
    add = lambda name, help: sub.add_parser(name, help=help, parents=[common])  # noqa: E731

    verify = add("verify", "run claims on a backend and write a results file")
    verify.add_argument("claims", nargs="*", help="claim ids (default: every executable claim)")
    verify.add_argument(
        "--backend", help=f"cpu, cuda, rocm, mps, xpu, xla, neuron, tpu or auto (default: ${BACKEND_ENV_VAR} or cpu)"
    )
    verify.add_argument("--timeout", help="seconds per claim (default: $TORCHCLAIMS_TIMEOUT or 300)")
    verify.add_argument("--jobs", default=os.cpu_count() or 1, help="claims run in parallel")
    verify.add_argument("--force", action="store_true", help="re-run claims whose records are current")
    verify.add_argument("--output", help="results file or folder (default: _build/results/)")
    verify.add_argument("--records-dir", help="where per-claim records are cached (default: _build/records)")
    verify.add_argument("--label", default="", help="names the machine or runner in the results file")
    verify.add_argument(
        "--workflow-run",
        action="store_true",
        help="state the GitHub Actions run (repository, run, commit, runner) as the file's provenance",
    )
    verify.set_defaults(run=cmd_verify)

    lint = add("lint", "check claim records and scripts; report every problem")
    lint.set_defaults(run=cmd_lint)

    diff = add(
        "diff", "list claims whose verdict moved, and coverage-table cells that changed, between two results files"
    )
    diff.add_argument("old")
    diff.add_argument("new")
    diff.add_argument("--no-gate", action="store_true", help="exit 0 even when a claim that held no longer does")
    diff.add_argument(
        "--reproduce",
        action="store_true",
        help="exit 1 when any claim in both files has another verdict in NEW (files of one backend)",
    )
    diff.add_argument("--cells", action="store_true", help="list every changed coverage-table cell, with its detail")
    diff.set_defaults(run=cmd_diff)

    merge = add("merge", "check results files and add them to results/")
    merge.add_argument("files", nargs="+")
    merge.add_argument("--into", default="results")
    merge.add_argument(
        "--verify-attestation",
        metavar="OWNER/REPO",
        help="require a GitHub artifact attestation from that repository's accelerator workflow (needs gh)",
    )
    merge.set_defaults(run=cmd_merge)

    show = add("show", "print the claims x backends table of the committed results, or every record of some claims")
    show.add_argument("claims", nargs="*", help="claim ids: print each record in full (also those of local runs)")
    show.add_argument("--results-dir", default="results")
    show.set_defaults(run=cmd_show)

    sweep = add(
        "sweep", "run every claim on each release of sweep/releases.toml, one environment at a time, into results/"
    )
    sweep.add_argument(
        "--series", action="append", default=[], help="a series of sweep/releases.toml (default: every default series)"
    )
    sweep.add_argument("--versions", nargs="+", default=[], help="only these releases")
    sweep.add_argument(
        "--work-dir", default=".sweep", help="the environment, pip's temporary files and record cache (default: .sweep)"
    )
    sweep.add_argument(
        "--torch-index",
        default=os.environ.get("TORCHCLAIMS_TORCH_INDEX", ""),
        help="extra index for torch on cpu series; 'cpu' names the CPU builds (default: the package index's builds)",
    )
    sweep.add_argument(
        "--timeout", help="seconds per claim (default: $TORCHCLAIMS_TIMEOUT or 300; a series may set its own)"
    )
    sweep.add_argument(
        "--rerun",
        nargs="+",
        default=[],
        metavar="CLAIM",
        help="also run these claims again in every release, although their records are current",
    )
    sweep.add_argument("--dry-run", action="store_true", help="say what would run; install nothing")
    sweep.add_argument(
        "--matrix",
        action="store_true",
        help="print the selected releases as a GitHub Actions matrix (JSON); run nothing",
    )
    sweep.add_argument(
        "--workflow-run",
        action="store_true",
        help="inside a GitHub Actions job: each results file states the run as its provenance",
    )
    sweep.set_defaults(run=cmd_sweep)

    pack = add(
        "bundle",
        "pack what verify needs (wheels, claims/, gallery/, run.sh) into a folder "
        "for a machine with torch and no package index",
    )
    pack.add_argument("output", help="the folder to create")
    pack.add_argument(
        "--allow-uncommitted",
        action="store_true",
        help="pack uncommitted changes too (their runs' records are rejected on merge: a trial run only)",
    )
    pack.add_argument(
        "--python-version",
        default=f"{sys.version_info.major}.{sys.version_info.minor}",
        help="CPython of the target machine (default: this one's)",
    )
    pack.set_defaults(run=cmd_bundle)

    new = add("new", "scaffold a claim record and its verification script")
    new.add_argument("claim_id")
    new.add_argument("--topic", default="device-switch")
    new.set_defaults(run=cmd_new)

    check = add(
        "check",
        "look a model's ATen operators up in the measured tables and defect claims; with --backend, run its step there",
    )
    check.add_argument(
        "target", help="path/to/file.py:function or package.module:function returning (model, inputs[, loss_fn])"
    )
    check.add_argument(
        "--target-backend",
        action="append",
        default=[],
        metavar="NAME",
        help="exit 1 only for known-wrong operators on this backend (repeatable; default: every backend with tables)",
    )
    check.add_argument(
        "--accept",
        action="append",
        default=[],
        metavar="ROW_OR_CLAIM",
        help="a coverage row or defect claim id to cite without judging (a defect the model cannot hit; repeatable)",
    )
    check.add_argument(
        "--backend",
        help="also run the step on this backend against the CPU (cpu, xla, cuda... or auto); "
        "exit 1 when parity fails, 4 when the run errors, 5 when the backend is not usable here",
    )
    check.add_argument("--rtol", type=float, default=1e-4, help="parity tolerance of the backend run (default 1e-4)")
    check.add_argument("--atol", type=float, default=1e-5, help="parity tolerance of the backend run (default 1e-5)")
    check.add_argument("--timeout", type=float, default=600.0, help="seconds the backend run may take (default 600)")
    check.add_argument(
        "--output", default="_build/check", help="results file or folder of the backend run (default: _build/check/)"
    )
    check.add_argument("--json", metavar="PATH", help="write the report as JSON ('-': standard output)")
    check.add_argument("--html", metavar="PATH", help="write the report as one self-contained HTML page")
    check.add_argument(
        "--sarif",
        metavar="PATH",
        help="write the risky findings as SARIF 2.1.0 (code scanning), one per operator x backend",
    )
    check.add_argument(
        "--site-url",
        default=None,
        help=f"address of the site the evidence links point to (default: ${config.SITE_URL_VAR}, "
        "else paths from the site's root)",
    )
    check.set_defaults(run=cmd_check)

    doctor = add(
        "doctor",
        "run a device smoke outside the sandbox, inside it, and with each of its parts left out: which part "
        "keeps the device from working here",
    )
    doctor.add_argument("--backend", help=f"the backend to examine (default: ${BACKEND_ENV_VAR})")
    doctor.set_defaults(run=cmd_doctor)

    schema = add("schema", "print the JSON Schema of claim records")
    schema.add_argument("--output")
    schema.set_defaults(run=cmd_schema)
    return top


def main(argv: list[str] | None = None) -> int:
    with guarded():  # every console line: data never drives the terminal (text_safety)
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except KeyboardInterrupt as exc:  # the runner has ended every process it started
        print(f"torchclaims: {exc or 'interrupted'}", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except UsageError as exc:
        print(f"torchclaims: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    except InvalidFileError as exc:
        print(f"torchclaims: invalid input:\n{exc}", file=sys.stderr)
        return ExitCode.INVALID_INPUT
    except TorchclaimsError as exc:
        print(f"torchclaims: {exc}", file=sys.stderr)
        return ExitCode.FAILED
