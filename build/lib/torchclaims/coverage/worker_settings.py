"""Settings of the sweep workers on compiling backends: stated in every record that used them.

Both are for XLA, and apply to the sweep's worker processes only, never to
the other claims.

* **Compile time.** A sweep spends most of its time compiling thousands of
  small graphs, each used once. XLA's CPU backend compiles a graph about four
  times faster at LLVM optimisation level 0
  (``--xla_backend_optimization_level``). What a sweep tests is unchanged:
  torch_xla's lowering of each operator, its CPU fallbacks and the HLO graph
  are the same; only the machine code for the host CPU is less optimised. On
  torch_xla 2.9.0 the whole operator sweep gave the same outcome and the same
  per-sample codes for every cell at both settings, in half the time (compare
  two runs' tables with ``benchmarks/coverage_sweeps.py operators --save``,
  with and without ``--default-settings``).
* **Memory.** torch_xla keeps the compiled graphs of a process in a cache, and
  a worker that compiles thousands of graphs used once grows by gigabytes; the
  cache is bounded to the most recent graphs (enough for the graphs the samples
  of one operator share).
"""

from __future__ import annotations

import os

SETTINGS = {"xla": {"XLA_FLAGS": "--xla_backend_optimization_level=0", "XLA_COMPILATION_CACHE_SIZE": "64"}}


def worker_environment(backend_name: str) -> dict[str, str]:
    """Variables to set in a worker before the backend is imported (XLA_FLAGS adds to any already set)."""
    env = {}
    for name, value in SETTINGS.get(backend_name, {}).items():
        env[name] = f"{os.environ[name]} {value}" if name == "XLA_FLAGS" and os.environ.get(name) else value
    return env


def describe(backend_name: str) -> str:
    settings = SETTINGS.get(backend_name)
    if not settings:
        return "the backend's defaults"
    return "sweep workers run with " + ", ".join(f"{k}={v}" for k, v in settings.items())
