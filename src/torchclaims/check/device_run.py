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
import tempfile
from pathlib import Path

from ..errors import TorchclaimsError, UsageError
from ..evidence.records import ResultRecord, Verdict
from ..evidence.results import build_results, default_name, write_results
from .links import slug
from .report import BackendRun

STEP_SCRIPT = Path(__file__).resolve().with_name("step_script.py")


def claim_id_for(target: str) -> str:
    """The record's claim id: ``check-`` and the target function's name."""
    return "check-" + (slug(target.rpartition(":")[2]) or "model")


def absolute(target: str) -> str:
    """A file target with an absolute path: the step runs in another working directory."""
    spec, _, function = target.rpartition(":")
    return f"{Path(spec).resolve()}:{function}" if spec.endswith(".py") else target


def read_by_the_step(target: str) -> tuple[str, ...]:
    """What the step's sandbox must show wherever it lies (under /tmp too): the
    model file's folder, and the working directory ``package.module`` targets import from."""
    spec = target.rpartition(":")[0]
    return (str(Path(spec).resolve().parent), os.getcwd()) if spec.endswith(".py") else (os.getcwd(),)


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
    from ..run.progress import HEARTBEAT_S, console
    from ..run.runner import Job, Runner, unverified_record

    claim_id = claim_id_for(target)
    say = functools.partial(print, file=sys.stderr)  # standard output may carry the JSON report
    with (
        Runner(backend, parallel=1, log=say) as runner,
        tempfile.TemporaryDirectory(prefix="torchclaims-check-") as scratch,
    ):
        probe = runner.probe()
        job = Job(
            claim_id,
            STEP_SCRIPT,
            "torchclaims/check/step_script.py",
            Path(scratch) / "record.json",
            cache_key="",
            inputs={},
            timeout=timeout,
            readable=read_by_the_step(target),
        )
        if probe.unavailable is not None:
            return unverified_record(
                job, probe.environment, f"backend {probe.backend} is not usable here: {probe.unavailable}"
            )
        stopped = runner.sandbox_stops_device()
        if stopped is not None:
            raise TorchclaimsError(stopped)
        runner.env.update(
            {
                "TORCHCLAIMS_BACKEND": probe.backend,
                "TORCHCLAIMS_CHECK_TARGET": absolute(target),
                "TORCHCLAIMS_CHECK_CLAIM": claim_id,
                "TORCHCLAIMS_CHECK_RTOL": repr(rtol),
                "TORCHCLAIMS_CHECK_ATOL": repr(atol),
                "TORCHCLAIMS_CHECK_CWD": os.getcwd(),
            }
        )
        progress = console(sys.stderr)  # the step may take minutes: say what runs, and that it still does
        progress.begin(1)
        progress.started(claim_id, f"{target} on {probe.backend}, against the CPU")
        try:
            return runner.run(
                [job],
                probe.environment,
                on_done=lambda job, record: progress.done(
                    claim_id, f"{record.verdict.value} in {record.duration_s:.1f}s"
                ),
                on_tick=progress.tick,
                tick_s=HEARTBEAT_S,
            )[claim_id]
        finally:
            progress.end()
