"""``torchclaims sweep``: every claim on each release of sweep/releases.toml, one environment at a time."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import UsageError
from ..project import DEFAULTS, TIMEOUT_VAR, Folders, claim_timeout
from . import ExitCode
from .common import project_root


def register(add) -> None:
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
        "--timeout",
        help=f"seconds per claim (default: ${TIMEOUT_VAR} or {DEFAULTS.timeout_s:g}; a series may set its own)",
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
    sweep.set_defaults(run=run)


def run(args) -> ExitCode:
    import time

    from ..history.name_sweep import probe_after_claims, probe_missing
    from ..history.release_sweep import CPU_INDEX, PeakDisk, Sweep
    from ..history.releases import load_releases
    from ..history.sweep_plan import select
    from ..history.sweep_report import report

    root = project_root(args)
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
    timeout = claim_timeout(args.timeout)
    work_dir = Path(args.work_dir).resolve()
    sweep = Sweep(
        root,
        releases,
        work_dir,
        Folders(root).results,
        torch_index=index,
        timeout=timeout,
        workflow_run=args.workflow_run,
        in_environment=probe_after_claims,
    )
    started = time.perf_counter()
    work_dir.mkdir(parents=True, exist_ok=True)
    selected = select(releases, args.series, args.versions)
    with PeakDisk(work_dir) as peak:
        measured = sweep.sweep(selected, dry_run=args.dry_run, rerun=tuple(args.rerun))
        # a release whose claims run is probed in their environment (probe_after_claims); the rest in one of its own
        in_own = {m.release.name for m in measured if m.status in ("ran", "would run")}
        measured += probe_missing(sweep, selected, dry_run=args.dry_run, in_own=frozenset(in_own))
    print("\n".join(["", "sweep summary:"] + report(measured, time.perf_counter() - started, peak.peak)))
    return ExitCode.FAILED if any(m.status == "failed" for m in measured) else ExitCode.OK
