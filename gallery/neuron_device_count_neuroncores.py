"""
On Trainium, torch.accelerator.device_count() counts NeuronCores, not chips
===========================================================================

:claim-verdict:`neuron-device-count-neuroncores`

The claim: with TorchNeuron, ``torch.accelerator.device_count()`` (and
``torch.neuron.device_count()``) counts the NeuronCores visible to the
process, not the Trainium chips: it equals the number of NeuronCores the
Neuron tools report (``neuron-ls``, or the cores listed in
``NEURON_RT_VISIBLE_CORES`` when that restricts them), so device-agnostic code
that plans one rank per device plans one rank per NeuronCore.

We ask ``torch.accelerator`` for the device count and compare it with an
independent count: the ``nc_count`` of every device ``neuron-ls --json-output``
lists (and the number of those devices, the chips), or the cores named in
``NEURON_RT_VISIBLE_CORES``. Only a Trainium run can check this; other
backends report unverified.
"""

import json
import os
import shutil
import subprocess

import torch

from torchclaims.verify import verification

v = verification(
    "neuron-device-count-neuroncores",
    inputs="torch.accelerator.device_count(); neuron-ls --json-output; NEURON_RT_VISIBLE_CORES",
    method="device_count() compared with the NeuronCores the Neuron tools report (visible cores when restricted)",
)

NEURON = "neuron"  # the device type the claim is about (data under test)
NEURON_LS = ("neuron-ls", "/opt/aws/neuron/bin/neuron-ls")  # on PATH, or where the Neuron tools install it


def visible_cores(value: str) -> int:
    """How many cores a NEURON_RT_VISIBLE_CORES value names: '0-3', '0,1,4' or a mix."""
    count = 0
    for part in value.split(","):
        first, _, last = part.strip().partition("-")
        count += int(last) - int(first) + 1 if last else 1
    return count


def neuron_ls():
    """The devices neuron-ls lists, or None when it is not installed."""
    tool = next((path for path in (shutil.which(NEURON_LS[0]), NEURON_LS[1]) if path and os.path.exists(path)), None)
    if tool is None:
        return None
    done = subprocess.run([tool, "--json-output"], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"neuron-ls exited with {done.returncode}: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout)


# %%
# Two counts of the same hardware
# -------------------------------

with v.check("torch.accelerator.device_count() equals the NeuronCores visible to the process") as check:
    if v.device.type != NEURON:
        check.unsupported(f"the configured backend is {v.backend.name}; only TorchNeuron on Trainium can tell")
    counted = check.measure("torch.accelerator.device_count()", torch.accelerator.device_count())
    check.measure("torch.neuron.device_count()", torch.neuron.device_count())
    restricted = os.environ.get("NEURON_RT_VISIBLE_CORES")
    check.measure("NEURON_RT_VISIBLE_CORES", str(restricted))
    check.measure("NEURON_LOGICAL_NC_CONFIG", str(os.environ.get("NEURON_LOGICAL_NC_CONFIG")))
    devices = neuron_ls()
    if devices is not None:
        check.measure("Neuron devices (chips) neuron-ls lists", len(devices))
        check.measure("NeuronCores neuron-ls reports", sum(d.get("nc_count", 0) for d in devices))
    if restricted:
        expected = visible_cores(restricted)
    elif devices is not None:
        expected = sum(d.get("nc_count", 0) for d in devices)
    else:
        check.unsupported(
            "neuron-ls is not installed and NEURON_RT_VISIBLE_CORES is unset: no independent count of NeuronCores"
        )
    check.equal(counted, expected, "device_count() against the NeuronCores visible to the process")
    check.equal(torch.neuron.device_count(), counted, "torch.neuron.device_count() against torch.accelerator's")

v.finish()
