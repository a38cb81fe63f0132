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

Work a group does mostly in other processes (inductor compiling its test
programs) runs in a thread while the server goes on importing, on the core the
imports leave idle; the last module the server imports (``ready``) first
imports the rest of what every claim needs (LATE: it starts nothing, so it
comes after the groups and overlaps their background work), then waits for
that work, so no claim's process is forked while a thread of the server runs.

A module that fails to import is left to the scripts that need it, which then
fail with the real error: the server itself must never fail. A module whose
import started an accelerator runtime spoils the server for every claim (a
forked child cannot use that runtime): the server then stops before anything
forks and says which module it was (torchclaims.run.runtimes), and the runner
starts one that imports less (torch and the harness, then nothing).

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
import threading
from collections.abc import Callable

from torchclaims.run import runtimes
from torchclaims.run._child import SCRIPT_ENVIRONMENT

BASE = ("torch", "numpy")
# sphinx_gallery.gen_gallery: a build's sphinx_gallery_conf, which each claim's job
# carries, holds objects of its classes, so unpickling the job imported it anew in
# every claim's process (a tenth of a second or more each).
LATE = (
    "matplotlib.pyplot",
    "matplotlib.backends.backend_agg",  # the backend every script draws with (MPLBACKEND), imported on a first figure
    "sphinx_gallery.gen_rst",
    "sphinx_gallery.gen_gallery",
    "torchclaims.run._child",
    "torchclaims.verify",
)


_HAD_CACHE_DIR = "TORCHINDUCTOR_CACHE_DIR" in os.environ
_REPORT = os.environ.pop(runtimes.REPORT_ENV, None)  # the runner's file, not the claims' business
_background: list[threading.Thread] = []


def accelerator_built() -> bool:
    """Whether torch is built for CUDA or ROCm (a build flag, read without starting anything).

    The groups are then left to the claims that import them: importing
    torch.utils.cpp_extension (the compiler group) asks torch.cuda.is_available(),
    which on such a build arms torch's fork check (every process forked afterwards
    fails "Cannot re-initialize CUDA in forked subprocess", GPU or none) and on
    a GPU host starts the driver."""
    import torch

    return torch.backends.cuda.is_built()


def guard(after: str) -> None:
    """Stop the server, before anything forks, when ``after`` started an accelerator runtime."""
    runtimes.stop_if_touched(after, _REPORT)


def load(modules: tuple[str, ...]) -> None:
    """Import each module, going on past any that fails; stop the server when one
    started an accelerator runtime."""
    os.environ.update(SCRIPT_ENVIRONMENT)
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the script that needs it reports the error
            pass
        guard(name)


def in_background(work: Callable[[], object]) -> None:
    """Call ``work()`` in a thread, for work every claim would otherwise repeat;
    its failure leaves that work to each claim's process."""

    def call() -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 - each claim's process then does it itself
            pass

    thread = threading.Thread(target=call, name=f"preload {work.__qualname__}", daemon=True)
    thread.start()
    _background.append(thread)


def settle() -> None:
    """The server's last preload step: wait for the work started in the
    background, then make what is imported permanent."""
    while _background:
        thread = _background.pop()
        thread.join()
        guard(thread.name)
    if not _HAD_CACHE_DIR:
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
