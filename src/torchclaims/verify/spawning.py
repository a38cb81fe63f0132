"""Start ``spawn`` workers from a claim script without running the script again.

``spawn`` re-imports the parent's ``__main__`` in every child so that functions
defined there can be found. In a claim's process ``__main__`` is the claim
script (run by runpy or sphinx-gallery), which must not run again; workers
only need the helper module that defines their entry point. Used by the
coverage sweeps' worker pool and by the distributed claims' launcher
(``torchclaims.verify.distributed``).
"""

from __future__ import annotations

import sys
import types
from contextlib import contextmanager


@contextmanager
def main_module_hidden():
    """While workers start, ``__main__`` is a blank module with no file and no spec."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main
