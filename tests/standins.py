"""Stand-ins for vendor stacks that cannot be installed here (TorchNeuron, ROCm,
MPS, XPU) and for TorchTPU on a TPU host: test fixtures only, never a verdict.

Each stand-in gives torch what the vendor's documented API gives it, in one
process (``install`` patches torch for good, so tests run it in a child
process): the device type registered under its name (PrivateUse1 renamed, as
TorchNeuron and TorchTPU do), the ``torch.<device>`` module calls, what
``torch.accelerator`` reports, the distributions a fingerprint records, and
TorchTPU's refusal of ``torch.tpu.is_available()`` from user code. Every
synchronize goes to ``SYNCED``, so a test sees which call a descriptor made.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

SYNCED: list[str] = []

# TorchTPU 0.2.0's message when code other than torch or torch_tpu calls these (seen on a CPU host).
TPU_INTERNAL = (
    "{} is internal to TorchTPU and can only be called by the PyTorch framework (torch and torch_tpu). "
    "Use torch.accelerator.{} instead."
)

# distribution name -> version, as the vendors' wheels install them
DISTRIBUTIONS = {
    "neuron": {"torch-neuronx": "2.14.0", "neuronx-cc": "2.21.0"},
    "tpu": {"torch-tpu": "0.2.0", "libtpu": "0.0.52"},
    "xpu": {},
    "mps": {},
    "rocm": {},
}
DEVICE_NAMES = {"tpu": "TPU v6 lite", "rocm": "AMD Instinct MI300X", "xpu": "Intel(R) Data Center GPU Max 1550"}

TORCH_TPU_INIT = """
import standins
standins.register_private_use1("tpu", standins.torch_tpu_module(), available=standins.HARDWARE)
"""

HARDWARE = True  # whether the stand-in host has the device


def synced(name: str):
    return lambda *args, **kwargs: SYNCED.append(name)


def write_site(folder: Path, backend: str) -> Path:
    """A folder for sys.path with the stand-in distributions (dist-info) and, for
    tpu, a ``torch_tpu`` package whose import registers the device as the real one does."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, version in DISTRIBUTIONS[backend].items():
        info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if backend == "tpu":
        (folder / "torch_tpu").mkdir(exist_ok=True)
        (folder / "torch_tpu" / "__init__.py").write_text(TORCH_TPU_INIT)
    if backend == "neuron":  # what transformers and accelerate look for before asking torch.neuron
        (folder / "torch_neuronx").mkdir(exist_ok=True)
        (folder / "torch_neuronx" / "__init__.py").write_text("")
    return folder


def _accelerator(torch, device_type: str | None) -> None:
    """What torch.accelerator reports once a backend's hooks are registered."""
    torch.accelerator.is_available = lambda: device_type is not None
    torch.accelerator.current_accelerator = lambda check_available=False: (
        torch.device(device_type) if device_type else None
    )
    torch.accelerator.device_count = lambda: 1 if device_type else 0
    torch.accelerator.synchronize = synced("torch.accelerator.synchronize")


def register_private_use1(name: str, module: types.ModuleType, available: bool) -> None:
    """An out-of-tree backend's load: PrivateUse1 renamed, torch.<name> set, torch.accelerator told."""
    import torch

    if available:
        torch.utils.rename_privateuse1_backend(name)
    setattr(torch, name, module)
    _accelerator(torch, name if available else None)


def torch_tpu_module() -> types.ModuleType:
    tpu = types.ModuleType("torch.tpu")

    def internal(call: str):
        def refuse(*args, **kwargs):
            raise RuntimeError(TPU_INTERNAL.format(call, call))

        return refuse

    tpu.is_available = internal("is_available")
    tpu.device_count = internal("device_count")
    tpu.get_device_name = lambda device=None: DEVICE_NAMES["tpu"]
    tpu.synchronize = synced("torch.tpu.synchronize")
    return tpu


def torch_neuron_module() -> types.ModuleType:
    neuron = types.ModuleType("torch.neuron")
    neuron.is_available = lambda: HARDWARE
    neuron.device_count = lambda: 2 if HARDWARE else 0
    neuron.current_device = lambda: 0
    neuron.synchronize = synced("torch.neuron.synchronize")
    return neuron


def install(backend: str, hardware: bool = True) -> None:
    """Make this process look like a host with ``backend``'s stack (and its device, if ``hardware``)."""
    global HARDWARE
    HARDWARE = hardware
    import torch

    if backend == "neuron":  # torch-neuronx autoloads through its torch.backends entry point
        register_private_use1("neuron", torch_neuron_module(), available=hardware)
    elif backend == "tpu":  # the descriptor imports torch_tpu (TORCH_TPU_INIT), as torch's autoload would
        if "torch_tpu" in sys.modules:  # already loaded: the host changed under it
            register_private_use1("tpu", torch_tpu_module(), available=hardware)
    elif backend == "rocm":
        torch.version.hip, torch.version.cuda = "6.4.43482", None
        torch.__version__ = torch.__version__.split("+")[0] + "+rocm6.4"  # as the ROCm wheels name themselves
        torch.cuda.is_available = lambda: hardware
        torch.cuda.device_count = lambda: 1 if hardware else 0
        torch.cuda.get_device_name = lambda device=None: DEVICE_NAMES["rocm"]
        torch.cuda.synchronize = synced("torch.cuda.synchronize")
        _accelerator(torch, "cuda" if hardware else None)  # ROCm builds report the 'cuda' device type
    elif backend == "mps":
        torch.mps.is_available = lambda: hardware
        torch.mps.synchronize = synced("torch.mps.synchronize")
        _accelerator(torch, "mps" if hardware else None)
    elif backend == "xpu":
        torch.xpu.is_available = lambda: hardware
        torch.xpu.device_count = lambda: 1 if hardware else 0
        torch.xpu.get_device_name = lambda device=None: DEVICE_NAMES["xpu"]
        torch.xpu.synchronize = synced("torch.xpu.synchronize")
        _accelerator(torch, "xpu" if hardware else None)
    else:
        raise ValueError(f"no stand-in for {backend!r}")
    sys.modules.setdefault("standins", sys.modules[__name__])
