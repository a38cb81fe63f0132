"""What the fork server imports before any claim's process forks from it.

Importing this package sets the environment every claim runs in first (some
libraries read it when they are imported: huggingface_hub its offline switch,
inductor its number of compile workers; what the server imports is imported
once for every claim), then imports what every claim needs: torch and the
harness. A claim's process then costs a fork instead of seconds of imports.

The modules of this package add what some claims import (the compiler stack,
the Hugging Face libraries). They take seconds to import, during which no
claim can start, so the runner preloads one only when more claims of the run
use it than there are workers (torchclaims.run.runner.PRELOAD_GROUPS).

A module that fails to import is left to the scripts that need it, which then
fail with the real error: the server itself must never fail.

Ctrl-C is for the run's own process, which stops the claims (torchclaims.run.runner).
The server shares the terminal's process group, and multiprocessing makes it
ignore SIGINT only once its preloads are imported; so it ignores SIGINT from
its first import on, and so does every process it forks, until a claim's
process leaves the group (torchclaims.run._child.run) or the probe ends. A Ctrl-C
while the server imports or a claim starts then prints no traceback.
"""

from __future__ import annotations

import gc
import importlib
import os
import signal

from torchclaims.run._child import SCRIPT_ENVIRONMENT

BASE = ("torch", "numpy", "matplotlib.pyplot", "sphinx_gallery.gen_rst", "torchclaims.run._child", "torchclaims.verify")


def load(modules: tuple[str, ...], then: tuple[str, str] | None = None) -> None:
    """Import each module, going on past any that fails; ``then`` names a
    function (module, name) to call once they are imported, for work every
    claim would otherwise repeat."""
    os.environ.update(SCRIPT_ENVIRONMENT)
    had_cache_dir = "TORCHINDUCTOR_CACHE_DIR" in os.environ
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the script that needs it reports the error
            continue
    if then is not None:
        try:
            getattr(importlib.import_module(then[0]), then[1])()
        except Exception:  # noqa: BLE001 - each claim's process then does it itself
            pass
    if not had_cache_dir:
        # Importing Dynamo fixes inductor's cache folder in the environment; each
        # script finds it through its own TMPDIR (shared or cold: compiler_caches.py).
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    # What is imported now lives as long as the server: a collection in a claim's
    # process (sphinx-gallery runs one per script) then skips it, instead of
    # walking every object and writing to each, which costs a third of a second
    # and turns shared pages into private copies.
    gc.freeze()


signal.signal(signal.SIGINT, signal.SIG_IGN)  # multiprocessing's forked children restore it from here
load(BASE)
