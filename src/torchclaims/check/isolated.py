"""A step script in the project's isolated runner: the model's code runs sandboxed, as a claim script does.

Both modes of ``torchclaims check`` run a team's model this way: the static
trace (:mod:`.trace_script`, on the CPU) and the run on a backend
(:mod:`.step_script`). The model file's folder and the working directory are
shown to the sandbox wherever they lie (/tmp included); nothing else of the
machine is writable to the model.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..errors import TorchclaimsError
from ..evidence.records import ResultRecord


def absolute(target: str) -> str:
    """A file target with an absolute path: the step runs in another working directory."""
    spec, _, function = target.rpartition(":")
    return f"{Path(spec).resolve()}:{function}" if spec.endswith(".py") else target


def read_by_the_step(target: str) -> tuple[str, ...]:
    """What the step's sandbox must show wherever it lies (under /tmp too): the
    model file's folder, and the working directory ``package.module`` targets import from."""
    spec = target.rpartition(":")[0]
    return (str(Path(spec).resolve().parent), os.getcwd()) if spec.endswith(".py") else (os.getcwd(),)


def run_step_script(
    runner, script: Path, claim_id: str, target: str, env: dict[str, str], timeout: float, *, device: bool
) -> ResultRecord:
    """``script``'s record from ``runner`` (a :class:`~torchclaims.run.runner.Runner`), with ``env`` added;
    unverified, without running, where the backend is not usable. ``device``: first make sure the
    sandbox leaves the device usable (a run on a backend; the trace runs on the CPU)."""
    from ..run.progress import HEARTBEAT_S, console
    from ..run.runner import Job, unverified_record

    with tempfile.TemporaryDirectory(prefix="torchclaims-check-") as scratch:
        probe = runner.probe()
        job = Job(
            claim_id,
            script,
            f"torchclaims/check/{script.name}",
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
        stopped = runner.sandbox_stops_device() if device else None
        if stopped is not None:
            raise TorchclaimsError(stopped)
        runner.env.update({"TORCHCLAIMS_BACKEND": probe.backend, **env})
        if not device:
            return runner.run([job], probe.environment)[claim_id]
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
