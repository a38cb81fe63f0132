"""The environment fingerprint recorded with every verdict.

Collected in a child process (never in the Sphinx process: initialising a GPU
there would break later forks). Besides describing where a verdict came from,
the fingerprint is part of the cache key, so an upgrade re-verifies claims.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform

from .. import __version__
from ..backends import VENDOR_PACKAGES, Backend
from .records import Environment

# Variables that change what a claim script does, whatever the backend. The
# runner's own TORCHCLAIMS_* variables differ per claim and say nothing about
# the environment, so they are left out.
COMMON_ENV_PREFIXES = ("CUBLAS_WORKSPACE_CONFIG", "HF_HUB_OFFLINE", "OMP_NUM_THREADS", "TORCHINDUCTOR_", "TORCHDYNAMO_")


def recorded_packages(backend: Backend) -> tuple[str, ...]:
    """The backend's own packages, then every vendor plugin's: torch-tpu installed
    on a CPU host is autoloaded by import torch and changes what a cpu run sees."""
    return tuple(dict.fromkeys(backend.packages + VENDOR_PACKAGES))


def package_versions(names: tuple[str, ...]) -> dict[str, str]:
    """Installed versions of the named distributions; absent ones are left out."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def accelerator_runtime() -> dict[str, str]:
    import torch

    runtime = {}
    if torch.version.cuda:
        runtime["cuda"] = torch.version.cuda
    if torch.version.hip:
        runtime["hip"] = torch.version.hip
    if torch.backends.cudnn.is_available():
        runtime["cudnn"] = str(torch.backends.cudnn.version())
    return runtime


def relevant_env_vars(backend: Backend) -> dict[str, str]:
    prefixes = COMMON_ENV_PREFIXES + backend.env_prefixes
    return {key: value for key, value in sorted(os.environ.items()) if key.startswith(prefixes)}


def collect(backend: Backend, usable: bool = True) -> Environment:
    """Fingerprint this process's environment for ``backend``.

    When the backend is not usable here the device fields say so; verdicts
    recorded with such a fingerprint can only be ``unverified``.
    """
    import torch

    return Environment(
        backend=backend.name,
        device=str(backend.device()) if usable else "(unavailable)",
        device_name=backend.device_name() if usable else "(unavailable)",
        torch=torch.__version__,
        packages=package_versions(recorded_packages(backend)),
        accelerator_runtime=accelerator_runtime(),
        python=platform.python_version(),
        os=f"{platform.system()} {platform.release()}",
        machine=platform.machine(),
        env_vars=relevant_env_vars(backend),
        torchclaims=__version__,
    )
