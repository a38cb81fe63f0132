"""``torchclaims verify``: run claims on a backend, the same way the site build does, and write a results file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import config
from ..backends import BACKEND_ENV_VAR, requested_backend, resolve_backend
from ..claims import load_claims
from ..errors import UsageError
from ..evidence.provenance import from_github_actions
from ..evidence.records import Verdict
from ..evidence.results import build_results
from ..project import DEFAULTS, RECORDS_DIR, RUN_RESULTS_DIR, TIMEOUT_VAR, Folders, claim_timeout
from . import ExitCode
from .common import project_root


def register(add) -> None:
    verify = add("verify", "run claims on a backend and write a results file")
    verify.add_argument("claims", nargs="*", help="claim ids (default: every executable claim)")
    verify.add_argument(
        "--backend", help=f"cpu, cuda, rocm, mps, xpu, xla, neuron, tpu or auto (default: ${BACKEND_ENV_VAR} or cpu)"
    )
    verify.add_argument("--timeout", help=f"seconds per claim (default: ${TIMEOUT_VAR} or {DEFAULTS.timeout_s:g})")
    verify.add_argument("--jobs", default=os.cpu_count() or 1, help="claims run in parallel")
    verify.add_argument("--force", action="store_true", help="re-run claims whose records are current")
    verify.add_argument("--output", help=f"results file or folder (default: {RUN_RESULTS_DIR}/)")
    verify.add_argument("--records-dir", help=f"where per-claim records are cached (default: {RECORDS_DIR})")
    verify.add_argument("--label", default="", help="names the machine or runner in the results file")
    verify.add_argument(
        "--workflow-run",
        action="store_true",
        help="state the GitHub Actions run (repository, run, commit, runner) as the file's provenance",
    )
    verify.set_defaults(run=run)


def run(args) -> ExitCode:
    from ..evidence.output import write_run
    from ..run.execution import Settings, verify
    from ..run.figures_kept import NO_FIGURES, FiguresKept
    from ..run.progress import console

    root = project_root(args)
    folders = Folders(root)
    timeout = claim_timeout(args.timeout)
    records_dir = config.directory(args.records_dir, "--records-dir") if args.records_dir else None
    jobs = config.count(args.jobs, "--jobs")
    provenance = from_github_actions() if args.workflow_run else None
    backend = requested_backend(args.backend)
    if backend != "auto":
        resolve_backend(backend)  # an unknown name is a usage error here, before any process starts
    claims = load_claims(folders.claims)
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
        results_dir=folders.results,  # their durations order a first run (scheduling.py)
    )
    figures = FiguresKept(settings)
    try:
        outcome = verify(
            selected,
            settings,
            extra_reasons=figures.reasons,
            log=print,
            warn=lambda m: print(f"warning: {m}", file=sys.stderr),
            progress=console(),
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
    output = Path(args.output) if args.output else folders.run_results
    executable = {c.id for c in claims.executable()}
    path = write_run(results, output, settings.records_root() / outcome.probe.backend, executable, log=print)
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
