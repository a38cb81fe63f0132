"""The operator sweep: every OpInfo entry × dtype on a backend, as one table.

    from torchclaims.coverage.operators import sweep_operators

    sweep = sweep_operators("xla", max_samples=8)
    print("\\n".join(sweep.table.summary()))

Cells are listed from metadata (:mod:`.op_list`), run in parallel worker
processes (:mod:`.pool`), each worker checking one cell at a time
(:mod:`.op_check`), and each cell ends with exactly one outcome:

=====  ===================  ==================================================
code   outcome              meaning
=====  ===================  ==================================================
``N``  native               every compared sample matched the CPU, and no
                            operator ran through a CPU fallback
``F``  CPU fallback         matched, but at least one operator ran on the CPU
``M``  mismatch             a sample differs from the CPU beyond the tolerance
``R``  raises               a sample raised on the device, or killed or hung
                            the worker
``K``  no kernel            a sample raised ``NotImplementedError``
``X``  excluded by OpInfo   op_db's metadata says not to compare it here
``U``  random               every sample drew random numbers: it ran, values
                            not compared
``C``  no CPU reference     no sample, or the CPU itself raised on every one
``E``  harness error        the sweep's own code failed: no evidence
``T``  not reached          the stated time guard ran out before it ended
``W``  not run (forward     backward cells only: the forward call with
       failed)              gradients failed on the device, so no backward ran
=====  ===================  ==================================================

Each operator that supports autograd also gets a backward cell per dtype of
:data:`~.op_list.BACKWARD_DTYPES`, in the column ``<dtype> backward``: the
same codes for its gradients against the CPU's (:mod:`.op_backward`), with the
CPU fallbacks of its backward, the worker's crash signal and sample, and the
ATen operators the gradients dispatched on the CPU, which the row records
apart (``SweepTable.backward_operators``). A sample whose forward failed on
the device is ``x`` there, and such a cell is *not run (forward failed)*
unless a sample's gradients were wrong: never *native*.

A cell op_db excludes is still run once, on its first sample and without
comparing values, to see whether the device crashes, raises or falls back on
it: it stays *excluded* with what the run showed beside op_db's reason
(``op_db: onlyNativeDeviceTypes (not run on xla); ran once: raises ...``),
except that a worker killed by it makes it a *raises* cell (a crash is a
crash whatever op_db's decorators say). A cell whose worker dies names the
signal and the sample it died on, with that sample's inputs.

When samples disagree the worst wins, in the order of the table (a silent
mismatch outranks an exception). Every sample's code is kept beside the cell,
the cell's detail names the stage a problem arose at and the size of the
largest difference from the CPU against the tolerance used, and each row names
the ATen operators its samples dispatched on the CPU (``SweepTable.operators``,
over every dtype), so that ``torchclaims check`` matches a model's operators to
rows exactly rather than by name, and each cell the argument kinds of its
samples (``SweepColumn.arguments``, :mod:`.op_arguments`), so that it can tell
whether a bad sample looks like the model's calls. The table also states its
denominator in dispatcher overloads (:mod:`.op_overloads`).

The sweep takes the machine (:mod:`.machine`): workers grow into idle CPUs,
spread over the devices of the backend, and the time guard is a moment by
which every answer must be in (:mod:`.pool`), so a cell that has started is
never what makes the claim miss its deadline.
"""

from __future__ import annotations

import gc
import os
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field

from ..evidence.coverage_table import ARGUMENT_KINDS, NOT_REACHED, SweepTable, TableBuilder, backward_column, clip
from .machine import device_count, first_workers, machine_workers
from .op_list import BACKWARD_DTYPES, DTYPES, KERNELS_RECORDED, Cell, cells_for, op_label
from .op_overloads import DEFINITION, backend_relevant
from .pool import Failure, Progress, WorkerPool
from .worker_settings import worker_environment

OUTCOMES = {
    "N": "native",
    "F": "CPU fallback",
    "M": "mismatch",
    "R": "raises",
    "K": "no kernel",
    "X": "excluded by OpInfo",
    "U": "random: not compared",
    "C": "no CPU reference",
    "E": "harness error",
    "T": NOT_REACHED,
}
BACKWARD_OUTCOMES = OUTCOMES | {"W": "not run (forward failed)"}
SAMPLE_CODES = {
    "n": "matched",
    "f": "matched via CPU fallback",
    "m": "mismatch",
    "r": "raised",
    "k": "no kernel",
    "d": "drew random numbers: not compared",
    "c": "the CPU reference raised",
    "s": "killed or hung the worker",
    "x": "not run: the forward failed on the device",
    ".": "not run",
}
# Which sample code decides the cell, worst first.
_PRECEDENCE = (
    ("m", "M"),
    ("r", "R"),
    ("s", "R"),
    ("k", "K"),
    ("x", "W"),
    ("f", "F"),
    ("n", "N"),
    ("d", "U"),
    ("c", "C"),
)
DEFAULT_MAX_SAMPLES = 8  # samples per operator x dtype, in OpInfo's order
MEMORY_PER_WORKER_GB = 2.0  # a torch_xla worker with op_db loaded peaks around 1.5 GB


# What a cell op_db excludes showed when run once (values not compared), by the code cell_outcome gives it.
RAN_ONCE = {
    "N": "ran on the device",
    "F": "ran",
    "R": "raises",
    "K": "no kernel",
    "U": "ran (drew random numbers)",
    "C": "no CPU reference",
    "E": "harness error",
    "W": "its forward failed",
}


def _died(failure: Failure) -> tuple[str, str, str]:
    """A cell whose worker crashed or hung: the signal (in the detail) and the sample it was running."""
    from .op_backward import FORWARD_FOR_GRAD

    during = failure.during if isinstance(failure.during, dict) else {}
    if "sample" not in during:
        return "R", f"{failure.kind}: {failure.detail}", "s"
    index, total = during["sample"], len(during["kinds"])
    # a backward cell's worker that died in the forward call its gradients need: no backward ran
    cell, sample = ("W", "x") if during.get("stage") == FORWARD_FOR_GRAD else ("R", "s")
    samples = during["codes"] + sample + "." * (total - index - 1)
    where = f"{during['stage']}: " if cell == "W" else ""
    return cell, f"{where}{failure.kind}: {failure.detail} on sample {index} of {total} ({during['inputs']})", samples


def cell_outcome(answer: dict | Failure | None) -> tuple[str, str, str]:
    """(outcome code, detail, sample codes) of one cell from its worker's answer."""
    if answer is None:
        return "T", "", ""
    if isinstance(answer, Failure):
        return _died(answer)
    if "error" in answer:
        return "E", answer["error"], ""
    samples, problems = answer["samples"], answer["problems"]
    code = next((cell for sample, cell in _PRECEDENCE if sample in samples), "C")
    parts = []
    decisive = {"M": "m", "R": "r", "K": "k", "C": "c", "W": "x"}.get(code)
    if decisive in problems:
        parts.append(problems[decisive])
    count = Counter(samples)
    if code == "M":
        parts.insert(0, f"{count['m']} of {len(samples)} samples differ")
    parts += [f"also {SAMPLE_CODES[c]}: {problems[c]}" for c in "rkxc" if c in problems and c != decisive]
    difference = answer.get("difference")
    if difference and code != "M":  # a mismatch's own problem already gives its size
        from .op_compare import describe

        parts.append("largest difference: " + describe(difference))
    if answer["fallbacks"]:
        parts.append("CPU fallback: " + ", ".join(answer["fallbacks"]))
    if count["d"] and code != "U":
        parts.append(f"{count['d']} samples drew random numbers (not compared)")
    if answer.get("restart"):
        parts.append(f"worker replaced: {answer['restart']}")
    return code, clip("; ".join(parts), 300), samples


def cell_kinds(answer: dict | Failure | None) -> str:
    """The argument kinds of the cell's samples (one token each, :mod:`.op_arguments`), as the table keeps them."""
    if isinstance(answer, Failure):
        answer = answer.during if isinstance(answer.during, dict) else {}
    return " ".join(answer.get("kinds", ())) if isinstance(answer, dict) else ""


def once_outcome(excluded: str, answer: dict | Failure | None) -> tuple[str, str]:
    """(code, detail) of a cell op_db excludes, run once: excluded with both facts, or raises if it crashed."""
    if answer is None:
        return "X", excluded
    code, detail, _ = cell_outcome(answer)
    if isinstance(answer, Failure) and code == "R":
        return "R", f"{excluded}; ran once: {detail}"
    said = RAN_ONCE[code] + (f": {detail}" if detail else "")
    return "X", f"{excluded}; ran once, values not compared: {said}"


@dataclass
class OperatorSweep:
    """The table and what it took to make it."""

    table: SweepTable
    seconds: float
    workers: int
    worker_starts: int
    replaced: list[str]
    max_samples: int | None
    guard_s: float | None
    timing: dict[str, float] = field(default_factory=dict)  # summed over cells: samples, device, cpu
    cell_seconds: dict[str, float] = field(default_factory=dict)  # "op/dtype" -> wall seconds
    devices: int = 1  # the devices the workers used
    precision: list[str] = field(default_factory=list)  # each distinct precision mode the workers reported
    needed_s: float = 0.0  # at the measured rate, what the cells not reached would have taken with these workers

    @property
    def samples_run(self) -> int:
        return sum(len(s) - s.count(".") for column in self.table.columns for s in column.samples.values())


def list_cells(
    device_type: str, dtypes=DTYPES, only: list[str] | None = None, backward_dtypes=BACKWARD_DTYPES
) -> tuple[list[str], list[Cell]]:
    """Rows (every op_db entry, or those named in ``only``) and their cells."""
    from torch.testing._internal.common_methods_invocations import op_db

    ops = [op for op in op_db if only is None or op_label(op) in only]
    cells = [cell for op in ops for cell in cells_for(op, device_type, dtypes, backward_dtypes)]
    return [op_label(op) for op in ops], cells


def legends(dtypes, backward_dtypes) -> dict[str, dict[str, str]]:
    """The table's columns and their legends: each dtype, followed by its backward column where swept."""
    columns = {}
    for dtype in dtypes:
        columns[dtype] = OUTCOMES
        if dtype in backward_dtypes:
            columns[backward_column(dtype)] = BACKWARD_OUTCOMES
    return columns


def sweep_operators(
    backend_name: str,
    *,
    dtypes=DTYPES,
    backward_dtypes=BACKWARD_DTYPES,
    max_samples: int | None = None,
    workers: int | None = None,
    guard_s: float | None = None,
    item_timeout_s: float = 180.0,
    only: list[str] | None = None,
    tuned_workers: bool = True,
    on_cell=None,
    worker=None,
) -> OperatorSweep:
    """Sweep op_db on ``backend_name``; every answer is in within ``guard_s`` seconds (None: no guard).

    ``workers`` workers start at once (None: the CPUs the runner gave the claim,
    growing up to the machine's size as CPUs fall idle, see :mod:`.machine`);
    ``tuned_workers`` applies :mod:`.worker_settings`'s settings in the workers.
    ``worker`` replaces the workers' entry point (:func:`_serve`): the tests give
    one that fails the way a device runtime does.
    """
    from ..backends import resolve_backend

    backend, _ = resolve_backend(backend_name)
    began = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows, cells = list_cells(backend.device_type, dtypes, only, backward_dtypes)
    columns = legends(dtypes, backward_dtypes)
    builder = TableBuilder("operators", "operator", rows, columns, SAMPLE_CODES, ARGUMENT_KINDS)
    for cell in cells:
        if cell.excluded:
            builder.set(cell.op, cell.column, "X", cell.excluded)
    size = workers or machine_workers(MEMORY_PER_WORKER_GB)
    devices = device_count(backend.device_type)
    compare_with_cpu = backend.device_type != "cpu"
    env = worker_environment(backend.name) if tuned_workers else {}
    pool = WorkerPool(
        worker or _serve,
        (backend.name, devices, max_samples, compare_with_cpu, env),
        size,
        item_timeout_s=item_timeout_s,
        first=None if workers else first_workers(size),
    )
    # (op, dtype, atol, rtol, why op_db excludes it, backward): listed cells first, then each excluded one once
    requests = [
        (c.op, c.dtype, c.atol, c.rtol, c.excluded, c.backward) for c in sorted(cells, key=lambda c: bool(c.excluded))
    ]
    notes = {(c.op, c.column): c.note for c in cells if c.note}
    timing, seconds = Counter(), {}

    def answered(request, answer, wall_s):
        op, excluded, backward = request[0], request[4], request[5]
        column = backward_column(request[1]) if backward else request[1]
        code, detail, samples = cell_outcome(answer)
        if excluded:
            code, detail = once_outcome(excluded, answer)
        if (op, column) in notes:
            detail = "; ".join(filter(None, (notes[op, column], detail)))
        builder.set(op, column, code, detail, samples, cell_kinds(answer))
        if isinstance(answer, dict):
            timing.update(answer.get("timing", {}))
            builder.add_operators(op, answer.get("operators", ()), backward=backward)
            builder.add_operators(op, answer.get("kernels", ()), on_device=True)
        seconds[f"{op}/{column}"] = round(wall_s, 3)
        if on_cell is not None:
            on_cell(op, column, code)

    deadline = None if guard_s is None else began + guard_s
    answers = pool.run(requests, deadline=deadline, on_answer=answered)
    stopped = set(pool.stopped)
    unanswered = [request for request, answer in answers.items() if answer is None and not request[4]]
    for request in unanswered:
        when = "while it ran" if request in stopped else "before it started"
        column = backward_column(request[1]) if request[5] else request[1]
        builder.set(request[0], column, "T", f"the time guard of {guard_s:.0f} s ran out {when}")
    builder.count_overloads(backend_relevant(), DEFINITION)
    return OperatorSweep(
        table=builder.table(),
        seconds=round(time.monotonic() - began, 1),
        workers=pool.most,
        worker_starts=pool.started,
        replaced=pool.replaced,
        max_samples=max_samples,
        guard_s=guard_s,
        timing={k: round(v, 1) for k, v in timing.items()},
        cell_seconds=seconds,
        devices=len({facts["device"] for facts in pool.facts if facts}) or 1,
        precision=sorted({facts["precision"] for facts in pool.facts if facts}),
        needed_s=_needed(pool.durations, len(unanswered), pool.most),
    )


def _needed(durations: list[float], left: int, workers: int) -> float:
    """Seconds ``left`` cells would take on ``workers`` workers, at the mean of the cells answered."""
    if not left or not durations:
        return 0.0
    return round(left * sum(durations) / len(durations) / max(1, workers), 1)


def _serve(
    conn, slot: int, backend_name: str, devices: int, max_samples: int | None, compare_with_cpu: bool, env: dict
) -> None:
    """Worker entry point: answer (op, dtype, atol, rtol, excluded, backward) requests until told to stop.

    Worker ``slot`` uses device ``slot % devices``. A cell op_db excludes runs
    its first sample only, without comparing values. Before each sample the
    worker tells the pool which one it is (:class:`~.pool.Progress`).
    """
    warnings.filterwarnings("ignore")
    os.environ.update(env)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)  # the parallelism is in the workers
    from torch.testing._internal.common_methods_invocations import op_db

    from ..backends import resolve_backend
    from .fallback import probe_for
    from .machine import use_device
    from .op_check import check_cell, first_line
    from .precision import precision_mode

    backend, _ = resolve_backend(backend_name)
    backend.import_modules()
    used = use_device(slot, devices)
    device = backend.device()
    probe = probe_for(backend.name, device)
    ops = {op_label(op): op for op in op_db}
    # op_db is a large graph of objects that never dies; freezing it keeps the
    # garbage collection after each failed sample (see op_check) cheap.
    gc.freeze()
    conn.send(("ready", {"precision": precision_mode(backend.name), "device": used}))
    while (request := conn.recv()) is not None:
        name, dtype, atol, rtol, excluded, backward = request
        try:
            answer = check_cell(
                ops[name],
                dtype,
                device,
                atol=atol,
                rtol=rtol,
                compare_with_cpu=compare_with_cpu and not excluded,
                probe=probe,
                sync=backend.synchronize,
                max_samples=1 if excluded else max_samples,
                report=lambda what: conn.send(Progress(what)),
                kernels=name in KERNELS_RECORDED,
                backward=backward,
            )
        except Exception as exc:  # the harness broke, not the device
            answer = {"error": f"harness: {first_line(exc)}"}
        conn.send(answer)
        if "restart" in answer:
            break
