"""
Checkpoints reload onto their saving device unless map_location redirects them
==============================================================================

:claim-verdict:`checkpoint-map-location`

The claim: a ``state_dict`` saved from the configured device reloads with
``torch.load(map_location='cpu')`` bit for bit equal to the device tensors
copied to the CPU. Without ``map_location``, ``torch.load`` restores each tensor
to the device it was saved from, and raises when that device is not available.

We save a small model's ``state_dict`` from the configured device and load it
back with and without ``map_location``. On the CPU, saving and loading on the
same device would show nothing moving, so a second checkpoint is labelled as
saved on ``meta`` and must come back there. For the "device not available" half we
write a checkpoint whose storages are tagged as saved on a GPU this machine
does not have (``cuda:0`` where there is no CUDA, ``cuda:<n>`` where there are
n GPUs) and load it both ways.
"""

import shutil
import tempfile
import zipfile
from pathlib import Path

import torch

from torchclaims.verify import verification

v = verification(
    "checkpoint-map-location",
    model="Linear(8, 4) + BatchNorm1d(4), one training-mode forward pass, seed 0",
    inputs="its state_dict (float32 weights, running statistics, int64 counter)",
    method="torch.save / torch.load(weights_only=True); tensors compared byte for byte",
)

# %%
# Save from the configured device
# -------------------------------

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4)).to(v.device)
model(torch.randn(16, 8).to(v.device))  # updates the BatchNorm running statistics
v.sync()
state = model.state_dict()
copied = {name: tensor.detach().cpu() for name, tensor in state.items()}

folder = Path(tempfile.mkdtemp(prefix="ckpt-"))
saved = folder / "from_device.pt"
torch.save(state, saved)


def same_bits(check, loaded, what):
    check.equal(sorted(loaded), sorted(copied), f"{what}: keys")
    for name, expected in copied.items():
        got = loaded[name]
        check.expect(got.dtype == expected.dtype, f"{what}: {name} has dtype {got.dtype}, expected {expected.dtype}")
        same = torch.equal(got.detach().cpu().reshape(-1).view(torch.uint8), expected.reshape(-1).view(torch.uint8))
        check.expect(same, f"{what}: {name} differs in its bytes")
    check.measure(f"{what}: tensors compared byte for byte", len(copied))


# %%
# Checkpoints labelled with another device
# ----------------------------------------
# ``torch.save`` asks a registry of *taggers* where each storage lives. A tagger
# registered ahead of the built-in ones (priority 1) labels the CPU storages of
# one save as coming from another device, exactly as a checkpoint written on
# that device would be labelled. Two such saves: one labelled ``meta``, a device
# every build of PyTorch has, so that "returns to the device it was saved from"
# is seen to move tensors even where the configured device is the CPU itself;
# and one labelled with a GPU this machine lacks. The labels are data.

GPU_KIND = "cuda"  # the device type the fixture claims to come from (data under test)
absent = f"{GPU_KIND}:{torch.cuda.device_count()}"  # one past the last GPU present
fake_location = None


def tag_as_fake(storage):
    return fake_location if storage.device.type == v.reference_device.type else None


def leave_to_builtin(storage, location):
    return None


def save_tagged(location, path):
    global fake_location
    fake_location = location
    torch.save(copied, path)
    fake_location = None
    return path


torch.serialization.register_package(1, tag_as_fake, leave_to_builtin)
from_meta = save_tagged("meta", folder / "from_meta.pt")
fixture = save_tagged(absent, folder / "from_absent_gpu.pt")


# %%
# Loading back
# ------------

with v.check("map_location='cpu' reloads bit for bit equal to the device tensors copied to the CPU") as check:
    loaded = torch.load(saved, map_location=v.reference_device, weights_only=True)
    devices = sorted({str(t.device) for t in loaded.values()})
    check.equal(devices, [str(v.reference_device)], "devices after map_location='cpu'")
    same_bits(check, loaded, "map_location='cpu'")

with v.check("without map_location each tensor returns to the device it was saved from") as check:
    loaded = torch.load(saved, weights_only=True)
    for name, tensor in loaded.items():
        origin = state[name].device
        check.expect(tensor.device == origin, f"{name} loaded on {tensor.device}, saved from {origin}")
    check.measure("devices after loading", ", ".join(sorted({str(t.device) for t in loaded.values()})))
    same_bits(check, loaded, "no map_location")
    meta_devices = sorted({str(t.device) for t in torch.load(from_meta, weights_only=True).values()})
    check.measure("devices after loading the checkpoint labelled 'meta'", ", ".join(meta_devices))
    check.equal(meta_devices, ["meta"], "devices after loading the checkpoint labelled 'meta'")

with zipfile.ZipFile(fixture) as archive:
    pickle_bytes = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
print(f"fixture tagged {absent!r}: {absent.encode() in pickle_bytes}; GPUs present: {torch.cuda.device_count()}")

with v.check("loading a checkpoint from an unavailable device without map_location raises") as check:
    check.measure("location tag in the fixture", absent)
    check.equal(absent.encode() in pickle_bytes, True, "tag present in data.pkl")
    try:
        torch.load(fixture, weights_only=True)
        outcome = "loaded"
    except Exception as exc:
        outcome = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    check.measure("torch.load without map_location", outcome, tolerance="raises")
    check.expect(outcome != "loaded", f"a checkpoint tagged {absent} loaded on a machine without that device")

with v.check("the same checkpoint loads with map_location='cpu', bit for bit") as check:
    loaded = torch.load(fixture, map_location=v.reference_device, weights_only=True)
    same_bits(check, loaded, f"{absent} fixture, map_location='cpu'")

shutil.rmtree(folder)
v.finish()
