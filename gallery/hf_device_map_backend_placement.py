"""
device_map with the backend's device string places the model on that device
===========================================================================

:claim-verdict:`hf-device-map-backend-placement`

The claim: with the backend's package loaded,
``from_pretrained(..., device_map=<the backend's device string>)`` places
every parameter on that device: ``"neuron"`` with torch-neuronx on Trainium,
``"tpu"`` with torch-tpu on a TPU host, ``"cuda"`` on NVIDIA GPUs and on AMD
GPUs with a ROCm build of PyTorch.

We save a tiny Llama built from a config (nothing is downloaded), ask
Transformers how it resolves the configured backend's device string, and
reload the checkpoint with that string as ``device_map``. Only the three
device strings above are part of the statement; on any other backend (the
CPU, where a model lands without any ``device_map``, and torch_xla's ``xla``,
which Transformers' table of device strings does not list) the claim cannot
be checked.
"""

import torch
import transformers
from _tiny_llama import load_devices, tiny_llama_checkpoint
from transformers.utils import logging as hf_logging

from torchclaims.verify import verification

hf_logging.set_verbosity_error()

v = verification(
    "hf-device-map-backend-placement",
    model="tiny Llama from a config (2 layers, hidden 32, vocab 128), saved to a temporary directory",
    inputs="device_map=<the configured backend's device type>",
    method="check_and_set_device_map(<string>); from_pretrained(tmpdir, device_map=<string>): device type of every "
    "parameter",
)

STATEMENT_DEVICE_STRINGS = ("neuron", "tpu", "cuda")  # the device strings the statement names (data under test)
device_string = v.device.type
print(f"configured device type: {device_string!r}; torch.version.hip = {torch.version.hip}")


def in_statement(check):
    if device_string not in STATEMENT_DEVICE_STRINGS:
        check.unsupported(
            f"the configured device type {device_string!r} is not one of the statement's device strings "
            f"({', '.join(STATEMENT_DEVICE_STRINGS)})"
        )


# %%
# How Transformers reads the string
# ---------------------------------
# ``check_and_set_device_map`` (Transformers 5) turns a string into
# ``{"": torch.device(...)}``, the whole model on one device.

with v.check(f"Transformers resolves device_map='{device_string}' to that device") as check:
    in_statement(check)
    try:
        from transformers.integrations.accelerate import check_and_set_device_map
    except ImportError:
        check.unsupported(f"transformers {transformers.__version__} has no check_and_set_device_map")
    resolved = check_and_set_device_map(device_string)
    check.measure("check_and_set_device_map result", repr(resolved))
    device = resolved.get("") if isinstance(resolved, dict) else None
    check.expect(
        isinstance(device, torch.device) and device.type == device_string,
        f"the string was resolved to {resolved!r}, not {{'': torch.device('{device_string}...')}}",
    )

# %%
# Where the parameters land
# -------------------------

checkpoint = tiny_llama_checkpoint()  # see gallery/_tiny_llama.py

with v.check(f"from_pretrained(device_map='{device_string}') places every parameter on {device_string}") as check:
    in_statement(check)
    devices, exc = load_devices(checkpoint.name, device_string)
    check.expect(exc is None, f"loading raised {type(exc).__name__}: {exc}")
    check.equal(devices, [device_string], "device types of the loaded parameters")
    if torch.version.hip:
        check.note("ROCm build: the AMD GPU is addressed with the 'cuda' device string")

checkpoint.cleanup()
v.finish()
