"""The architecture sweep: every causal-LM architecture transformers registers.

Each architecture runs in a worker process (:mod:`.pool`), checked by
:func:`.arch_check.check_architecture`, and gets four columns: ``forward``
and ``generate`` (the stage codes of :mod:`.arch_check`), ``result`` (how far
it got) and ``cause`` (why it stopped there):

======  ==========================================================
result  meaning
======  ==========================================================
``G``   generate matches the CPU (so does the forward pass)
``W``   the forward pass matches, generation does not
``B``   builds (a tiny model runs on the CPU), the forward pass on
        the device raises or differs
``Z``   fails before the device: no tiny model runs on the CPU
``T``   not reached within the stated time guard
``E``   the sweep's own code failed: no evidence
======  ==========================================================

The cause is the first failing stage's category: the harness could not shrink
the configuration or build a tiny model that runs on the CPU (limits of the
harness, stated as such, with each attempt's error), a package is missing, an
operator is missing on the device, the device raises, crashes or hangs, or the
result differs.
"""

from __future__ import annotations

import gc
import os
import time
import warnings

from ..evidence.coverage_table import NOT_REACHED, SweepTable, TableBuilder
from .machine import device_count, first_workers, machine_workers
from .pool import Failure, WorkerPool
from .worker_settings import worker_environment

STAGES = {
    "N": "matches",
    "F": "matches via CPU fallback",
    "M": "mismatch",
    "R": "raises",
    "K": "no kernel",
    "C": "no CPU reference",
    "-": "not run",
    "T": NOT_REACHED,
    "E": "harness error",
}
RESULTS = {
    "G": "generate matches",
    "W": "forward matches",
    "B": "builds",
    "Z": "no tiny model",
    "T": NOT_REACHED,
    "E": "harness error",
}
CAUSES = {
    "-": "none",
    "c": "harness: config could not be shrunk",
    "p": "package missing",
    "r": "harness: no tiny model ran on the CPU",
    "k": "op missing on the device",
    "e": "device raises",
    "x": "crash or hang",
    "m": "mismatch",
    "T": NOT_REACHED,
    "E": "harness error",
}
MEMORY_PER_WORKER_GB = 2.5


def classify(answer: dict | Failure | None) -> dict[str, tuple[str, str]]:
    """(code, detail) for each column, from a worker's answer."""
    if answer is None:
        return {"forward": ("T", ""), "generate": ("T", ""), "result": ("T", ""), "cause": ("T", "")}
    if isinstance(answer, Failure):
        detail = f"{answer.kind}: {answer.detail}"
        return {"forward": ("R", detail), "generate": ("-", ""), "result": ("B", ""), "cause": ("x", detail)}
    if "error" in answer:
        return {"forward": ("E", ""), "generate": ("E", ""), "result": ("E", answer["error"]), "cause": ("E", "")}
    forward, generate = answer["forward"], answer["generate"]
    columns = {"forward": forward, "generate": generate}
    if "cause" in answer:  # no tiny model
        return {**columns, "result": ("Z", ""), "cause": (answer["cause"], answer["detail"])}
    config = answer["config"] + (f"; CPU fallback: {', '.join(answer['fallbacks'])}" if answer["fallbacks"] else "")
    matched = "NF"
    if forward[0] not in matched:
        result, failed = "B", forward
    elif generate[0] not in matched:
        result, failed = "W", generate
    else:
        return {**columns, "result": ("G", config), "cause": ("-", "")}
    cause = {"M": "m", "K": "k", "R": "e", "C": "r"}.get(failed[0], "e")
    return {**columns, "result": (result, config), "cause": (cause, failed[1])}


def sweep_architectures(
    backend_name: str,
    *,
    workers: int | None = None,
    guard_s: float | None = None,
    item_timeout_s: float = 300.0,
    only: list[str] | None = None,
    tuned_workers: bool = True,
) -> tuple[SweepTable, dict]:
    """(table, run facts) for every registered causal-LM architecture (or those in ``only``).

    Every answer is in within ``guard_s`` seconds (None: no guard). ``workers``
    workers start at once (None: the CPUs the runner gave the claim, growing up
    to the machine's size as CPUs fall idle, see :mod:`.machine`);
    ``tuned_workers`` applies :mod:`.worker_settings`'s
    settings in the workers.
    """
    from ..backends import resolve_backend
    from .arch_config import architectures

    backend, _ = resolve_backend(backend_name)
    began = time.monotonic()
    rows = [name for name in architectures() if only is None or name in only]
    legends = {"forward": STAGES, "generate": STAGES, "result": RESULTS, "cause": CAUSES}
    builder = TableBuilder("architectures", "architecture", rows, legends)
    size = workers or machine_workers(MEMORY_PER_WORKER_GB)
    devices = device_count(backend.device_type)
    env = worker_environment(backend.name) if tuned_workers else {}
    args = (backend.name, devices, backend.device_type != "cpu", env)
    pool = WorkerPool(_serve, args, size, item_timeout_s=item_timeout_s, first=None if workers else first_workers(size))
    seconds = {}

    def answered(name, answer, wall_s):
        seconds[name] = round(wall_s, 2)
        for column, (code, detail) in classify(answer).items():
            builder.set(name, column, code, detail)

    deadline = None if guard_s is None else began + guard_s
    for name, answer in pool.run(rows, deadline=deadline, on_answer=answered).items():
        if answer is None:
            answered(name, None, 0.0)
    facts = {
        "seconds": round(time.monotonic() - began, 1),
        "workers": pool.most,
        "devices": len({facts["device"] for facts in pool.facts if facts}) or 1,
        "precision": sorted({facts["precision"] for facts in pool.facts if facts}),
        "worker_starts": pool.started,
        "replaced": pool.replaced,
        "item_seconds": seconds,
    }
    return builder.table(), facts


def _serve(conn, slot: int, backend_name: str, devices: int, compare_with_cpu: bool, env: dict) -> None:
    """Worker entry point: answer architecture names until told to stop.

    Worker ``slot`` uses device ``slot % devices``.
    """
    warnings.filterwarnings("ignore")
    os.environ.update(env)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers.utils import logging as hf_logging

    from ..backends import resolve_backend
    from .arch_check import check_architecture
    from .fallback import probe_for
    from .machine import use_device
    from .op_check import device_usable, first_line
    from .precision import precision_mode

    torch.set_num_threads(1)
    hf_logging.set_verbosity_error()
    backend, _ = resolve_backend(backend_name)
    backend.import_modules()
    used = use_device(slot, devices)
    device = backend.device()
    probe = probe_for(backend.name, device)
    gc.freeze()  # what is loaded now lives as long as the worker: keep later collections cheap
    conn.send(("ready", {"precision": precision_mode(backend.name), "device": used}))
    while (name := conn.recv()) is not None:
        try:
            answer = check_architecture(
                name, device, probe=probe, sync=backend.synchronize, compare_with_cpu=compare_with_cpu
            )
        except Exception as exc:  # the harness broke, not the device
            answer = {"error": f"harness: {first_line(exc)}"}
        if any(stage[0] in "RK" for stage in (answer.get("forward", "-"), answer.get("generate", "-"))):
            unusable = device_usable(backend.synchronize, probe)
            if unusable:
                answer["restart"] = unusable
        conn.send(answer)
        if "restart" in answer:
            break
