"""Backend mode: the step in the project's isolated runner, on a backend, into a results file.

The runner runs :mod:`.step_script` as it runs a claim script (its own
process, a timeout, an error record if it crashes or hangs), and the record
goes into an ordinary results file (``torchclaims-results``), so that a team
can keep its own and compare two of them with ``torchclaims diff``.

Where the backend's descriptor names a switch that forbids its CPU fallback
for eager operators (``Backend.fallback_switch``) and the environment leaves
the fallback allowed, the step runs a second time with the switch set: the
variable is read when the backend loads, so it is set before the runner's
fork server starts, and the run's record goes into a results file of its own.
"""

from __future__ import annotations

import functools
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from ..backends import FallbackSwitch, all_backends
from ..errors import TorchclaimsError, UsageError
from ..evidence.records import ResultRecord, Verdict
from ..evidence.results import build_results, default_name, write_results
from ..site_addresses import slug
from . import device_evidence
from .isolated import absolute, run_step_script
from .report import BackendRun

STEP_SCRIPT = Path(__file__).resolve().with_name("step_script.py")


def claim_id_for(target: str) -> str:
    """The record's claim id: ``check-`` and the target function's name."""
    return "check-" + (slug(target.rpartition(":")[2]) or "model")


def run_on_backend(
    target: str, backend: str, *, rtol: float, atol: float, timeout: float, output: Path
) -> list[BackendRun]:
    """Run the step on ``backend``, and again with its CPU fallback forbidden where it has such a switch; write
    each record's results file under ``output`` (a folder, or a .json file: the second run's name ends
    ``-fallback-forbidden``).

    A backend not usable here gives an ``unverified`` record, as the build does, and a runner that broke
    before any record (its probe crashed or hung) an error without one: the static report stands in both."""
    options = {"rtol": rtol, "atol": atol, "timeout": timeout}
    try:
        record = _record(target, backend, claim_id_for(target), **options)
    except UsageError:
        raise
    except TorchclaimsError as exc:
        return [BackendRun(backend, Verdict.ERROR.value, "", [], str(exc))]
    switch = getattr(all_backends().get(record.environment.backend), "fallback_switch", None)
    forbids = switch is not None and switch.eager and record.verdict is not Verdict.UNVERIFIED
    mode = f"CPU fallback forbidden: {switch}" if forbids else ""
    if not forbids or switch.in_force(os.environ):  # nothing to forbid, or the run above had it forbidden already
        return [_run(record, _write(record, target, output), mode)]
    first = _run(record, _write(record, target, output), "")
    try:
        with _set(switch):
            forbidden = _record(target, backend, claim_id_for(target) + "-fallback-forbidden", **options)
    except TorchclaimsError as exc:
        return [first, BackendRun(backend, Verdict.ERROR.value, "", [], str(exc), mode=mode, added=True)]
    forbidden_path = _write(forbidden, target, output, suffix="-fallback-forbidden")
    return [first, _run(forbidden, forbidden_path, mode, added=True)]


def _run(record: ResultRecord, path: Path, mode: str, added: bool = False) -> BackendRun:
    """The run as the report shows it: the record's checks, and what its measurements show."""
    checks = [{"name": c.name, "outcome": c.outcome.value, "detail": c.detail} for c in record.checks]
    differences = device_evidence.differences(record)
    # the reason and the log's end explain an error or an unverified run
    return BackendRun(
        record.environment.backend,
        record.verdict.value,
        str(path),
        checks,
        record.reason,
        record.log_tail,
        mode=mode,
        added=added,
        precision=device_evidence.precision(record),
        fallbacks=device_evidence.fallbacks(record),
        refused=device_evidence.refused(f"{record.reason}\n{record.log_tail}") if mode else [],
        differences=differences,
        passing_atol=device_evidence.passing_atol(differences),
    )


def _write(record: ResultRecord, target: str, output: Path, suffix: str = "") -> Path:
    results = build_results([record], record.environment, label=f"torchclaims check {target}")
    path = output if output.suffix == ".json" else output / default_name(results)
    path = path.with_name(path.stem + suffix + path.suffix)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_results(path, results)
    return path


@contextmanager
def _set(switch: FallbackSwitch):
    """The switch in this process's environment, which the runner's fork server and its children inherit."""
    saved = os.environ.get(switch.variable)
    os.environ[switch.variable] = switch.value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(switch.variable, None)
        else:
            os.environ[switch.variable] = saved


def _record(target: str, backend: str, claim_id: str, *, rtol: float, atol: float, timeout: float) -> ResultRecord:
    """The step's record from the isolated runner; unverified, without running, where the backend is not usable."""
    from ..run.runner import Runner

    env = {
        "TORCHCLAIMS_CHECK_TARGET": absolute(target),
        "TORCHCLAIMS_CHECK_CLAIM": claim_id,
        "TORCHCLAIMS_CHECK_RTOL": repr(rtol),
        "TORCHCLAIMS_CHECK_ATOL": repr(atol),
        "TORCHCLAIMS_CHECK_CWD": os.getcwd(),
    }
    with Runner(backend, parallel=1, log=functools.partial(print, file=sys.stderr)) as runner:  # stdout: the JSON
        return run_step_script(runner, STEP_SCRIPT, claim_id, target, env, timeout, device=True)
