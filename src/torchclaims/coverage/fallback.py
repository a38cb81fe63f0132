"""Which ATen operators ran through a CPU fallback during a call on the device.

A result that matches the CPU says little when the device handed the work to
the CPU kernel. How to tell depends on the backend:

* **torch_xla** counts every operator it runs through its CPU fallback, in a
  counter of the operator's own ATen name (``aten::nonzero``), whichever
  operator of the sample's call reached it: an ``index_put`` whose boolean
  mask goes through ``aten::nonzero`` falls back in ``nonzero``. The names
  are the counters cleared before the call that have a value after it, both
  those ``torch_xla.debug.metrics.executed_fallback_ops()`` lists and every
  counter named ``aten::...`` (torch_xla's documented sign of a fallback),
  so that a fallback taken below the operator the row is named for counts
  too. ``aten::_local_scalar_dense`` is left out: it is how a value is read
  back to the host (``.item()``), not a missing lowering.
* **PrivateUse1 and MPS backends** (TorchNeuron, TorchTPU, MPS with
  ``PYTORCH_ENABLE_MPS_FALLBACK=1``) register a boxed CPU fallback for the
  operators they lack. Their fallback warnings are printed once per operator
  and process, so they cannot attribute a fallback to a call; instead a
  dispatch mode lists the ATen operators the call reached, and the
  dispatcher's own table says which of them resolve, for the device's
  dispatch key, to the ``[backend fallback]`` rather than to a kernel.
* **the CPU and CUDA** have no CPU fallback: an operator without a kernel
  raises ``NotImplementedError`` ("no kernel").

``probe_for(backend_name, device)`` picks one; ``with probe.watch() as seen:``
around the call and the synchronisation leaves the operator names in ``seen``.
``probe.discard_pending()`` drops work a failed call left queued on a lazy
device (torch_xla keeps the failed graph and every later synchronisation
fails on it), so that the next call starts clean without a new process.
"""

from __future__ import annotations

from contextlib import contextmanager

HOST_READS = frozenset({"aten::_local_scalar_dense"})
FALLBACK_COUNTER = "aten::"  # torch_xla names the counter of an operator's CPU fallback after the operator
NO_FALLBACK = ("cpu", "cuda", "rocm")


class NoFallback:
    """Backends without a CPU fallback."""

    @contextmanager
    def watch(self):
        yield []

    def discard_pending(self) -> None:
        """Eager backends queue nothing a failure could leave behind."""


class XlaCounters:
    """torch_xla's own count of operators executed through its CPU fallback."""

    def __init__(self, device):
        import torch_xla
        import torch_xla.debug.metrics as metrics

        self.metrics, self.xla, self.device = metrics, torch_xla, str(device)

    def discard_pending(self) -> None:
        self.xla._XLAC._clear_pending_irs(self.device)

    @contextmanager
    def watch(self):
        seen: list[str] = []
        self.metrics.clear_counters()
        yield seen
        counted = {
            name
            for name in self.metrics.counter_names()
            if name.startswith(FALLBACK_COUNTER) and self.metrics.counter_value(name)
        }
        seen.extend(sorted((counted | set(self.metrics.executed_fallback_ops())) - HOST_READS))


class DispatcherFallbacks(NoFallback):
    """Operators the call reached that the dispatcher sends to ``dispatch_key``'s backend fallback."""

    def __init__(self, dispatch_key: str):
        self.key = dispatch_key

    @contextmanager
    def watch(self):
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        reached: set[str] = set()

        class Reached(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                reached.add(func.name())
                return func(*args, **(kwargs or {}))

        seen: list[str] = []
        with Reached():
            yield seen
        entry = f"{self.key}: "
        for name in sorted(reached):
            table = torch._C._dispatch_dump_table(name).splitlines()
            if any(line.startswith(entry) and line.endswith("[backend fallback]") for line in table):
                seen.append(name)


def probe_for(backend_name: str, device):
    if backend_name in NO_FALLBACK:
        return NoFallback()
    if backend_name == "xla":
        return XlaCounters(device)
    import torch

    return DispatcherFallbacks(str(torch._C._dispatch_key_for_device(device.type)))
