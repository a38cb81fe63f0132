"""Sample inputs as PyTorch's test_compare_cpu makes them, without paying for it twice.

test_compare_cpu makes each sample *on the device* and copies it to the CPU.
Arguments a sample function creates without a device (tensor_split's index
tensor, which PyTorch requires on the CPU) therefore stay on the CPU in both
calls. Making samples on a lazy device is slow, though: on torch_xla every
random fill compiles a graph (18 s for the first 280 samples, against 0.1 s
on the CPU). So samples are made on the CPU, from seed 0, under a function
mode that marks every tensor the sample function made *for the device*: the
result of a factory given a device, and anything computed from such a tensor.
Marked tensors move to the device; unmarked ones stay on the CPU, exactly
where test_compare_cpu would have left them, with one exception: a boolean
mask goes to the device however it was made. PyTorch takes an index mask on
either side, and a model's mask lives beside the tensor it indexes, but
``index_put``'s sample function (the only one in op_db that makes a boolean
tensor without a device) leaves its mask on the CPU, so that
test_compare_cpu never runs the device's own mask path: on torch_xla that
path goes through ``aten::nonzero``, which falls back to the CPU.

Operators whose result depends on storage rather than values (``as_strided``
and its relatives, given a view of a larger tensor) get the whole storage on
the device and the same view of it, not a compact copy of the view.

A random operator can only be compared where the result does not depend on
the generator: the CPU reference runs under a dispatch mode that notes any
ATen operator tagged ``nondeterministic_seeded`` (bernoulli, normal, the
dropout kernels...). Such a sample is run on the device but its values are not
compared: OpInfo's own ``wrapper_set_seed`` seeds both sides with 42, but the
device's generator is not the CPU's.
"""

from __future__ import annotations

import itertools

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

FOR_DEVICE = "_torchclaims_for_device"  # attribute set on tensors made for the device
STORAGE_SENSITIVE = ("as_strided",)  # operators whose result depends on the storage behind a view
SAMPLE_DEVICE = "cpu"


class _MarkForDevice(TorchFunctionMode):
    """Marks tensors a sample function made for the device it was given."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = tree_leaves((args, kwargs))
        device_given = kwargs.get("device") is not None or any(
            isinstance(a, torch.device) or (isinstance(a, str) and a == SAMPLE_DEVICE) for a in inputs
        )
        if device_given or any(isinstance(a, torch.Tensor) and getattr(a, FOR_DEVICE, False) for a in inputs):
            for tensor in tree_leaves(out):
                if isinstance(tensor, torch.Tensor):
                    setattr(tensor, FOR_DEVICE, True)
        return out


def make_samples(op, dtype: torch.dtype, limit: int | None, requires_grad: bool = False) -> list:
    """The first ``limit`` samples (all when None), made on the CPU from seed 0, marked; with ``requires_grad``,
    as OpInfo makes them for its gradient tests (its floating inputs require gradients)."""
    from torch.testing._internal.common_utils import set_rng_seed

    set_rng_seed(0)  # torch, random and numpy: some sample functions draw from all three
    # op.sample_inputs() would wrap this generator in a tracker that walks the
    # stack with inspect.stack() for every sample (0.1 s each outside a unittest).
    with _MarkForDevice():
        return list(itertools.islice(op.sample_inputs_func(op, SAMPLE_DEVICE, dtype, requires_grad), limit))


def for_device(sample, device: torch.device, op_name: str):
    """The sample as test_compare_cpu's device call sees it; CPU-only arguments stay put."""
    keep_storage = op_name.startswith(STORAGE_SENSITIVE)

    def move(value):
        if not isinstance(value, torch.Tensor) or not (getattr(value, FOR_DEVICE, False) or value.dtype == torch.bool):
            return value
        base = value._base
        if keep_storage and base is not None and base.is_contiguous() and base.storage_offset() == 0:
            return _as_leaf(_copy(base, device).as_strided(value.size(), value.stride(), value.storage_offset()), value)
        return _as_leaf(_copy(value, device), value)

    return sample.transform(move)


def twin(sample):
    """A copy of the CPU sample for a second CPU call: what :func:`for_device` would move is copied with
    its marks, a view with the storage behind it (so its layout is exactly the original's); the rest is shared.
    """

    def copy(value):
        if not isinstance(value, torch.Tensor) or not getattr(value, FOR_DEVICE, False):
            return value
        base = value._base
        plain_view = base is not None and base.dtype == value.dtype and not (value.is_conj() or value.is_neg())
        if plain_view and base.is_contiguous() and base.storage_offset() == 0 and not base.is_conj():
            twin = base.clone().as_strided(value.size(), value.stride(), value.storage_offset())
        else:  # not a view, or one whose bits or dtype the storage does not carry (conj, real): its values
            twin = value.clone()  # keeps the strides of a dense tensor
        setattr(twin, FOR_DEVICE, True)
        return _as_leaf(twin, value)

    return sample.transform(copy)


def _as_leaf(copy: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """A copy (made under ``no_grad``, as ``SampleInput.transform`` runs) that requires gradients where the
    sample's tensor did: a leaf of its own, so that a backward pass stops at the sample's inputs."""
    return copy.requires_grad_(True) if value.requires_grad else copy


def _copy(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    # On the CPU itself, a separate copy, so that the two calls share nothing.
    return tensor.clone() if device.type == "cpu" else tensor.to(device)


class DrawsRandom(TorchDispatchMode):
    """Notes whether any ATen operator that consumes the generator ran, and which operators ran.

    The operators (``aten::name.overload``) are what a sweep's row records, so that
    ``torchclaims check`` matches a model's operators to rows exactly.
    """

    def __init__(self):
        super().__init__()
        self.drew = False
        self.operators: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if torch.Tag.nondeterministic_seeded in func.tags:
            self.drew = True
        self.operators.add(func.name())
        return func(*args, **(kwargs or {}))


def in_float64(sample):
    """The sample with its floating tensors in float64 and complex ones in complex128 (for the precise result)."""

    def widen(value):
        if not isinstance(value, torch.Tensor) or not (value.is_complex() or value.dtype.is_floating_point):
            return value
        wide = value.detach().to(torch.complex128 if value.is_complex() else torch.float64)
        if getattr(value, FOR_DEVICE, False):  # the same sample, so the same marks
            setattr(wide, FOR_DEVICE, True)
        return _as_leaf(wide, value)

    return sample.transform(widen)


def call(op, sample):
    return sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))


def to_cpu(value):
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu")
    if isinstance(value, (list, tuple)):  # torch.return_types structs too: compared as sequences
        return [to_cpu(x) for x in value]
    if isinstance(value, dict):
        return {k: to_cpu(x) for k, x in value.items()}
    return value
