"""Compiler settings of the sweep workers: stated in every record that used them.

A sweep on a compiling backend spends most of its time compiling thousands of
small graphs, each used once. XLA's CPU backend compiles a graph about four
times faster at LLVM optimisation level 0 (``--xla_backend_optimization_level``;
measured with ``benchmarks/coverage_sweeps.py``). What a sweep tests is
unchanged by it: torch_xla's lowering of each operator, its CPU fallbacks and
the HLO graph are the same; only the machine code XLA generates for the host
CPU is less optimised. The setting applies to the sweep's worker processes
only, never to the other claims. On torch_xla 2.9.0 the whole operator sweep
gave the same outcome and the same per-sample codes for every cell at both
settings, in half the time (compare two runs' tables with
``benchmarks/coverage_sweeps.py operators --save`` and ``--default-compile``).
"""

from __future__ import annotations

import os

FAST_COMPILE = {"xla": {"XLA_FLAGS": "--xla_backend_optimization_level=0"}}


def worker_environment(backend_name: str) -> dict[str, str]:
    """Variables to set in a worker before the backend is imported (added to any already set)."""
    env = {}
    for name, value in FAST_COMPILE.get(backend_name, {}).items():
        env[name] = f"{os.environ[name]} {value}" if os.environ.get(name) else value
    return env


def describe(backend_name: str) -> str:
    settings = FAST_COMPILE.get(backend_name)
    if not settings:
        return "the backend's default compiler settings"
    return "sweep workers compile with " + ", ".join(f"{k}={v}" for k, v in settings.items())
