"""
device_map='auto' ignores Neuron, XLA and TPU devices and keeps the model on CPU
================================================================================

:claim-verdict:`hf-device-map-auto`

The claim: ``from_pretrained(..., device_map="auto")`` sizes devices with
accelerate's ``get_max_memory``, which enumerates CUDA/ROCm, XPU, NPU, MLU,
SDAA, MUSA, HPU and MPS devices but has no branch for Neuron, XLA, TPU or
other PrivateUse1 devices, so on such a backend the whole model lands on the
CPU.

Two checks. First we read the installed ``get_max_memory``: which
availability probes it calls and whether any Neuron/XLA/TPU/PrivateUse1 name
appears in it. Then we load a tiny model with ``device_map="auto"`` while a
spy records what ``get_max_memory`` returned, and look at where the
parameters are. The second check only says something on an accelerator: on
the CPU the model lands on the CPU whatever the cause.
"""

import ast
import importlib
import inspect
import textwrap

import accelerate
from _tiny_llama import tiny_llama_checkpoint
from transformers import AutoModelForCausalLM
from transformers.utils import logging as hf_logging

from torchclaims.verify import verification

hf_logging.set_verbosity_error()

v = verification(
    "hf-device-map-auto",
    model="tiny Llama from a config (2 layers, hidden 32, vocab 128), saved to a temporary directory",
    inputs="from_pretrained(tmpdir, device_map='auto')",
    method="static reading of accelerate.utils.get_max_memory; parameter devices after loading, "
    "with a spy on the get_max_memory call",
)

# %%
# What ``get_max_memory`` looks for
# ---------------------------------
# We parse the installed function and collect every identifier and string in
# it. The statement predicts probes for the listed device families and no
# mention of Neuron, XLA, TPU or PrivateUse1.

ENUMERATED = {  # device family -> the probe the statement says get_max_memory calls
    "npu": "is_npu_available",
    "mlu": "is_mlu_available",
    "sdaa": "is_sdaa_available",
    "musa": "is_musa_available",
    "xpu": "is_xpu_available",
    "hpu": "is_hpu_available",
    "mps": "is_mps_available",
    "cuda": "device_count",  # the final else: for i in range(torch.cuda.device_count())
}
IGNORED = ("neuron", "xla", "tpu", "privateuse")

source = textwrap.dedent(inspect.getsource(accelerate.utils.get_max_memory))
callers = []  # (module, name) in Transformers bound to accelerate's get_max_memory
for module_name in ("transformers.integrations.accelerate", "transformers.modeling_utils"):
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        continue
    callers += [(module, name) for name, value in vars(module).items() if value is accelerate.utils.get_max_memory]
tree = ast.parse(source)
words = set()
for node in ast.walk(tree):
    if isinstance(node, ast.Name):
        words.add(node.id)
    elif isinstance(node, ast.Attribute):
        words.add(node.attr)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        words.add(node.value)

with v.check("get_max_memory probes the listed device families and none of Neuron, XLA, TPU, PrivateUse1") as check:
    check.measure("accelerate version", accelerate.__version__)
    line = inspect.getsourcelines(accelerate.utils.get_max_memory)[1]
    check.measure("defined in", f"{accelerate.utils.get_max_memory.__module__}, line {line}")
    for family, probe in ENUMERATED.items():
        check.expect(probe in words, f"no {probe} in get_max_memory (the {family} branch)")
    check.expect("cuda" in words, "get_max_memory does not use torch.cuda")
    found = sorted(w for w in words if any(name in w.lower() for name in IGNORED))
    check.equal(", ".join(found) or "none", "none", "Neuron/XLA/TPU/PrivateUse1 names in get_max_memory")
    # Transformers' device_map="auto" path imports accelerate's function (5.x: behind a thin wrapper)
    check.measure("Transformers names bound to it", ", ".join(f"{m.__name__}.{a}" for m, a in callers) or "none")
    check.expect(bool(callers), "Transformers does not import accelerate's get_max_memory")

# %%
# Where ``device_map="auto"`` puts the model
# ------------------------------------------
# ``model.hf_device_map`` is only set for maps that span several devices
# (transformers 5.x), so we read the parameters' devices. The spy wraps the
# name Transformers calls and keeps the keys of each returned budget.

checkpoint = tiny_llama_checkpoint()  # see gallery/_tiny_llama.py

budgets = []
real_get_max_memory = accelerate.utils.get_max_memory


def spy_get_max_memory(*args, **kwargs):
    result = real_get_max_memory(*args, **kwargs)
    budgets.append(sorted(str(key) for key in result))
    return result


for module, name in callers:
    setattr(module, name, spy_get_max_memory)
try:
    model = AutoModelForCausalLM.from_pretrained(checkpoint.name, device_map="auto")
finally:
    for module, name in callers:
        setattr(module, name, real_get_max_memory)
placed_on = sorted({p.device.type for p in model.parameters()})
print("get_max_memory devices (per call):", budgets)
print("parameters on:", placed_on, "| hf_device_map:", getattr(model, "hf_device_map", "(not set: single device)"))
print("get_max_memory() here:", {key: f"{free / 2**30:.1f} GiB" for key, free in real_get_max_memory().items()})

with v.check("with device_map='auto' the model lands where get_max_memory's branches predict") as check:
    seen = "; ".join(", ".join(b) for b in budgets) or "not called"
    check.measure("get_max_memory devices seen by from_pretrained", seen)
    check.measure("parameter device types", ", ".join(placed_on))
    check.expect(bool(budgets), "from_pretrained(device_map='auto') never called accelerate's get_max_memory")
    if v.on_reference:
        check.unsupported(
            "the configured backend is the CPU, where the model lands on the CPU whatever get_max_memory enumerates; "
            "the placement is only informative with an accelerator present"
        )
    if v.device.type in ENUMERATED:
        # a family the statement says is enumerated: the model should use it
        check.equal(placed_on, [v.device.type], "parameter device types (enumerated family)")
    else:
        # Neuron, XLA, TPU or another PrivateUse1 device: the statement predicts the CPU only
        check.equal(placed_on, [v.reference_device.type], f"parameter device types ({v.device.type} is not enumerated)")

checkpoint.cleanup()
v.finish()
