"""A torch-tpu wheel installed on a host without a TPU, written by the test, for the claim that reads the wheel.

The distribution has what the claim reads of the real one: its metadata (name,
torch requirement), a ``torch.backends`` entry point, a compiled layer per torch
release (``torch_tpu/_internal/env_<major>_<minor>_0.so``, empty files here),
``torch_tpu._internal.execution_mode`` and a ``torch.tpu`` module made on
import, whose ``is_available()`` points to ``torch.accelerator`` and which
offers torch.cuda's calls except those about memory. Each field of ``Wheel``
is one thing a release could get wrong.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

PACKAGE = """
import enum, sys, types
import torch
from torch_tpu._internal import execution_mode  # noqa: F401  the fallback setting the claim reads

class EagerMode(enum.Enum):
    DEFER_NEVER = 0
    DEFER_ALWAYS = 1

def _is_available():
    raise RuntimeError("torch.tpu.is_available() is not supported: use torch.accelerator.is_available()")

tpu = types.ModuleType("torch.tpu")
for _name in dir(torch.cuda):  # torch.cuda's calls; those about memory only where the wheel offers them
    if callable(getattr(torch.cuda, _name)) and not _name.startswith("_"):
        if {memory_calls} or not ("mem" in _name or "cache" in _name):
            setattr(tpu, _name, lambda *args, **kwargs: None)
tpu.is_available = _is_available
tpu.eager_mode = EagerMode.{eager_mode}
torch.tpu = sys.modules["torch.tpu"] = tpu
{on_import}

def _autoload():
    pass
"""


MAJOR, MINOR = (int(part) for part in torch.__version__.split("+")[0].split(".")[:2])


@dataclasses.dataclass(frozen=True)
class Wheel:
    """What the wheel holds; by default a release that accepts this torch and the ones either side of it."""

    requirement: str = f"torch>={MAJOR}.{MINOR - 1},<={MAJOR}.{MINOR + 1}"
    layers: tuple[int, ...] = (MINOR - 1, MINOR, MINOR + 1)  # the minor releases it ships a compiled layer for
    eager_mode: str = "DEFER_NEVER"
    cpu_fallback: bool = False
    memory_calls: bool = False  # whether torch.tpu offers torch.cuda's memory counters too
    on_import: str = ""  # what importing torch_tpu does besides (registering a device, say)


def install(site: Path, wheel: Wheel) -> None:
    """Write ``wheel`` as an installed distribution torch-tpu 0.2.0 under ``site``."""
    package = site / "torch_tpu"
    (package / "_internal").mkdir(parents=True)
    fields = {"eager_mode": wheel.eager_mode, "memory_calls": wheel.memory_calls, "on_import": wheel.on_import}
    (package / "__init__.py").write_text(PACKAGE.format(**fields), encoding="utf-8")
    (package / "_internal" / "__init__.py").write_text("", encoding="utf-8")
    (package / "_internal" / "execution_mode.py").write_text(
        f"enable_cpu_fallback = {wheel.cpu_fallback}\n", encoding="utf-8"
    )
    for minor in wheel.layers:
        (package / "_internal" / f"env_{MAJOR}_{minor}_0.so").touch()
    dist_info = site / "torch_tpu-0.2.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torch_tpu\nVersion: 0.2.0\nRequires-Dist: {wheel.requirement}\n",
        encoding="utf-8",
    )
    (dist_info / "entry_points.txt").write_text("[torch.backends]\ntorch_tpu = torch_tpu:_autoload\n", encoding="utf-8")
