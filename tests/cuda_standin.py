"""A stand-in CUDA runtime that fails the way the real one fails: test fixture only, never a verdict.

torch loads it in every process that imports torch (the fork server, the
probe, each claim), through torch's own autoload of out-of-tree backends (the
``torch.backends`` entry point of a vendor's package: ``write_site``), and it
gives ``torch.cuda`` a runtime with CUDA's rules, as seen on an NVIDIA H200:

- the runtime starts on first use (``is_available()``, as cudaGetDeviceCount
  starts the driver; ``init()``, ``synchronize()``), or when torch loads it
  (``CUDA_STANDIN_STARTS=autoload``, as a plugin that starts its runtime on import);
- starting it names a helper thread through ``/proc/self/task/<tid>/comm`` (what
  glibc's pthread_setname_np does for another thread) and, with
  ``CUDA_STANDIN_LOCK`` set, writes that lock file; where a write is refused it
  fails as CUDA failed under a sandbox without a write rule beneath /proc:
  is_available() is False, and using it raises "Error 304: OS call failed or
  operation not supported on this OS";
- a process forked after it started cannot use it: "Cannot re-initialize
  CUDA in forked subprocess", as torch's pthread_atfork handler arranges.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

DEVICE_NAME = "Stand-in H200"
REFUSED = "CUDA error: OS call failed or operation not supported on this OS (Error 304)"
REINIT = (
    "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
    "you must use the 'spawn' start method"
)
ENTRY_POINTS = "[torch.backends]\ncuda_standin = cuda_standin:autoload\n"


class Runtime:
    def __init__(self) -> None:
        self.started = False
        self.failure: str | None = None
        self.bad_fork = False
        self._helper: threading.Thread | None = None

    def start(self) -> None:
        """Start once per process; raise what the real runtime raises."""
        if self.bad_fork:
            raise RuntimeError(REINIT)
        if self.started:
            return
        if self.failure is not None:
            raise RuntimeError(self.failure)
        os.register_at_fork(after_in_child=self._forked)
        try:
            self._name_helper_thread()
            if os.environ.get("CUDA_STANDIN_LOCK"):
                Path(os.environ["CUDA_STANDIN_LOCK"]).write_text(str(os.getpid()))
        except OSError as exc:
            self.failure = f"{REFUSED}: {exc}"
            raise RuntimeError(self.failure) from None
        self.started = True

    def _name_helper_thread(self) -> None:
        ready, stop = threading.Event(), threading.Event()

        def serve() -> None:
            ready.set()
            stop.wait()

        self._helper = threading.Thread(target=serve, daemon=True)
        self._helper.start()
        ready.wait()
        with open(f"/proc/self/task/{self._helper.native_id}/comm", "w") as handle:
            handle.write("cuda-EvtHandlr")

    def _forked(self) -> None:
        if self.started:
            self.bad_fork, self.started = True, False

    def available(self) -> bool:
        if self.bad_fork:
            return True  # the device count the parent cached
        try:
            self.start()
        except RuntimeError as exc:
            warnings.warn(f"CUDA initialization: {exc}", UserWarning, stacklevel=2)  # as torch warns
            return False
        return True


RUNTIME = Runtime()


def install() -> None:
    """Give this process's torch.cuda the stand-in runtime."""
    import torch

    torch.version.cuda = "13.0"  # as a CUDA build of torch says
    torch.cuda.is_available = RUNTIME.available
    torch.cuda.is_initialized = lambda: RUNTIME.started
    torch.cuda.init = RUNTIME.start
    torch.cuda.device_count = lambda: 1 if RUNTIME.available() else 0
    torch.cuda.current_device = lambda: (RUNTIME.start(), 0)[1]
    torch.cuda.get_device_name = lambda device=None: (RUNTIME.start(), DEVICE_NAME)[1]
    torch.cuda.synchronize = lambda device=None: RUNTIME.start()


def autoload() -> None:
    """torch's autoload entry point: what the vendor's package does when torch is imported."""
    install()
    if os.environ.get("CUDA_STANDIN_STARTS") == "autoload":
        RUNTIME.start()


def write_site(folder: Path) -> Path:
    """A folder for PYTHONPATH: this module and a distribution whose entry point torch autoloads."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cuda_standin.py").write_text(Path(__file__).read_text())
    info = folder / "cuda_standin-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cuda-standin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return folder
