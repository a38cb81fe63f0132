"""
Transformers rejects device_map='neuron' or 'tpu' without the backend package
=============================================================================

:claim-verdict:`hf-device-strings`

The claim: Transformers turns a string ``device_map`` into a
``torch.device``, and PyTorch knows the ``neuron`` and ``tpu`` device types
only once their backend packages (``torch_neuronx``, ``torch_tpu``) are
loaded; so without the package ``from_pretrained(..., device_map="neuron")``
or ``"tpu"`` raises ``ValueError``, whose cause is ``torch.device`` rejecting
the string.

We save a tiny Llama built from a config (nothing is downloaded) and reload it
with ``from_pretrained(tmpdir, device_map=...)`` for each of the two strings.
Where a backend package has registered its device type (its string parses),
this claim does not apply to it; what loading then does is the subject of
:ref:`sphx_glr_docs_auto_gallery_hf_device_map_backend_placement.py`. A
package that is loaded but registers nothing (torch-tpu on a host without a
TPU) leaves the string unknown to PyTorch, so the check runs.
"""

import importlib.util
import sys
import time

import torch
from _tiny_llama import load_devices, tiny_llama_checkpoint
from transformers.utils import logging as hf_logging

from torchclaims.verify import verification

hf_logging.set_verbosity_error()

v = verification(
    "hf-device-strings",
    model="tiny Llama from a config (2 layers, hidden 32, vocab 128), saved to a temporary directory",
    inputs="device_map strings 'neuron' and 'tpu'",
    method="from_pretrained(tmpdir, device_map=...): the exception raised and its cause",
)

# %%
# A tiny checkpoint on disk
# -------------------------
# ``from_pretrained`` needs a directory; a two-layer Llama with a 128-token
# vocabulary takes a few kilobytes.

checkpoint = tiny_llama_checkpoint()  # see gallery/_tiny_llama.py

# %%
# ``neuron`` and ``tpu`` without their package
# --------------------------------------------
# The strings are data under test, not the device this script runs on. The
# backend packages are ``torch_neuronx`` (TorchNeuron) and ``torch_tpu``
# (TorchTPU); either registers its device type with PyTorch when loaded.

NAMED_BACKENDS = {"neuron": "torch_neuronx", "tpu": "torch_tpu"}


def parsed(name):
    try:
        torch.device(name)
        return "parses"
    except RuntimeError as error:
        return f"RuntimeError: {str(error).splitlines()[0][:200]}"


for name, package in NAMED_BACKENDS.items():
    with v.check(f"without {package}, device_map='{name}' raises ValueError from torch.device") as check:
        loaded = package in sys.modules
        check.measure(f"{package} installed", importlib.util.find_spec(package) is not None)
        check.measure(f"{package} loaded in this process", loaded)
        if loaded and parsed(name) == "parses":
            check.unsupported(
                f"{package} has registered '{name}' here, so it is a real device; see hf-device-map-backend-placement"
            )
        if loaded:
            check.note(
                f"{package} is loaded but has registered no '{name}' device (no such hardware here): PyTorch does "
                "not know the string"
            )
        started = time.perf_counter()
        devices, exc = load_devices(checkpoint.name, name)
        check.measure("from_pretrained returned or raised after", round(time.perf_counter() - started, 3), unit="s")
        check.measure("outcome", f"{type(exc).__name__}: {exc}" if exc else f"parameters on {devices}")
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
        parses = parsed(name)
        check.measure(f"torch.device({name!r})", parses, tolerance="RuntimeError")
        check.expect(parses.startswith("RuntimeError"), f"torch.device({name!r}) parses without {package}")

checkpoint.cleanup()
v.finish()
