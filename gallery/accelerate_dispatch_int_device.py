"""
accelerate's dispatch_model does not move the model for an integer device on Neuron
===================================================================================

:claim-verdict:`accelerate-dispatch-int-device`

The claim: in accelerate 1.15.0, ``dispatch_model(model, {"": 0})`` leaves the
model where it is when accelerate detects a Neuron device (likewise NPU, MLU,
SDAA or MUSA): the integer is rewritten to ``"neuron:0"`` but ``model.to`` is
never called.

This is a claim about accelerate's code path, so we exercise it on any
backend: accelerate's detection function for one device family at a time is
replaced with a stub that returns ``True`` (the others with ``False``), the
model's ``to`` method with a spy that records calls without moving anything,
and a trace of ``dispatch_model``'s frame reads the device it settled on.
A control run with every family reported absent shows that ``model.to(0)`` is
called on the ordinary path. The statement's remark that accelerate 1.14.0
still moved the model rests on the cited 1.14.0 source; that release is not
installed or run here.
"""

import sys
from importlib.metadata import version

import accelerate.big_modeling as big_modeling
import torch
from accelerate import dispatch_model

from torchclaims.verify import verification

STATEMENT_VERSION = "1.15.0"
FAMILIES = ("neuron", "npu", "mlu", "sdaa", "musa")  # accelerate's is_<family>_available probes

v = verification(
    "accelerate-dispatch-int-device",
    model="torch.nn.Sequential(Linear(4, 4), Linear(4, 2)) on the CPU, with model.to replaced by a recording spy",
    inputs="dispatch_model(model, device_map={'': 0})",
    method="stub one accelerate.big_modeling.is_<family>_available at a time to return True; record model.to "
    "calls, the device dispatch_model settled on (frame trace) and hf_device_map",
)

installed = version("accelerate")
print("accelerate", installed, "| statement is about", STATEMENT_VERSION)

# %%
# One dispatch, observed
# ----------------------
# ``detected`` names the family whose probe reports a device; every other
# probe reports none, so the run is the same whatever hardware this is.


def dispatch(detected):
    missing = object()  # an older accelerate may lack some probes; they are removed again afterwards
    probes = {family: getattr(big_modeling, f"is_{family}_available", missing) for family in FAMILIES}
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    calls = []

    def spy_to(*args, **kwargs):
        calls.append(args + tuple(f"{k}={val}" for k, val in kwargs.items()))
        return model  # record only: device 0 need not exist here

    model.to = spy_to
    settled = {}

    def trace(frame, event, arg):
        if frame.f_code is not big_modeling.dispatch_model.__code__:
            return None

        def local(frame, event, arg):
            if event == "return":
                settled["device"] = frame.f_locals.get("device")
            return local

        return local

    for family in FAMILIES:
        setattr(big_modeling, f"is_{family}_available", (lambda *a, _on=(family == detected), **k: _on))
    previous_trace = sys.gettrace()
    sys.settrace(trace)
    try:
        dispatch_model(model, device_map={"": 0})
    finally:
        sys.settrace(previous_trace)
        for family, probe in probes.items():
            if probe is missing:
                delattr(big_modeling, f"is_{family}_available")
            else:
                setattr(big_modeling, f"is_{family}_available", probe)
    return {
        "to_calls": calls,
        "device": settled.get("device"),
        "hf_device_map": getattr(model, "hf_device_map", None),
        "parameter_devices": sorted({p.device.type for p in model.parameters()}),
    }


control = dispatch(None)
runs = {family: dispatch(family) for family in FAMILIES}
print(f"{'detected':<9} {'model.to calls':<16} {'device settled on':<18} hf_device_map  parameters on")
for label, run in [("(none)", control), *runs.items()]:
    calls, device, device_map = str(run["to_calls"]), str(run["device"]), str(run["hf_device_map"])
    print(f"{label:<9} {calls:<16} {device:<18} {device_map:<14} {run['parameter_devices']}")

# %%
# The ordinary path moves the model
# ---------------------------------
# With no family detected, ``dispatch_model`` calls ``model.to(0)``. This makes
# sure the spy sees the call when it happens.

with v.check("control: with no family detected, dispatch_model calls model.to(0)") as check:
    check.measure("installed accelerate", installed)
    check.measure("model.to calls", str(control["to_calls"]), tolerance="== [(0,)]")
    if installed != STATEMENT_VERSION:
        check.unsupported(f"installed accelerate is {installed}; the statement is about {STATEMENT_VERSION}")
    check.expect(control["to_calls"] == [(0,)], f"model.to calls were {control['to_calls']}, expected [(0,)]")

# %%
# A detected family skips the move
# --------------------------------
# For each family the statement predicts: the integer becomes ``"<family>:0"``,
# ``model.to`` is not called, the parameters stay on the CPU, and
# ``hf_device_map`` still says ``{'': 0}``.

for family, run in runs.items():
    with v.check(f"{family} detected: device rewritten to '{family}:0' and model.to never called") as check:
        check.measure("device dispatch_model settled on", str(run["device"]), tolerance=f"== '{family}:0'")
        check.measure("model.to calls", len(run["to_calls"]), tolerance="== 0")
        check.measure("parameter device types after dispatch", ", ".join(run["parameter_devices"]))
        check.measure("hf_device_map", str(run["hf_device_map"]))
        if installed != STATEMENT_VERSION:
            check.unsupported(f"installed accelerate is {installed}; the statement is about {STATEMENT_VERSION}")
        check.expect(run["device"] == f"{family}:0", f"dispatch_model settled on {run['device']!r}, not '{family}:0'")
        check.expect(not run["to_calls"], f"model.to was called: {run['to_calls']}")
        check.expect(
            run["parameter_devices"] == [v.reference_device.type],
            f"parameters moved to {run['parameter_devices']}",
        )
        check.expect(run["hf_device_map"] == {"": 0}, f"hf_device_map is {run['hf_device_map']!r}")

v.finish()
