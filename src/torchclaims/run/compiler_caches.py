"""Compiler caches: each claim's own, kept between its runs, or empty for claims that measure compiling.

Compiled kernels (inductor's FX graph, AOT autograd and kernel caches, Triton's,
Neuron's, XLA's) are kept on disk between runs, so a run that compiles what an
earlier run compiled takes seconds instead of minutes. A cache is also a way
in: whatever reads it runs what it holds. So no claim ever writes a cache that
anything else reads. Each claim has caches of its own, kept beside its records
(``<records>/compiler-caches/<backend>/<claim>``) and read by no one but that
claim's later runs; torch's shared default folders (``/tmp/torchinductor_<user>``,
which a plain ``torch.compile`` of the same user reads) are never written by a
claim: where the script's process sees them (inductor fixes its precompiled
headers' folder there when the fork server imports it), its mount namespace
shows the claim's own folder instead (torchclaims.run.sandbox.private_mounts).
Claims never share compiled kernels with one another: a kernel compiled by
one claim could decide another's verdict, and nothing outside the compiler can
tell a forged kernel from a real one under the same key.

A claim whose verdict depends on the cache (one that times a first compilation
or counts compilations; Dynamo also keeps there which inputs turned out to
change shape, so a later run compiles them as dynamic at once: fewer graphs)
says so in its record (``compiler_caches = "cold"``); its run gets empty
caches in its own temporary directory, removed with it, and its result record
states it.
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
    "kept, as torch's own fresh_cache() keeps them: precompiled C++ headers (the claim's own, from its earlier runs), "
    "and which vector instructions the CPU has (found once by the fork server when it preloads the compiler)"
)
CONDITION_NAME = "compiler caches"
INDUCTOR = "torchinductor"  # where inductor writes, in a cache folder (the rest is named by compiler)


def shared_inductor_dir() -> str:
    """Inductor's default cache folder (torch._inductor.runtime.cache_dir_utils),
    shared by every process of this user that compiles: never a claim's."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


def cache_env(root: str) -> dict[str, str]:
    """Variables that point every compiler cache into ``root``."""
    env = {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(root, INDUCTOR),
        "TRITON_CACHE_DIR": os.path.join(root, "triton"),
        "NEURON_COMPILE_CACHE_URL": os.path.join(root, "neuron"),
    }
    if "XLA_PERSISTENT_CACHE_PATH" in os.environ:  # set, torch_xla reuses compiled programs across processes
        env["XLA_PERSISTENT_CACHE_PATH"] = os.path.join(root, "xla")
    return env


def shown_instead(own: str) -> dict[str, str]:
    """What the script's mount namespace shows at the shared inductor folder:
    the inductor folder of the claim's own caches ``own``, so the precompiled
    headers, whose folder the fork server fixed there, are the claim's own too."""
    return {shared_inductor_dir(): os.path.join(own, INDUCTOR)}
