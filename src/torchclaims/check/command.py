"""``torchclaims check TARGET``: the static report, the backend run when asked, and the outputs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..backends import resolve_backend
from ..fileio import write_if_changed
from . import check_target, default_root
from .device_run import run_on_backend
from .html_report import render
from .sarif import sarif
from .terminal import summary


def run_check(args) -> str:
    """Print the summary, write the outputs asked for; the report's result (see :mod:`.report`)."""
    if args.backend and args.backend != "auto":
        resolve_backend(args.backend)  # an unknown name is a usage error, not a failed run
    root = default_root(None if args.root == "." else args.root)
    targets = set(args.target_backend) or None
    report = check_target(args.target, root=root, targets=targets, site_url=args.site_url, accept=args.accept)
    if args.backend:
        report.measured.extend(
            run_on_backend(
                args.target,
                args.backend,
                rtol=args.rtol,
                atol=args.atol,
                timeout=args.timeout,
                output=Path(args.output),
            )
        )
    print(summary(report), file=sys.stderr if args.json == "-" else sys.stdout)  # stdout is the JSON's then
    if args.json:
        text = json.dumps(report.as_dict(), indent=1, sort_keys=True) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            write_if_changed(Path(args.json), text)
    if args.sarif:
        write_if_changed(Path(args.sarif), json.dumps(sarif(report), indent=1) + "\n")
        print(f"wrote {args.sarif}", file=sys.stderr if args.json == "-" else sys.stdout)
    if args.html:
        write_if_changed(Path(args.html), render(report))
        print(f"wrote {args.html}")
    return report.result
