"""
Seeded CUDA sampling depends on the GPU's SM count
==================================================

:claim-verdict:`cuda-rng-sm-dependence`

The claim: with a fixed seed, ``torch.randn(2**22, device='cuda')`` gives
different values on GPUs with different streaming-multiprocessor (SM) counts,
so seeding makes device-side sampling reproducible only on the same GPU
configuration.

One run sees one GPU. It checks that re-seeding reproduces the sample on this
GPU, and records a hash of the sample together with the GPU model and SM
count. Whether GPUs with other SM counts give other values is decided by
comparing those records across runs, so a single run leaves that half
unverified.
"""

import hashlib

import torch

from torchclaims.verify import verification

v = verification(
    "cuda-rng-sm-dependence",
    inputs="torch.randn(2**22) on the GPU after torch.manual_seed(0)",
    method="SHA-256 of the sample's bytes, with GPU model and SM count",
)

CUDA = "cuda"  # the device type the claim is about (data under test)
N = 2**22


def nvidia_gpu(check):
    if v.device.type != CUDA or v.on_reference:
        check.unsupported(f"the configured backend is {v.backend.name}; the claim is about NVIDIA CUDA generators")
    if torch.version.hip is not None:
        check.unsupported("this is a ROCm build; the claim covers NVIDIA CUDA generators only")
    props = torch.cuda.get_device_properties(v.device)
    check.measure("GPU", props.name)
    check.measure("SM count", props.multi_processor_count)
    check.measure("compute capability", f"{props.major}.{props.minor}")


def seeded_sample():
    torch.manual_seed(0)
    sample = torch.randn(N, device=v.device)
    v.sync()
    return sample


# %%
# Reproducible on this GPU
# ------------------------

digest = None
with v.check("re-seeding reproduces the sample on the same GPU") as check:
    nvidia_gpu(check)
    first, second = seeded_sample(), seeded_sample()
    check.equal(first, second, "two seeded draws of 2**22 samples")
    digest = hashlib.sha256(first.cpu().numpy().tobytes()).hexdigest()
    check.measure("SHA-256 of the sample", digest)

# %%
# Different on GPUs with other SM counts
# --------------------------------------

with v.check("GPUs with different SM counts give different samples") as check:
    nvidia_gpu(check)
    check.unsupported(
        "one run sees one GPU configuration; compare the recorded SHA-256 and SM count with runs on GPUs "
        "with other SM counts (other models or MIG slices)"
    )

v.finish()
