"""Compiler caches: shared between runs, or empty for claims that measure compiling.

Compiled kernels (inductor's FX graph, AOT autograd and kernel caches, Triton's)
are kept on disk between runs, so a build that compiles what an earlier build
compiled takes seconds instead of minutes. That is only safe for a claim whose
verdict does not depend on the cache: one that times a first compilation or
counts compilations must start from empty caches (Dynamo also keeps there
which inputs turned out to change shape, so a later run compiles them as
dynamic at once: fewer graphs). Such a claim says so in its
record (``compiler_caches = "cold"``); its run gets empty caches of its own,
removed with its temporary directory, and its result record states it.
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile

# How a cold run's record states its cache state (a condition of the verdict).
COLD_CONDITION = (
    "cold: empty inductor (FX graph, AOT autograd, kernels, Dynamo's remembered dynamic shapes), "
    "Triton, Neuron and XLA "
    "compile caches made for this run; "
    "kept, as torch's own fresh_cache() keeps them: precompiled C++ headers, and which vector instructions "
    "the CPU has (found once by the fork server when it preloads the compiler)"
)
CONDITION_NAME = "compiler caches"


def _inductor_dir() -> str:
    """Inductor's default cache folder (torch._inductor.runtime.cache_dir_utils)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


def shared_cache_links() -> dict[str, str]:
    """Caches torch keeps under the system temporary directory, linked from each
    script's own one: inductor finds its compiled kernels and headers where it
    always does, and removing the script's directory removes only the links."""
    return {os.path.basename(path): path for path in (_inductor_dir(), os.path.join(tempfile.gettempdir(), "cache"))}


def kept_when_cold() -> list[str]:
    """What a cold run still shares, and so may write (see COLD_CONDITION): the
    precompiled C++ headers, whose folder inductor fixes when the fork server imports it."""
    return [os.path.join(_inductor_dir(), "precompiled_headers")]


def cold_cache_env(tmp_dir: str) -> dict[str, str]:
    """Variables that point every compiler cache into a script's own (new) temporary directory."""
    root = os.path.join(tmp_dir, "compiler-caches")
    env = {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(root, "torchinductor"),
        "TRITON_CACHE_DIR": os.path.join(root, "triton"),
        "NEURON_COMPILE_CACHE_URL": os.path.join(root, "neuron"),
    }
    if "XLA_PERSISTENT_CACHE_PATH" in os.environ:  # set, torch_xla reuses compiled programs across processes
        env["XLA_PERSISTENT_CACHE_PATH"] = os.path.join(root, "xla")
    return env
