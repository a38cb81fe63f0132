"""Backend descriptors: how to detect, address and synchronise each accelerator.

A descriptor is plain data plus three small functions. This module imports torch
only inside those functions, so claim records can be validated without torch.
Other packages add descriptors through the ``torchclaims.backends`` entry-point
group (each entry point names a :class:`Backend` object).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import os
import platform
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import UsageError

BACKEND_ENV_VAR = "TORCHCLAIMS_BACKEND"
DEFAULT_BACKEND = "cpu"
ENTRY_POINT_GROUP = "torchclaims.backends"


@dataclass(frozen=True)
class FallbackSwitch:
    """A backend's own setting that makes what it cannot run raise, instead of running it elsewhere.

    It is read when the backend loads, so a run that wants it sets it before the process imports torch."""

    variable: str
    value: str  # the value that forbids the fallback
    default: bool  # whether the fallback is forbidden where the variable is unset
    covers: str  # what it forbids, in the vendor's words
    eager: bool = True  # whether it covers the operators an eager step dispatches (False: compiled graphs only)

    def in_force(self, environ) -> bool:
        return environ.get(self.variable, self.value if self.default else None) == self.value

    def __str__(self) -> str:
        return f"{self.variable}={self.value}" + (" (the default)" if self.default else "")


@dataclass(frozen=True)
class Backend:
    """What torchclaims needs to know to run a claim on one kind of device."""

    name: str
    description: str
    device_type: str  # the torch device type string code uses ("cuda" on ROCm)
    dist_backend: str | None  # torch.distributed process-group backend
    compile_backend: str  # torch.compile backend for this device
    packages: tuple[str, ...]  # distributions whose versions a result records
    env_prefixes: tuple[str, ...] = ()  # environment variables a result records
    modules: tuple[str, ...] = ()  # imported before use (plugins that register the device)
    dist_init_method: str | None = None  # None: env:// with a loopback address
    # The process-group backend that lets several ranks share one device, where dist_backend needs one
    # device per rank (NCCL refuses two ranks on one GPU; gloo takes CUDA tensors); None: no such one.
    shared_device_dist_backend: str | None = None
    primary_package: str = "torch"  # the version that names a column of the matrix
    hardware: str = ""  # what a reader calls what a claim about this backend is about ("AWS Trainium")
    runtime: str | None = None  # the accelerator runtime a fitting torch build records ("cuda", "hip")
    device_noun: str = (
        ""  # the hardware a run with only the vendor package lacks ("TPU"); see vendor_packages_without_device
    )
    fallback_switch: FallbackSwitch | None = None  # None: the backend has no CPU fallback, or no switch forbids it
    unavailable: Callable[[], str | None] = field(default=lambda: None, repr=False)
    synchronize: Callable[[], None] = field(default=lambda: None, repr=False)
    device_name: Callable[[], str] = field(default=lambda: "unknown", repr=False)

    @property
    def reader_name(self) -> str:
        """The hardware or stack, as pages name it next to a verdict."""
        return self.hardware or self.name

    def import_modules(self) -> None:
        for module in self.modules:
            importlib.import_module(module)

    def check_available(self) -> str | None:
        """None when usable here, otherwise the reason it is not."""
        missing = [m for m in self.modules if importlib.util.find_spec(m) is None]
        if missing:
            return f"package {', '.join(missing)} is not installed"
        try:
            self.import_modules()
            return self.unavailable()
        except Exception as exc:  # a broken plugin is "not available", with why
            return f"{type(exc).__name__}: {exc}"

    def smoke(self) -> str | None:
        """None when the device answers here: available, and a synchronize
        (which starts the runtime) returns; otherwise why not."""
        why = self.check_available()
        if why is None:
            try:
                self.synchronize()
            except Exception as exc:  # noqa: BLE001 - the runtime's own words are the answer
                why = f"synchronizing the device failed: {type(exc).__name__}: {exc}"
        return why

    def device(self):
        import torch

        if self.name == "xla":
            import torch_xla

            return torch_xla.device()
        return torch.device(self.device_type)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cuda_unavailable(want_hip: bool) -> Callable[[], str | None]:
    def check() -> str | None:
        import torch

        is_hip = torch.version.hip is not None
        if is_hip != want_hip:
            return "this torch build is for " + (
                "ROCm (HIP)" if is_hip else "CUDA" if torch.version.cuda else "CPU only"
            )
        with warnings.catch_warnings(record=True) as said:  # torch warns with the driver's own words
            warnings.simplefilter("always")
            available = torch.cuda.is_available()
        if not available:
            words = "; ".join(dict.fromkeys(str(w.message).strip() for w in said))[:500]
            return "torch.cuda.is_available() is False" + (f" ({words})" if words else "")
        return None

    return check


def _module_unavailable(attribute: str) -> Callable[[], str | None]:
    """For torch.<attribute>.is_available() style backends (mps, xpu, neuron, tpu)."""

    def check() -> str | None:
        import torch

        module = getattr(torch, attribute, None)
        if module is None or not hasattr(module, "is_available"):
            return f"torch.{attribute} does not exist in this torch build"
        if not module.is_available():
            return f"torch.{attribute}.is_available() is False"
        return None

    return check


def _module_sync(attribute: str) -> Callable[[], None]:
    def sync() -> None:
        import torch

        getattr(torch, attribute).synchronize()

    return sync


def _accelerator_unavailable(device_type: str, hardware: str) -> Callable[[], str | None]:
    """For PrivateUse1 plugins (TorchTPU, TorchNeuron): ask torch.accelerator, the
    device-agnostic API they point users to. TorchTPU's own torch.tpu.is_available()
    is internal and raises when anything but torch or torch_tpu calls it."""

    def check() -> str | None:
        import torch

        accelerator = getattr(torch, "accelerator", None)
        if accelerator is None:
            return f"torch {torch.__version__} has no torch.accelerator (PyTorch 2.6 or newer has it)"
        if not accelerator.is_available():
            return f"no {hardware} on this host: torch.accelerator.is_available() is False"
        current = accelerator.current_accelerator()
        if current is None or current.type != device_type:
            return f"the accelerator torch found here is {getattr(current, 'type', None)!r}, not {device_type!r}"
        return None

    return check


def _accelerator_sync() -> None:
    import torch

    torch.accelerator.synchronize()


def _cuda_name() -> str:
    import torch

    return torch.cuda.get_device_name(0)


def _xla_unavailable() -> str | None:
    import torch_xla.runtime as xr

    if not os.environ.get("PJRT_DEVICE"):
        return "PJRT_DEVICE is not set (use PJRT_DEVICE=CPU for XLA on the CPU)"
    return None if xr.device_type() else "torch_xla found no PJRT device"


def _xla_sync() -> None:
    import torch_xla

    torch_xla.sync()


def _xla_name() -> str:
    import torch_xla.runtime as xr

    kind = xr.device_type()
    return f"XLA {kind}" + (f" ({_cpu_name()})" if kind == "CPU" else "")


def _generic_name(attribute: str) -> Callable[[], str]:
    """torch.<attribute>.get_device_name(0), else the name in its device properties
    (torch.tpu has get_device_properties only), else the attribute."""

    def name() -> str:
        import torch

        module = getattr(torch, attribute)
        getter = getattr(module, "get_device_name", None)
        if getter is not None:
            return getter(0)
        properties = getattr(module, "get_device_properties", None)
        found = getattr(properties(0), "name", None) if properties is not None else None
        return str(found) if found else attribute

    return name


BUILTIN_BACKENDS: tuple[Backend, ...] = (
    Backend(
        name="cpu",
        description="Plain PyTorch on the CPU: the reference every other backend is compared with.",
        hardware="the CPU",
        device_type="cpu",
        dist_backend="gloo",
        compile_backend="inductor",
        packages=("torch", "numpy", "transformers", "accelerate"),
        env_prefixes=("OMP_NUM_THREADS", "MKL_", "TORCH_", "PYTORCH_"),
        device_name=_cpu_name,
    ),
    Backend(
        name="cuda",
        description="NVIDIA GPUs through torch.cuda.",
        hardware="NVIDIA GPUs",
        device_type="cuda",
        dist_backend="nccl",
        shared_device_dist_backend="gloo",
        compile_backend="inductor",
        packages=("torch", "numpy", "transformers", "accelerate", "triton"),
        env_prefixes=("CUDA_", "CUBLAS_", "NCCL_", "TORCH_", "PYTORCH_"),
        runtime="cuda",
        unavailable=_cuda_unavailable(want_hip=False),
        synchronize=_module_sync("cuda"),
        device_name=_cuda_name,
    ),
    Backend(
        name="rocm",
        description="AMD GPUs: ROCm builds of PyTorch reuse torch.cuda and the 'cuda' device type.",
        hardware="AMD GPUs",
        device_type="cuda",
        dist_backend="nccl",
        shared_device_dist_backend="gloo",
        compile_backend="inductor",
        packages=("torch", "numpy", "transformers", "accelerate", "pytorch-triton-rocm"),
        env_prefixes=("HIP_", "ROCM_", "HSA_", "PYTORCH_", "TORCH_"),
        runtime="hip",
        unavailable=_cuda_unavailable(want_hip=True),
        synchronize=_module_sync("cuda"),
        device_name=_cuda_name,
    ),
    Backend(
        name="mps",
        description="Apple GPUs through Metal Performance Shaders.",
        hardware="Apple GPUs",
        device_type="mps",
        dist_backend="gloo",
        compile_backend="inductor",
        packages=("torch", "numpy", "transformers", "accelerate"),
        env_prefixes=("PYTORCH_MPS_", "PYTORCH_ENABLE_MPS_FALLBACK", "TORCH_"),
        fallback_switch=FallbackSwitch(
            "PYTORCH_ENABLE_MPS_FALLBACK", "0", True, "an operator without an MPS kernel raises NotImplementedError"
        ),
        unavailable=_module_unavailable("mps"),
        synchronize=_module_sync("mps"),
        device_name=lambda: f"Apple MPS ({platform.machine()})",
    ),
    Backend(
        name="xpu",
        description="Intel GPUs through torch.xpu.",
        hardware="Intel GPUs",
        device_type="xpu",
        dist_backend="xccl",
        compile_backend="inductor",
        packages=("torch", "numpy", "transformers", "accelerate", "intel-extension-for-pytorch"),
        env_prefixes=("ZE_", "SYCL_", "ONEAPI_", "TORCH_", "PYTORCH_"),
        fallback_switch=FallbackSwitch(
            "PYTORCH_ENABLE_XPU_FALLBACK", "0", True, "an operator without an XPU kernel raises NotImplementedError"
        ),
        unavailable=_module_unavailable("xpu"),
        synchronize=_module_sync("xpu"),
        device_name=_generic_name("xpu"),
    ),
    Backend(
        name="xla",
        description="torch_xla: lazy tensors compiled by XLA per graph and input shape (PJRT runtime).",
        hardware="torch_xla (TPUs and other PJRT devices)",
        device_type="xla",
        dist_backend="xla",
        dist_init_method="xla://",
        compile_backend="openxla",
        primary_package="torch_xla",
        modules=("torch_xla",),
        packages=("torch", "torch_xla", "libtpu", "jax", "numpy", "transformers", "accelerate"),
        env_prefixes=("PJRT_", "XLA_", "TPU_", "TORCH_", "PYTORCH_"),
        unavailable=_xla_unavailable,
        synchronize=_xla_sync,
        device_name=_xla_name,
    ),
    Backend(
        name="neuron",
        description="AWS Trainium through TorchNeuron (torch-neuronx 2.14+, a PrivateUse1 backend).",
        hardware="AWS Trainium (TorchNeuron)",
        device_type="neuron",
        dist_backend="neuron",
        compile_backend="neuron",
        primary_package="torch-neuronx",
        packages=("torch", "torch-neuronx", "neuronx-cc", "numpy", "transformers", "accelerate"),
        env_prefixes=("NEURON_", "TORCH_NEURONX_", "TORCH_", "PYTORCH_"),
        fallback_switch=FallbackSwitch(
            "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION",
            "1",
            True,
            "a torch.compile graph that fails to compile raises instead of running eagerly",
            eager=False,
        ),
        device_noun="Trainium device",
        unavailable=_accelerator_unavailable("neuron", "Trainium (Neuron) device"),
        synchronize=_accelerator_sync,
        device_name=_generic_name("neuron"),
    ),
    Backend(
        name="tpu",
        description="Google TPUs through TorchTPU (torch_tpu, a PrivateUse1 backend).",
        hardware="Google TPUs (TorchTPU)",
        device_type="tpu",
        dist_backend="tpu_dist",
        compile_backend="tpu",
        primary_package="torch-tpu",
        modules=("torch_tpu",),
        packages=("torch", "torch-tpu", "libtpu", "numpy", "transformers", "accelerate"),
        env_prefixes=("TPU_", "LIBTPU_", "TORCH_", "PYTORCH_"),
        device_noun="TPU",
        unavailable=_accelerator_unavailable("tpu", "Google TPU"),
        synchronize=_accelerator_sync,
        device_name=_generic_name("tpu"),
    ),
)

BACKEND_NAMES: tuple[str, ...] = tuple(b.name for b in BUILTIN_BACKENDS)
# What `auto` tries, most specific first; cpu always works.
AUTO_ORDER: tuple[str, ...] = ("cuda", "rocm", "xpu", "mps", "neuron", "tpu", "xla", "cpu")


def vendor_packages_without_device(backend: str, packages: dict[str, str]) -> list[tuple[Backend, str]]:
    """The vendor plugins a run on ``backend`` had installed although it did not run
    on their device (torch-tpu on a host without a TPU), with their versions: such a
    run is evidence about the vendor's package, never about its hardware."""
    return [
        (b, packages[b.primary_package])
        for b in all_backends().values()
        if b.device_noun and b.name != backend and b.primary_package in packages
    ]


# The plugins' distributions (torch-tpu and its libtpu, torch_xla, torch-neuronx...),
# recorded in every fingerprint where installed (torchclaims.evidence.fingerprint).
VENDOR_PACKAGES: tuple[str, ...] = tuple(
    dict.fromkeys(
        p
        for b in BUILTIN_BACKENDS
        if b.primary_package != "torch"
        for p in b.packages
        if p not in BUILTIN_BACKENDS[0].packages
    )
)


def all_backends() -> dict[str, Backend]:
    """Built-in descriptors plus those other packages register as entry points."""
    return {**{b.name: b for b in BUILTIN_BACKENDS}, **{b.name: b for b in registered_backends()}}


@functools.cache
def registered_backends() -> tuple[Backend, ...]:
    """The descriptors of other packages, read once per process: scanning every
    installed distribution's entry points takes milliseconds, and pages ask for
    the backends thousands of times."""
    found = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        backend = entry.load()
        if not isinstance(backend, Backend):
            raise UsageError(f"entry point {entry.name!r} in {ENTRY_POINT_GROUP} is not a torchclaims Backend")
        found.append(backend)
    return tuple(found)


def requested_backend(explicit: str | None = None) -> str:
    """The backend name asked for: an explicit value, else the environment, else cpu."""
    return explicit or os.environ.get(BACKEND_ENV_VAR) or DEFAULT_BACKEND


def resolve_backend(name: str) -> tuple[Backend, str]:
    """Return the descriptor for ``name`` (or what ``auto`` picks) and why it was chosen."""
    backends = all_backends()
    if name != "auto":
        if name not in backends:
            raise UsageError(f"unknown backend {name!r}; choose one of: auto, {', '.join(backends)}")
        return backends[name], f"{name} was requested"
    skipped = []
    for candidate in AUTO_ORDER + tuple(n for n in backends if n not in AUTO_ORDER):
        reason = backends[candidate].check_available()
        if reason is None:
            tried = "; ".join(skipped) or "it is the first candidate"
            return backends[
                candidate
            ], f"auto picked {candidate} (not available: {tried})" if skipped else f"auto picked {candidate} ({tried})"
        skipped.append(f"{candidate}: {reason}")
    raise UsageError("auto found no usable backend: " + "; ".join(skipped))
