"""``torchclaims attest``: verify every results file's attestation with gh and write the answers for a build."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..project import RESULTS
from . import ExitCode
from .common import project_root, report


def register(add) -> None:
    attest = add(
        "attest",
        "verify the attestation of every results file with gh and write the answers for a site build "
        "without a token (TORCHCLAIMS_ATTESTATIONS)",
    )
    attest.add_argument("repository", metavar="OWNER/REPO", help="the repository whose accelerator workflow signs")
    attest.add_argument("--output", required=True, help="the answers file; outside the project, which anyone can edit")
    attest.add_argument("--results-dir", default=RESULTS)
    attest.set_defaults(run=run)


def run(args) -> ExitCode:
    from ..evidence.attestation import verifier_from
    from ..evidence.attestation_answers import inside, verify_all, write_answers

    root = project_root(args)
    results_dir = root / args.results_dir
    if not results_dir.is_dir():
        raise UsageError(f"results directory {results_dir} does not exist (use --results-dir)")
    output = Path(args.output)
    if inside(output, root):
        raise UsageError(f"--output {output} lies inside the project: a build does not read answers from there")
    repository = verifier_from(args.repository, "OWNER/REPO").repository  # checks the name and that gh is here
    answers, problems = verify_all(results_dir, repository)
    write_answers(output, answers)
    report(problems, "not attested")
    print(f"{len(answers)} attestation(s) verified for {repository}, written to {output}")
    return ExitCode.INVALID_INPUT if problems else ExitCode.OK
