"""A device of a type no backend here provides ('neuron', 'tpu'), made with torch's own support for Python backends.

torch lets its PrivateUse1 slot be set up as a backend written in Python
(``torch.utils.backend_registration``: the hooks, device guard and device
module torch asks a backend for), under the name a vendor's package gives it.
A breaking test runs a claim script on such a device, with the torchclaims
backend of that name resolved to the CPU's descriptor (distributed workers
included), and chooses what the device does: moves to it that keep tensors on
the CPU (``moves_keep_the_cpu``), moves that give ``OnThePythonDevice`` tensors
whose functions fall back to the CPU (``moves_fall_back``), and what creating a
tensor on it gives (``allocating_on_the_cpu``, ``allocating_on_the_device``).
No operator has a kernel of its own there. The slot can be set up once per
process and never undone, so ``set_up`` and the allocators run in the script's
own forked process only (what ``run_gallery`` calls ``in_child``).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import torch
from torch.utils._pytree import tree_leaves, tree_map

from torchclaims.backends import all_backends


def resolved_to_the_cpu(monkeypatch, name: str) -> None:
    """The backend ``name`` is the CPU's descriptor under that name, whose device is of type ``name``."""
    from torchclaims import backends

    stand_in = dataclasses.replace(all_backends()["cpu"], name=name)
    resolve, device = backends.resolve_backend, backends.Backend.device
    monkeypatch.setattr(
        backends, "resolve_backend", lambda requested: (stand_in, "") if requested == name else resolve(requested)
    )
    monkeypatch.setattr(
        backends.Backend, "device", lambda self: torch.device(name) if self.name == name else device(self)
    )


def set_up(name: str, device_count: int) -> None:
    """The PrivateUse1 slot as a Python backend named ``name``, whose device module (``torch.<name>``) counts
    ``device_count`` devices."""
    from torch.utils import backend_registration

    module = SimpleNamespace(
        is_available=lambda: True,
        is_initialized=lambda: True,
        current_device=lambda: 0,
        device_count=lambda: device_count,
        manual_seed_all=lambda seed: None,
        _is_in_bad_fork=lambda: False,
    )
    backend_registration._setup_privateuseone_for_python_backend(name, backend_module=module)


class OnThePythonDevice(torch.Tensor):
    """A tensor on the device that holds its values on the CPU: every function falls back to the CPU's kernel, and
    its results stay on the device until ``.cpu()``, except those in ``instead`` (function -> what it does on the
    device instead). Functions are caught before torch's C++ layer, so no kernel of the device is needed."""

    instead: dict = {}

    @staticmethod
    def __new__(cls, value, device):
        return torch.Tensor._make_wrapper_subclass(
            cls, value.shape, strides=value.stride(), dtype=value.dtype, device=device
        )

    def __init__(self, value, device):
        self.value = value

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") == "__get__":  # an attribute (.device, .shape...) of the tensor itself
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **(kwargs or {}))
        return cls.__torch_dispatch__(func, types, args, kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        device = next(x.device for x in tree_leaves((args, kwargs)) if isinstance(x, cls))
        args, kwargs = tree_map(lambda x: x.value if isinstance(x, cls) else x, (args, kwargs or {}))
        out = cls.instead.get(func, func)(*args, **kwargs)
        if func is torch.Tensor.cpu:
            return out
        return tree_map(lambda x: cls(x, device) if type(x) is torch.Tensor else x, out)


def _moves(monkeypatch, name: str, landing) -> None:
    to = torch.Tensor.to

    def moved(self, *args, **kwargs):
        target = args[0] if args else kwargs.get("device")
        on_it = isinstance(target, torch.device) and target.type == name
        return landing(self, target) if on_it else to(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "to", moved)


def moves_keep_the_cpu(monkeypatch, name: str) -> None:
    """``tensor.to(<device>)`` (and so ``module.to``) leaves the tensor on the CPU, as a plugin that silently keeps
    the work on the host would."""
    _moves(monkeypatch, name, lambda tensor, device: tensor)


def moves_fall_back(monkeypatch, name: str, instead: dict) -> None:
    """``tensor.to(<device>)`` gives an OnThePythonDevice, with ``instead`` for its functions."""
    monkeypatch.setattr(OnThePythonDevice, "instead", instead)
    _moves(monkeypatch, name, OnThePythonDevice)


def allocating_on_the_cpu() -> None:
    """The device's allocator hands back CPU memory: a tensor created on the device is a CPU tensor."""
    torch.library.impl("aten::empty.memory_format", "PrivateUse1")(
        lambda size, **options: torch.empty(size, dtype=options.get("dtype"))
    )


def allocating_on_the_device() -> None:
    """A tensor created on the device is an OnThePythonDevice."""
    torch.library.impl("aten::empty.memory_format", "PrivateUse1")(
        lambda size, **options: OnThePythonDevice(torch.empty(size, dtype=options.get("dtype")), options["device"])
    )
