"""``torchclaims show``: the claims x backends table of the committed results, or every record of some claims."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..claims import load_claims
from ..errors import InvalidFileError, UsageError
from ..evidence.admission import Admission
from ..evidence.attestation_answers import ANSWERS_VAR, REPOSITORY_VAR, build_verifier
from ..evidence.judging import read_own_record
from ..project import RESULTS, Folders
from . import ExitCode
from .common import project_root, report
from .show_table import matrix_lines


def register(add) -> None:
    show = add("show", "print the claims x backends table of the committed results, or every record of some claims")
    show.add_argument("claims", nargs="*", help="claim ids: print each record in full (also those of local runs)")
    show.add_argument("--results-dir", default=RESULTS)
    show.set_defaults(run=run)


def _local_records(records_root: Path) -> list:
    """Records this machine's runs left in its records folder (every backend)."""
    records = []
    for path in sorted(records_root.glob("*/*.json")):
        try:
            records.append(read_own_record(path))
        except InvalidFileError as exc:
            print(f"skipping: {exc}", file=sys.stderr)
    return records


def run(args) -> ExitCode:
    from ..evidence.store import THIS_MACHINE, Entry, load_store
    from ..verify import summary

    root = project_root(args)
    results_dir = root / args.results_dir
    if not results_dir.is_dir():
        raise UsageError(f"results directory {results_dir} does not exist (use --results-dir)")
    claims = load_claims(Folders(root).claims)
    report(claims.problems, "skipped")
    # Attested only when verified now, or by the answers of a verification step.
    verifier = build_verifier(os.environ.get(REPOSITORY_VAR), os.environ.get(ANSWERS_VAR), root)
    store = load_store({}, None, results_dir, admission=Admission.for_project(root, claims.claims), verifier=verifier)
    report(store.problems)
    if args.claims:
        unknown = sorted(set(args.claims) - set(claims.claims))
        if unknown:
            raise UsageError(f"unknown claim id(s): {', '.join(unknown)}")
        for record in _local_records(Folders(root).records):
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
