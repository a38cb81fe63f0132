"""Command line: verify, lint, diff, merge, show, new, schema.

Works in the current environment with no site build. ``verify`` runs the same
scripts through the same isolated runner as the Sphinx build. Usage errors are
caught in one place (``main``) and printed to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from enum import IntEnum
from pathlib import Path

from .backends import BACKEND_ENV_VAR, requested_backend
from .changes import describe, only_in, verdict_changes
from .claims import claim_json_schema, load_claims
from .errors import InvalidFileError, TorchclaimsError, UsageError
from .records import Verdict, read_record
from .results import build_results, default_name, export_figures, figures_dir, read_results, superseded_by, write_results


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # a claim errored, lint found problems, or diff found a regression
    USAGE_ERROR = 2
    INVALID_INPUT = 3  # a results file or record failed validation


def _root(args) -> Path:
    return Path(args.root).resolve()


def cmd_verify(args) -> ExitCode:
    from .execution import Settings, verify

    root = _root(args)
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
        backend=requested_backend(args.backend),
        timeout=args.timeout,
        parallel=args.jobs,
        records_dir=Path(args.records_dir).resolve() if args.records_dir else None,
        force=args.force,
    )
    outcome = verify(selected, settings, log=print, warn=lambda m: print(f"warning: {m}", file=sys.stderr))
    records = [outcome.records[c.id] for c in selected if c.id in outcome.records]
    results = build_results(records, outcome.probe.environment, label=args.label)
    output = Path(args.output) if args.output else root / "_build" / "results"
    path = output / default_name(results) if output.suffix != ".json" else output
    records_dir = settings.records_root() / outcome.probe.backend
    results = results.model_copy(update={"records": export_figures(results.records, records_dir, path)})
    write_results(path, results)
    if output.suffix != ".json":
        for old in superseded_by(results, output, keep=path):
            old.unlink()
            shutil.rmtree(figures_dir(old), ignore_errors=True)
            print(f"replaced {old} (same environment)")
    print_table(records)
    print(f"results file: {path}")
    errored = [r.claim_id for r in records if r.verdict is Verdict.ERROR]
    if errored:
        print(f"{len(errored)} claim(s) could not be verified (error): {', '.join(errored)}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


def print_table(records) -> None:
    width = max([len(r.claim_id) for r in records] + [5])
    print(f"\n{'claim':<{width}}  {'verdict':<10}  {'time':>7}  reason")
    for r in sorted(records, key=lambda r: r.claim_id):
        print(f"{r.claim_id:<{width}}  {r.verdict.value:<10}  {r.duration_s:>6.1f}s  {r.reason[:100]}")
    counts = {v.value: sum(r.verdict is v for r in records) for v in Verdict}
    print(", ".join(f"{n} {v}" for v, n in counts.items()))


def cmd_lint(args) -> ExitCode:
    from .lint import lint

    problems = lint(_root(args))
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) found", file=sys.stderr)
        return ExitCode.FAILED
    print("lint: no problems found")
    return ExitCode.OK


def cmd_diff(args) -> ExitCode:
    old, new = read_results(Path(args.old)), read_results(Path(args.new))
    before, after = {r.claim_id: r for r in old.records}, {r.claim_id: r for r in new.records}
    changes = verdict_changes(before, after)
    print(f"old: {args.old} ({old.backend}, torch {old.environment.torch}, {old.created:%Y-%m-%d})")
    print(f"new: {args.new} ({new.backend}, torch {new.environment.torch}, {new.created:%Y-%m-%d})")
    if old.backend != new.backend:
        print(f"note: the files come from different backends ({old.backend} and {new.backend})")
    print(f"versions: {describe(old.environment, new.environment)}")
    for label, ids in (("only in old", only_in(before, after)), ("only in new", only_in(after, before))):
        if ids:
            print(f"{label} (not compared): {', '.join(ids)}")
    print(f"{len(set(before) & set(after))} claims compared, {len(changes)} changed verdict")
    for change in changes:
        mark = "REGRESSION " if change.regression else ""
        print(f"{mark}{change.claim_id}: {change.old.verdict.value} -> {change.new.verdict.value}")
        if change.new is not None and change.new.reason:
            print(f"    now: {change.new.reason[:200]}")
    regressions = [c for c in changes if c.regression]
    return ExitCode.FAILED if regressions and not args.no_gate else ExitCode.OK


def cmd_merge(args) -> ExitCode:
    target = Path(args.into)
    target.mkdir(parents=True, exist_ok=True)
    status = ExitCode.OK
    for name in args.files:
        path = Path(name)
        try:
            results = read_results(path)
        except InvalidFileError as exc:
            print(f"rejected: {exc}", file=sys.stderr)
            status = ExitCode.INVALID_INPUT
            continue
        destination = target / default_name(results)
        if destination.exists() and destination.read_bytes() != path.read_bytes():
            print(f"rejected: {path}: {destination} exists with other content; rename one of them", file=sys.stderr)
            status = ExitCode.INVALID_INPUT
            continue
        shutil.copyfile(path, destination)
        for record in results.records:
            for figure in record.figures:  # copied if present; a missing one is simply not shown
                if (path.parent / figure).is_file():
                    (target / figure).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path.parent / figure, target / figure)
        print(f"merged {path} -> {destination} ({results.backend}, {len(results.records)} records)")
    return status


def _local_records(records_root: Path) -> list:
    """Records this machine's runs left in _build/records (every backend)."""
    records = []
    for path in sorted(records_root.glob("*/*.json")):
        try:
            records.append(read_record(path))
        except InvalidFileError as exc:
            print(f"skipping: {exc}", file=sys.stderr)
    return records


def cmd_show(args) -> ExitCode:
    from .store import Entry, load_store
    from .verify import summary

    root = _root(args)
    store = load_store({}, None, root / args.results_dir)
    for problem in store.problems:
        print(f"rejected: {problem}", file=sys.stderr)
    claims = load_claims(root / "claims")
    if args.claims:
        unknown = sorted(set(args.claims) - set(claims.claims))
        if unknown:
            raise UsageError(f"unknown claim id(s): {', '.join(unknown)}")
        for record in _local_records(root / "_build" / "records"):
            store.add(Entry(record, "this machine"))
        for claim_id in args.claims:
            entries = store.history(claim_id)
            print(f"{claim_id}: {len(entries)} record(s)" + ("" if entries else " (not run)"))
            for entry in entries:
                print(f"\n[{entry.origin}]\n{summary(entry.record)}")
        return ExitCode.OK
    columns = store.columns()
    width = max([len(c) for c in claims.claims] + [5])
    print(f"{'claim':<{width}}  " + "  ".join(f"{c:<28}" for c in columns))
    for claim_id, claim in sorted(claims.claims.items()):
        latest = store.latest_by_column(claim_id)
        cells = []
        for column in columns:
            entry = latest.get(column)
            cell = "attributed" if not claim.executable else f"{entry.record.verdict.value} {entry.record.date}" if entry else "not run"
            cells.append(f"{cell:<28}")
        print(f"{claim_id:<{width}}  " + "  ".join(cells))
    return ExitCode.INVALID_INPUT if store.problems else ExitCode.OK


def cmd_new(args) -> ExitCode:
    from .scaffold import scaffold

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


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="torchclaims", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=".", help="project root holding claims/ and gallery/ (default: .)")
    sub = top.add_subparsers(dest="command", required=True)
    add = lambda name, help: sub.add_parser(name, help=help, parents=[common])  # noqa: E731

    verify = add("verify", "run claims on a backend and write a results file")
    verify.add_argument("claims", nargs="*", help="claim ids (default: every executable claim)")
    verify.add_argument("--backend", help=f"cpu, cuda, rocm, mps, xpu, xla, neuron, tpu or auto (default: ${BACKEND_ENV_VAR} or cpu)")
    verify.add_argument("--timeout", type=float, default=float(os.environ.get("TORCHCLAIMS_TIMEOUT", 300)), help="seconds per claim")
    verify.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="claims run in parallel")
    verify.add_argument("--force", action="store_true", help="re-run claims whose records are current")
    verify.add_argument("--output", help="results file or folder (default: _build/results/)")
    verify.add_argument("--records-dir", help="where per-claim records are cached (default: _build/records)")
    verify.add_argument("--label", default="", help="names the machine or runner in the results file")
    verify.set_defaults(run=cmd_verify)

    lint = add("lint", "check claim records and scripts; report every problem")
    lint.set_defaults(run=cmd_lint)

    diff = add("diff", "list claims whose verdict moved between two results files")
    diff.add_argument("old")
    diff.add_argument("new")
    diff.add_argument("--no-gate", action="store_true", help="exit 0 even when a claim that held no longer does")
    diff.set_defaults(run=cmd_diff)

    merge = add("merge", "validate results files and add them to results/")
    merge.add_argument("files", nargs="+")
    merge.add_argument("--into", default="results")
    merge.set_defaults(run=cmd_merge)

    show = add("show", "print the claims x backends table of the committed results, or every record of some claims")
    show.add_argument("claims", nargs="*", help="claim ids: print each record in full (also those of local runs)")
    show.add_argument("--results-dir", default="results")
    show.set_defaults(run=cmd_show)

    new = add("new", "scaffold a claim record and its verification script")
    new.add_argument("claim_id")
    new.add_argument("--topic", default="device-switch")
    new.set_defaults(run=cmd_new)

    schema = add("schema", "print the JSON Schema of claim records")
    schema.add_argument("--output")
    schema.set_defaults(run=cmd_schema)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except UsageError as exc:
        print(f"torchclaims: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    except InvalidFileError as exc:
        print(f"torchclaims: invalid input:\n{exc}", file=sys.stderr)
        return ExitCode.INVALID_INPUT
    except TorchclaimsError as exc:
        print(f"torchclaims: {exc}", file=sys.stderr)
        return ExitCode.FAILED
