"""The static trace of a TARGET, run sandboxed: the operators its step dispatched, read back as data.

``torchclaims check TARGET`` and the site's check reports never import a
model in their own process: :mod:`.trace_script` imports it, builds it and
records one step in the isolated runner, in the same sandbox as a claim
script, and hands back a result record with one measurement per operator.
Those measurements are the model's words, so each is checked here (its
fields, their types and their shape) before the engine looks it up; a bad
one is a :class:`~.model_errors.ModelError` naming the measurement. Where the sandbox is missing the
runner does what it does for a claim script: the step runs, and the report
says "ran without sandbox" (under ``CI=true`` it does not run).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..claims import Trigger
from ..errors import UsageError
from ..evidence.records import ResultRecord, Verdict
from ..project import DEFAULTS
from ..run.runner import Runner
from .isolated import absolute, run_step_script
from .model_errors import ModelError
from .recorder import BACKWARD, FORWARD, UsedOperator

TRACE_SCRIPT = Path(__file__).resolve().with_name("trace_script.py")
CLAIM_ID = "check-trace"
# The record's checks and measurements, as trace_script writes them.
RUNS, TRACED = "the target loads and its step runs", "one step traced on the CPU"
MODEL_TYPE, OPERATOR = "model type", "operator"
FAILED_AS, USAGE, MODEL = "failed as", "usage", "model"  # a usage error, or the model's own (ModelError)
FIELDS = {"operator", "dtype", "phases", "calls", "ranks", "kinds", "out_dtypes"}  # UsedOperator.as_dict()
MAX_RANK = 64  # torch's limit on a tensor's dimensions
_OPERATOR = re.compile(r"[A-Za-z_]\w{0,40}::[A-Za-z_][\w.]{0,200}")  # aten::add.Tensor
_DTYPE = re.compile(r"[a-z][a-z0-9_]{0,40}|")  # float32, or "" when no tensor took part
_MODEL_TYPE = re.compile(r"[\w.-]{0,100}")


@dataclass(frozen=True)
class Traced:
    used: list[UsedOperator]
    model_type: str
    sandbox: str  # the record's: how the model's code was confined


def trace(target: str, timeout: float = DEFAULTS.check_timeout_s) -> Traced:
    """Import, build and trace ``target`` in the isolated runner: UsageError for a mistake in naming it,
    ModelError where the model could not run or said something a trace never says."""
    env = {
        "TORCHCLAIMS_TRACE_TARGET": absolute(target),
        "TORCHCLAIMS_TRACE_CLAIM": CLAIM_ID,
        "TORCHCLAIMS_TRACE_CWD": os.getcwd(),
    }
    with Runner("cpu", parallel=1, log=functools.partial(print, file=sys.stderr)) as runner:
        record = run_step_script(runner, TRACE_SCRIPT, CLAIM_ID, target, env, timeout, device=False)
    return read_trace(record, target)


def read_trace(record: ResultRecord, target: str) -> Traced:
    """What a trace's record says, each measurement checked; the error says which one is wrong."""
    checks = {c.name: c for c in record.checks}
    runs = checks.get(RUNS)
    if runs is not None and runs.outcome is Verdict.REFUTED:
        kind = next((m.value for m in runs.measurements if m.name == FAILED_AS), MODEL)
        raise (UsageError if kind == USAGE else ModelError)(runs.detail)
    traced = checks.get(TRACED)
    if record.verdict is not Verdict.HOLDS or traced is None:
        broken = [f"{c.name}: {c.detail}" for c in record.checks if c.outcome is not Verdict.HOLDS]
        last = record.log_tail.strip().splitlines()[-1:]  # a traceback's end names the exception
        cause = "; ".join([record.reason or "; ".join(broken) or "no trace", *last])
        raise ModelError(f"tracing {target} failed ({record.verdict.value}): {cause}")
    used, kind = [], ""
    for index, measurement in enumerate(traced.measurements):
        where = f"the trace of {target}, measurement {index} ({measurement.name})"
        if measurement.name == MODEL_TYPE and isinstance(measurement.value, str):
            kind = _matching(_MODEL_TYPE, measurement.value, where)
        elif measurement.name == OPERATOR and isinstance(measurement.value, str):
            used.append(_operator(measurement.value, where))
        else:
            raise ModelError(f"{where}: not a measurement a trace writes")
    return Traced(used, kind, record.sandbox)


def _operator(text: str, where: str) -> UsedOperator:
    try:
        data = json.loads(text)
    except ValueError:
        raise ModelError(f"{where}: not JSON") from None
    if not isinstance(data, dict) or set(data) != FIELDS:
        raise ModelError(f"{where}: needs exactly {', '.join(sorted(FIELDS))}")
    phases, calls, ranks, kinds = data["phases"], data["calls"], data["ranks"], data["kinds"]
    if not isinstance(phases, list) or not phases or not set(phases) <= {FORWARD, BACKWARD}:
        raise ModelError(f"{where}: phases must be {FORWARD} and/or {BACKWARD}")
    if type(calls) is not int or calls < 1:
        raise ModelError(f"{where}: calls must be a whole number of at least 1")
    if not isinstance(ranks, list) or not all(type(r) is int and 0 <= r <= MAX_RANK for r in ranks):
        raise ModelError(f"{where}: ranks must be whole numbers from 0 to {MAX_RANK}")
    known = {t.value for t in Trigger}
    if not isinstance(kinds, list) or not all(isinstance(k, str) and k in known for k in kinds):
        raise ModelError(f"{where}: kinds must be among {', '.join(sorted(known))}")
    name = _matching(_OPERATOR, data["operator"], f"{where}: operator")
    dtype = _matching(_DTYPE, data["dtype"], f"{where}: dtype")
    if not isinstance(data["out_dtypes"], list):
        raise ModelError(f"{where}: out_dtypes must be a list of dtype names")
    outs = {_matching(_DTYPE, out, f"{where}: out_dtypes") for out in data["out_dtypes"]}
    return UsedOperator(name, dtype, set(phases), calls, set(ranks), {Trigger(k) for k in kinds}, outs)


def _matching(pattern: re.Pattern, value: object, where: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ModelError(f"{where}: {str(value)[:80]!r} is not one")
    return value
