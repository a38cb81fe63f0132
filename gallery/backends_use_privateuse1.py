"""
TorchNeuron adds its device through PyTorch's PrivateUse1 slot
==============================================================

:claim-verdict:`backends-use-privateuse1`

The claim: TorchNeuron adds its device to PyTorch through its PrivateUse1
slot (AWS's words). With torch-neuronx loaded, the PrivateUse1 backend is
named ``neuron``, and tensors on that device are dispatched with the
``PrivateUse1`` dispatch key. The script checks the same of torch_tpu on a
TPU (``tpu``): our own reading of its loader, outside AWS's claim.

We read the PrivateUse1 backend's name in this process, where the configured
backend's package is loaded, and the dispatch key of the device type, and
create a tensor on the device to see the dispatch keys it carries. Only a
TorchNeuron or a TorchTPU run can check this; that stock PyTorch has no
``neuron`` or ``tpu`` device of its own is
:ref:`sphx_glr_docs_auto_gallery_privateuse1_named_device.py`.
"""

import torch

from torchclaims.verify import verification

v = verification(
    "backends-use-privateuse1",
    inputs="the configured device type; one tensor of 4 ones created on it",
    method="torch._C._get_privateuse1_backend_name(), torch._C._dispatch_key_for_device() and the tensor's "
    "dispatch keys, compared with the configured device type",
)

# The device types the statement says are PrivateUse1 backends (data under test).
PRIVATEUSE1_BACKENDS = {"neuron": "torch-neuronx", "tpu": "torch_tpu"}

device_type = v.device.type
slot_name = torch._C._get_privateuse1_backend_name()
key = torch._C._dispatch_key_for_device(device_type)
print(f"configured device type {device_type!r}; PrivateUse1 backend name {slot_name!r}; dispatch key {key!r}")


def named_backend(check):
    check.measure("PrivateUse1 backend name in this process", slot_name)
    check.measure(f"dispatch key for {device_type!r}", key, tolerance="PrivateUse1")
    if device_type not in PRIVATEUSE1_BACKENDS:
        check.unsupported(
            f"the configured device type {device_type!r} is not one the statement names "
            f"({', '.join(PRIVATEUSE1_BACKENDS)}); only a TorchNeuron or TorchTPU run can tell"
        )


# %%
# The slot's name and the device's dispatch key
# ---------------------------------------------

with v.check("the PrivateUse1 backend carries the configured device type's name") as check:
    named_backend(check)
    check.equal(slot_name, device_type, "PrivateUse1 backend name")
    check.equal(key, "PrivateUse1", f"dispatch key for {device_type!r}")

# %%
# A tensor on the device
# ----------------------

with v.check("a tensor on the device is dispatched with the PrivateUse1 key") as check:
    named_backend(check)
    tensor = torch.ones(4, device=v.device)
    v.sync()
    keys = repr(torch._C._dispatch_keys(tensor))
    check.measure("dispatch keys of the tensor", keys)
    check.equal(tensor.device.type, device_type, "device type of the tensor")
    check.expect("PrivateUse1" in keys, f"the tensor's dispatch keys are {keys}")

v.finish()
