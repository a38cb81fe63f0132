"""Accelerator runtimes and fork: which runtime this process has touched.

CUDA, ROCm, XPU, MPS and the Neuron and TPU runtimes refuse to work in a
process forked after they were initialised in its parent (torch: "Cannot
re-initialize CUDA in forked subprocess"). Every claim's process is forked
from the fork server, so the server must never touch one: it checks itself
after each module it imports (torchclaims.run.preload) and, when one did,
stops before any fork and says which (``spoilt``), so the runner can start a
server that imports less (torchclaims.run.runner).

A runtime shows itself in two ways, both read without initialising anything:
a device node of an accelerator held open by this process, and the torch
device module's own ``is_initialized()``.
"""

from __future__ import annotations

import json
import os
import sys

# Device nodes (under /dev) through which accelerators appear: NVIDIA, Intel and
# AMD render nodes, AMD's compute node, Trainium, TPUs (accel, vfio), WSL.
DEVICE_NODE_NAMES = ("nvidia", "dri", "kfd", "accel", "vfio", "neuron", "dxg")
# torch's device modules that say whether their runtime started (torch.<name>.is_initialized)
DEVICE_MODULES = ("cuda", "xpu", "mtia", "mps", "neuron", "tpu")
REPORT_ENV = "TORCHCLAIMS_FORKSERVER_REPORT"  # where the server says what it touched (the runner reads it)
SPOILT_EXIT = 70  # the server's exit code when a runtime was touched


def device_nodes(root: str = "/dev") -> list[str]:
    """The accelerators' device nodes on this machine (and the folders holding them)."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return sorted(f"{root}/{n}" for n in names if n.startswith(DEVICE_NODE_NAMES))


def is_device_node(path: str) -> bool:
    return path.startswith(tuple(f"/dev/{n}" for n in DEVICE_NODE_NAMES))


def touched() -> list[str]:
    """What shows that an accelerator runtime started in this process; empty when none did."""
    found = []
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        descriptors = []
    for fd in descriptors:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
        if is_device_node(target):
            found.append(f"{target} is open")
    torch = sys.modules.get("torch")  # never imported here: a process without torch has touched nothing through it
    for name in DEVICE_MODULES:
        module = getattr(torch, name, None) if torch is not None else None
        check = getattr(module, "is_initialized", None)
        try:
            if callable(check) and check():
                found.append(f"torch.{name}.is_initialized() is True")
        except Exception:  # noqa: BLE001 - a vendor module that cannot answer has not said it started
            continue
    return sorted(set(found))


def stop_if_touched(after: str, path: str | None) -> None:
    """In the fork server: when ``after`` (the module just imported) touched a
    runtime, say so in ``path`` (the runner's file) and end before anything forks."""
    signs = touched()
    if not signs:
        return
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"module": after, "signs": signs}, handle)
    os._exit(SPOILT_EXIT)


def report(path: str) -> str | None:
    """What a server that stopped itself said, as one line; None when it said nothing."""
    try:
        with open(path, encoding="utf-8") as handle:
            said = json.load(handle)
        return f"importing {said['module']} started an accelerator runtime ({'; '.join(said['signs'])})"
    except (OSError, ValueError, KeyError, TypeError):
        return None
