"""Backend mode: the step in the project's isolated runner, on a backend, into a results file.

The runner runs :mod:`.step_script` as it runs a claim script (its own
process, a timeout, an error record if it crashes or hangs), and the record
goes into an ordinary results file (``torchclaims-results``), so that a team
can keep its own and compare two of them with ``torchclaims diff``.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from ..errors import TorchclaimsError, UsageError
from ..evidence.records import ResultRecord, Verdict
from ..evidence.results import build_results, default_name, write_results
from ..site_addresses import slug
from .isolated import absolute, run_step_script
from .report import BackendRun

STEP_SCRIPT = Path(__file__).resolve().with_name("step_script.py")


def claim_id_for(target: str) -> str:
    """The record's claim id: ``check-`` and the target function's name."""
    return "check-" + (slug(target.rpartition(":")[2]) or "model")


def run_on_backend(target: str, backend: str, *, rtol: float, atol: float, timeout: float, output: Path) -> BackendRun:
    """Run the step on ``backend``; write the results file under ``output`` (a folder, or a .json file).

    A backend not usable here gives an ``unverified`` record, as the build does, and a runner that broke
    before any record (its probe crashed or hung) an error without one: the static report stands in both."""
    try:
        record = _record(target, backend, rtol=rtol, atol=atol, timeout=timeout)
    except UsageError:
        raise
    except TorchclaimsError as exc:
        return BackendRun(backend, Verdict.ERROR.value, "", [], str(exc))
    results = build_results([record], record.environment, label=f"torchclaims check {target}")
    path = output if output.suffix == ".json" else output / default_name(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_results(path, results)
    checks = [{"name": c.name, "outcome": c.outcome.value, "detail": c.detail} for c in record.checks]
    # the reason and the log's end explain an error or an unverified run
    return BackendRun(
        record.environment.backend, record.verdict.value, str(path), checks, record.reason, record.log_tail
    )


def _record(target: str, backend: str, *, rtol: float, atol: float, timeout: float) -> ResultRecord:
    """The step's record from the isolated runner; unverified, without running, where the backend is not usable."""
    from ..run.runner import Runner

    claim_id = claim_id_for(target)
    env = {
        "TORCHCLAIMS_CHECK_TARGET": absolute(target),
        "TORCHCLAIMS_CHECK_CLAIM": claim_id,
        "TORCHCLAIMS_CHECK_RTOL": repr(rtol),
        "TORCHCLAIMS_CHECK_ATOL": repr(atol),
        "TORCHCLAIMS_CHECK_CWD": os.getcwd(),
    }
    with Runner(backend, parallel=1, log=functools.partial(print, file=sys.stderr)) as runner:  # stdout: the JSON
        return run_step_script(runner, STEP_SCRIPT, claim_id, target, env, timeout, device=True)
