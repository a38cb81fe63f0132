"""The static trace of ``torchclaims check``, as the isolated runner runs a claim script.

Everything of the model's own runs here, in the sandbox: the import of its
file (code at import included), the function that builds it, and one step on
the CPU under the dispatch recorder. What it found goes back to the caller as
data only, one measurement per operator (:mod:`.traced` reads them back and
checks each); the report is made outside, by the engine.
"""

import json
import os
import sys

from torchclaims.check import model_type
from torchclaims.check.model_errors import ModelError
from torchclaims.check.recorder import record_step
from torchclaims.check.target import load_target
from torchclaims.check.traced import FAILED_AS, MODEL, MODEL_TYPE, OPERATOR, RUNS, TRACED, USAGE
from torchclaims.errors import UsageError
from torchclaims.verify import verification

TARGET = os.environ["TORCHCLAIMS_TRACE_TARGET"]
sys.path.insert(0, os.environ.get("TORCHCLAIMS_TRACE_CWD", os.getcwd()))  # package.module targets

v = verification(os.environ["TORCHCLAIMS_TRACE_CLAIM"], model=TARGET, method="one step on the CPU, recorded")
step, used, said = None, None, {}  # said: how the target failed, as the caller tells the user
with v.check(RUNS) as check:
    try:
        step = load_target(TARGET)
        used = record_step(step)
    except UsageError as exc:
        said = {USAGE: str(exc)}
    except ModelError as exc:
        said = {MODEL: str(exc)}
    for kind in said:
        check.measure(FAILED_AS, kind)
    check.expect(not said, "; ".join(said.values()))
if used is not None:
    with v.check(TRACED) as check:
        check.measure(MODEL_TYPE, model_type(step.model))
        for operator in used:
            check.measure(OPERATOR, json.dumps(operator.as_dict()))
        check.expect(bool(used), "the step dispatched no operator")
v.finish()
