"""
Transformers turns a string ``device_map`` into a PyTorch device
================================================================

:claim-verdict:`hf-device-strings`

The claim: Transformers addresses each backend by its PyTorch device string
(``neuron`` for Trainium, ``tpu`` for TPU, ``cuda`` for AMD GPUs on a ROCm
build). A string ``device_map`` goes through ``torch.device(...)``, so
``from_pretrained(..., device_map="neuron")`` or ``"tpu"`` raises ``ValueError``
when the backend package is not installed and places the model on that device
when it is.

We save a tiny Llama built from a config (nothing is downloaded) and reload it
with ``from_pretrained(tmpdir, device_map=...)``:

* for ``neuron`` and ``tpu``, whether the backend package is importable decides
  what we expect: without it a ``ValueError`` whose cause is ``torch.device``
  rejecting the string; with it, the parameters on that device;
* for the configured backend's own device string (``cpu`` here, ``cuda`` on
  CUDA and ROCm, ...), the parameters on the configured device.
"""

import importlib.util
import time

import torch
import transformers
from transformers import AutoModelForCausalLM
from transformers.utils import logging as hf_logging

from _tiny_llama import tiny_llama_checkpoint

from torchclaims.verify import verification

hf_logging.set_verbosity_error()

v = verification(
    "hf-device-strings",
    model="tiny Llama from a config (2 layers, hidden 32, vocab 128), saved to a temporary directory",
    inputs="device_map strings 'neuron', 'tpu' and the configured backend's device type",
    method="from_pretrained(tmpdir, device_map=...): the exception raised, or the device type of every parameter",
)

# %%
# A tiny checkpoint on disk
# -------------------------
# ``from_pretrained`` needs a directory; a two-layer Llama with a 128-token
# vocabulary takes a few kilobytes.

checkpoint = tiny_llama_checkpoint()  # see gallery/_tiny_llama.py


def load(device_map):
    """Reload the checkpoint; return (parameter device types, exception)."""
    try:
        model = AutoModelForCausalLM.from_pretrained(checkpoint.name, device_map=device_map)
    except Exception as exc:  # the exception *is* the evidence for a missing backend
        return None, exc
    return sorted({p.device.type for p in model.parameters()}), None


# %%
# ``neuron`` and ``tpu``: rejected without their package, used with it
# ---------------------------------------------------------------------
# The strings are data under test, not the device this script runs on. The
# backend packages are ``torch_neuronx`` (TorchNeuron) and ``torch_tpu``
# (TorchTPU); either registers its device type with PyTorch when imported.

NAMED_BACKENDS = {"neuron": "torch_neuronx", "tpu": "torch_tpu"}

for name, package in NAMED_BACKENDS.items():
    installed = importlib.util.find_spec(package) is not None
    expected = "places the model there" if installed else "raises ValueError"
    with v.check(f"device_map='{name}' {expected} ({package} {'' if installed else 'not '}installed)") as check:
        started = time.perf_counter()
        devices, exc = load(name)
        check.measure("from_pretrained returned or raised after", round(time.perf_counter() - started, 3), unit="s")
        check.measure("outcome", f"{type(exc).__name__}: {exc}" if exc else f"parameters on {devices}")
        if installed:
            check.expect(exc is None, f"{package} is installed but loading raised {type(exc).__name__}: {exc}")
            check.expect(devices == [name], f"parameters on {devices}, expected only {name!r}")
        else:
            got = type(exc).__name__ if exc else "no exception"
            check.expect(isinstance(exc, ValueError), f"expected ValueError, got {got}")
            check.expect(
                isinstance(exc, ValueError) and "When passing device_map as a string" in str(exc),
                "the ValueError is not the device_map validation message of check_and_set_device_map",
            )
            # the cause: torch.device() itself does not know the device type
            cause = exc.__context__ if exc is not None else None
            check.expect(
                isinstance(cause, RuntimeError),
                f"the ValueError's context is {type(cause).__name__}, not torch.device's RuntimeError",
            )
            try:
                torch.device(name)
                parses = True
            except RuntimeError:
                parses = False
            check.equal(parses, False, f"torch.device({name!r}) parses")

# %%
# The configured backend's own device string
# ------------------------------------------
# The statement names ``cpu``/``cuda``-style device names (the error message's
# own examples) and ``neuron``/``tpu``. ``check_and_set_device_map`` turns the
# string into ``{"": torch.device(...)}``; the loaded parameters should all be on
# the configured device. ``xla`` is not in Transformers' table of device strings,
# so on an XLA backend we only print what happens.

STATEMENT_DEVICE_TYPES = ("cpu", "cuda", "neuron", "tpu")
device_string = v.device.type

if device_string in STATEMENT_DEVICE_TYPES:
    with v.check(f"device_map='{device_string}' (the configured backend) places the model on {device_string}") as check:
        try:  # where Transformers 5 validates the string; older releases do it inside from_pretrained
            from transformers.integrations.accelerate import check_and_set_device_map
        except ImportError:
            check.note(f"transformers {transformers.__version__} has no check_and_set_device_map; placement checked only")
        else:
            resolved = check_and_set_device_map(device_string)
            check.measure("check_and_set_device_map result", repr(resolved))
            device = resolved.get("") if isinstance(resolved, dict) else None
            check.expect(
                isinstance(device, torch.device) and device.type == device_string,
                f"the string was resolved to {resolved!r}, not {{'': torch.device('{device_string}...')}}",
            )
        devices, exc = load(device_string)
        check.expect(exc is None, f"loading raised {type(exc).__name__}: {exc}")
        check.equal(devices, [device_string], "device types of the loaded parameters")
        if torch.version.hip:
            check.note("ROCm build: the AMD GPU is addressed with the 'cuda' device string")
else:
    devices, exc = load(device_string)
    outcome = f"{type(exc).__name__}: {exc}" if exc else f"parameters on {devices}"
    print(f"device_map={device_string!r} (outside the statement): {outcome}")

checkpoint.cleanup()
v.finish()
