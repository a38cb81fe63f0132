"""
accelerate detects a multi-NeuronCore job and autocasts it to bfloat16
======================================================================

:claim-verdict:`accelerate-neuron-bf16-autocast`

The claim: in a multi-process launch on Trainium, accelerate picks the
``neuron`` process-group backend and ``DistributedType.MULTI_NEURON``, and
with ``mixed_precision="bf16"`` its autocast helper
(``get_mixed_precision_context_manager``, which ``Accelerator.autocast`` and
the prepared model's forward use) enters ``torch.autocast`` with the job's
device type and ``dtype=torch.bfloat16``, as for multi-GPU jobs.

This is a claim about accelerate's code path, so we exercise it on any
backend, as :ref:`sphx_glr_docs_auto_gallery_accelerate_dispatch_int_device.py`
does: accelerate's availability probes are replaced with stubs that report a
Neuron device and nothing else, ``torch.autocast`` with a recorder that keeps
its arguments, and the accelerator state with a stand-in that holds the
distributed type, the mixed-precision mode and the device. Control runs show
the recorder seeing other dtypes for other settings.
"""

import contextlib
import os
from importlib.metadata import version
from types import SimpleNamespace

import accelerate.state as accelerate_state
import accelerate.utils.modeling as accelerate_modeling
import torch
from accelerate.utils import DistributedType

from torchclaims.verify import verification

v = verification(
    "accelerate-neuron-bf16-autocast",
    inputs="LOCAL_RANK=0 with accelerate's probes stubbed to report a Neuron device only; "
    "get_mixed_precision_context_manager(native_amp=True) for stand-in states",
    method="PartialState._prepare_backend's (backend, distributed type); the arguments of the torch.autocast call "
    "the helper makes, recorded by a stand-in",
)

NEURON = "neuron"  # the device type the statement is about (data under test)
print("accelerate", version("accelerate"))

# %%
# Detection of a multi-NeuronCore launch
# --------------------------------------
# ``PartialState._prepare_backend`` chooses the process-group backend and the
# distributed type when ``LOCAL_RANK`` says the process is one of several.
# Every probe before the Neuron one reports nothing, whatever this machine has.

ABSENT = (
    "is_torch_xla_available",
    "is_mlu_available",
    "is_sdaa_available",
    "is_musa_available",
    "is_npu_available",
    "is_hpu_available",
    "is_xpu_available",
)


@contextlib.contextmanager
def neuron_launch():
    """accelerate.state sees LOCAL_RANK=0, a Neuron device and nothing else, inside the block."""
    saved = {name: getattr(accelerate_state, name) for name in (*ABSENT, "is_neuron_available")}
    saved_cuda, saved_rank = torch.cuda.is_available, os.environ.get("LOCAL_RANK")
    try:
        for name in ABSENT:
            setattr(accelerate_state, name, lambda *a, **k: False)
        accelerate_state.is_neuron_available = lambda *a, **k: True
        torch.cuda.is_available = lambda: False
        os.environ["LOCAL_RANK"] = "0"
        yield
    finally:
        for name, probe in saved.items():
            setattr(accelerate_state, name, probe)
        torch.cuda.is_available = saved_cuda
        if saved_rank is None:
            os.environ.pop("LOCAL_RANK", None)
        else:
            os.environ["LOCAL_RANK"] = saved_rank


with v.check("a multi-process launch with a Neuron device gets the 'neuron' backend and MULTI_NEURON") as check:
    with neuron_launch():
        backend, distributed_type = accelerate_state.PartialState._prepare_backend(None, cpu=False, sagemaker_dp=False)
    check.equal(backend, NEURON, "process-group backend accelerate picks")
    check.equal(str(distributed_type), str(DistributedType.MULTI_NEURON), "distributed type accelerate picks")

# %%
# The autocast helper
# -------------------
# The stand-in state has what the helper reads; the recorder takes the place
# of ``torch.autocast`` (a ``neuron`` autocast needs torch-neuronx) and
# returns a context that does nothing.


def autocast_call(distributed_type, mixed_precision, device_type=NEURON):
    """The keyword arguments the helper passes to torch.autocast for such a state."""
    calls = []
    state = SimpleNamespace(
        distributed_type=distributed_type, mixed_precision=mixed_precision, device=SimpleNamespace(type=device_type)
    )
    saved_state, saved_autocast = accelerate_modeling.AcceleratorState, torch.autocast
    try:
        accelerate_modeling.AcceleratorState = lambda: state
        torch.autocast = lambda **kwargs: calls.append(kwargs) or contextlib.nullcontext()
        accelerate_modeling.get_mixed_precision_context_manager(native_amp=True)
    finally:
        accelerate_modeling.AcceleratorState, torch.autocast = saved_state, saved_autocast
    return calls


with v.check(
    "with MULTI_NEURON and mixed_precision='bf16', the helper autocasts the neuron device to bfloat16"
) as check:
    calls = autocast_call(DistributedType.MULTI_NEURON, "bf16")
    check.measure("arguments of the torch.autocast calls", str(calls))
    check.equal(len(calls), 1, "torch.autocast calls")
    if calls:
        check.equal(calls[0].get("device_type"), NEURON, "device_type passed to torch.autocast")
        check.equal(str(calls[0].get("dtype")), str(torch.bfloat16), "dtype passed to torch.autocast")

# %%
# Controls
# --------
# fp16 gives float16 for the same job; a distributed type outside the helper's
# bfloat16 list (DeepSpeed) gets no dtype at all. Both show that the recorder
# sees what the helper decides.

with v.check("controls: fp16 gives float16, and a type outside the bfloat16 list gets no dtype") as check:
    fp16 = autocast_call(DistributedType.MULTI_NEURON, "fp16")
    outside = autocast_call(DistributedType.DEEPSPEED, "bf16")
    check.measure("MULTI_NEURON, fp16", str(fp16))
    check.measure("DEEPSPEED, bf16", str(outside))
    check.equal([str(c.get("dtype")) for c in fp16], [str(torch.float16)], "dtype for MULTI_NEURON with fp16")
    check.equal([c.get("dtype") for c in outside], [None], "dtype for DEEPSPEED with bf16")

v.finish()
