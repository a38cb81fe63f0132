"""Writing results files into a folder: a new run, or a file merged from elsewhere.

Both hold the folder's lock while they read, merge and write, so two runs into
one folder take turns. A run merges by claim: the records of an earlier file of
the same run configuration survive for every claim the new run did not
re-run, so verifying one claim never drops the others. File names come from
the data and are confined to the folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from ..errors import InvalidFileError, Problem, UsageError
from ..fileio import confined, locked
from .admission import Admission
from .attestation import verifier_from
from .results import (
    ResultsFile,
    destination,
    export_figures,
    figures_dir,
    merge_by_claim,
    read_results,
    same_run_configuration,
    superseded_by,
    write_results,
)
from .store import column_label


def write_run(
    results: ResultsFile, output: Path, records_dir: Path, claims: set[str], log: Callable[[str], None] = print
) -> Path:
    """Write a run's results file into ``output`` (a folder, or a ``.json`` path),
    keeping the earlier records of the other ``claims`` (executable claim ids)."""
    explicit = output.suffix == ".json"
    folder = output.parent if explicit else output
    with locked(folder):
        path = output.resolve() if explicit else destination(folder, results)
        results = results.model_copy(update={"records": export_figures(results.records, records_dir, path)})
        older = [] if explicit else superseded_by(results, folder, keep=path)
        if path.exists():
            older.append((path, _same_configuration(path, results)))
        merged, kept = merge_by_claim(results, path, older, claims)
        write_results(path, merged)
        for old, _ in older:
            if old.resolve() != path:
                old.unlink(missing_ok=True)
                shutil.rmtree(figures_dir(old), ignore_errors=True)
                log(f"replaced {old} (same environment)")
        if kept:
            log(f"kept the earlier records of {len(kept)} claim(s) this run did not re-run")
    return path


def _same_configuration(path: Path, results: ResultsFile) -> ResultsFile:
    """The file already at ``path``, if it may be merged into; UsageError otherwise."""
    try:
        existing = read_results(path)
    except InvalidFileError:
        raise UsageError(
            f"{path} exists and is not a valid results file; it was left as it is: choose another --output"
        ) from None
    if not same_run_configuration(existing, results):
        raise UsageError(
            f"{path} holds results of another environment, or made another way; "
            "it was left as it is: choose another --output"
        )
    return existing


def merge_file(path: Path, target: Path, admission: Admission, attest_repository: str | None = None) -> str:
    """Check a results file and copy it (and its figures) into ``target``.

    InvalidFileError lists every problem; nothing is copied then.
    """
    verifier = verifier_from(attest_repository, "--verify-attestation")
    results = read_results(path)
    problems = admission.check(path, results).problems
    attestation = None
    if verifier and not problems:
        attestation, problems = verifier.check(path, results.provenance)
        if attestation is None and not problems:
            problems = [
                Problem(
                    path, "provenance.kind", "the file says it was made by hand: there is no workflow run to attest"
                )
            ]
    if problems:
        raise InvalidFileError(problems)
    with locked(target):
        copy = destination(target, results)
        if copy.exists() and copy.read_bytes() != path.read_bytes():
            raise InvalidFileError([Problem(path, "", f"{copy} exists with other content; rename one of them")])
        if copy != path.resolve():
            shutil.copyfile(path, copy)
        for record in results.records:
            for figure in record.figures:  # copied if present; a missing one is simply not shown
                source, figure_copy = confined(path.parent, figure), confined(target, figure)
                if source.is_file() and source != figure_copy:
                    figure_copy.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, figure_copy)
        notes = overlaps(results, target, copy)
    # Nothing is written for the attestation: the site build verifies it again (TORCHCLAIMS_VERIFY_ATTESTATIONS).
    how = f"attestation verified, run {attestation.run_id}" if attestation else results.provenance.describe()
    return "\n".join([f"merged {path} -> {copy} ({results.backend}, {len(results.records)} records; {how})", *notes])


def overlaps(results: ResultsFile, folder: Path, keep: Path) -> list[str]:
    """One note per file in ``folder`` that the merged file duplicates (the same run
    configuration) or shadows (the same matrix column: the newer record of a claim is shown)."""
    notes = []
    column = column_label(results.environment)
    mine = {r.claim_id for r in results.records}
    for path in sorted(folder.glob("*.json")):
        if path.resolve() == keep.resolve():
            continue
        try:
            other = read_results(path)
        except InvalidFileError:
            continue  # the site reports it
        shared = len(mine & {r.claim_id for r in other.records})
        claims = f"{shared} claim{'s' if shared != 1 else ''}"
        if same_run_configuration(other, results):
            notes.append(f"note: duplicates {path.name}: the same environment, provenance and label ({claims} in both)")
        elif column_label(other.environment) == column and shared:
            notes.append(
                f"note: shadows {path.name} in the column {column!r}: "
                f"for the {claims} in both, the site shows the newer record"
            )
    return notes
