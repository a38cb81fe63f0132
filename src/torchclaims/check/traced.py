"""The static trace of a TARGET, run sandboxed: the operators its step dispatched, read back as data.

``torchclaims check TARGET`` and the site's check reports never import a
model in their own process: :mod:`.trace_script` imports it, builds it and
records one step in the isolated runner, in the same sandbox as a claim
script, and hands back a result record with one measurement per operator.
Those measurements are the model's words, so each is checked here (its
fields, their types and their shape) before the engine looks it up; a bad
one is an error naming the measurement. Where the sandbox is missing the
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

from ..errors import TorchclaimsError, UsageError
from ..evidence.records import ResultRecord, Verdict
from ..run.runner import Runner
from .isolated import absolute, run_step_script
from .recorder import BACKWARD, FORWARD, UsedOperator

TRACE_SCRIPT = Path(__file__).resolve().with_name("trace_script.py")
CLAIM_ID = "check-trace"
TIMEOUT_S = 600.0
# The record's checks and measurements, as trace_script writes them.
LOADS, TRACED = "the target loads", "one step traced on the CPU"
MODEL_TYPE, OPERATOR = "model type", "operator"
_OPERATOR = re.compile(r"[A-Za-z_]\w{0,40}::[A-Za-z_][\w.]{0,200}")  # aten::add.Tensor
_DTYPE = re.compile(r"[a-z][a-z0-9_]{0,40}|")  # float32, or "" when no tensor took part
_MODEL_TYPE = re.compile(r"[\w.-]{0,100}")


@dataclass(frozen=True)
class Traced:
    used: list[UsedOperator]
    model_type: str
    sandbox: str  # the record's: how the model's code was confined


def trace(target: str, timeout: float = TIMEOUT_S) -> Traced:
    """Import, build and trace ``target`` in the isolated runner; UsageError for the target's own mistakes."""
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
    loads = checks.get(LOADS)
    if loads is not None and loads.outcome is Verdict.REFUTED:
        raise UsageError(loads.detail)
    traced = checks.get(TRACED)
    if record.verdict is not Verdict.HOLDS or traced is None:
        broken = [f"{c.name}: {c.detail}" for c in record.checks if c.outcome is not Verdict.HOLDS]
        last = record.log_tail.strip().splitlines()[-1:]  # a traceback's end names the exception
        cause = "; ".join([record.reason or "; ".join(broken) or "no trace", *last])
        raise TorchclaimsError(f"tracing {target} failed ({record.verdict.value}): {cause}")
    used, kind = [], ""
    for index, measurement in enumerate(traced.measurements):
        where = f"the trace of {target}, measurement {index} ({measurement.name})"
        if measurement.name == MODEL_TYPE and isinstance(measurement.value, str):
            kind = _matching(_MODEL_TYPE, measurement.value, where)
        elif measurement.name == OPERATOR and isinstance(measurement.value, str):
            used.append(_operator(measurement.value, where))
        else:
            raise TorchclaimsError(f"{where}: not a measurement a trace writes")
    return Traced(used, kind, record.sandbox)


def _operator(text: str, where: str) -> UsedOperator:
    try:
        data = json.loads(text)
    except ValueError:
        raise TorchclaimsError(f"{where}: not JSON") from None
    if not isinstance(data, dict) or set(data) != {"operator", "dtype", "phases", "calls"}:
        raise TorchclaimsError(f"{where}: needs exactly operator, dtype, phases and calls")
    phases, calls = data["phases"], data["calls"]
    if not isinstance(phases, list) or not phases or not set(phases) <= {FORWARD, BACKWARD}:
        raise TorchclaimsError(f"{where}: phases must be {FORWARD} and/or {BACKWARD}")
    if type(calls) is not int or calls < 1:
        raise TorchclaimsError(f"{where}: calls must be a whole number of at least 1")
    name = _matching(_OPERATOR, data["operator"], f"{where}: operator")
    return UsedOperator(name, _matching(_DTYPE, data["dtype"], f"{where}: dtype"), set(phases), calls)


def _matching(pattern: re.Pattern, value: object, where: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise TorchclaimsError(f"{where}: {str(value)[:80]!r} is not one")
    return value
