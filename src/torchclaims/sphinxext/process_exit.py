"""The build's process ends without a last garbage collection of its whole heap.

When a process ends, the interpreter collects every object it still tracks. A
site build holds the results store (hundreds of thousands of objects), and that
last collection took about a fifth of a second of a rebuild with nothing to do.
Nothing is worth collecting once the build is over, so just before it the
objects are frozen (``gc.freeze``). The freeze is registered with ``atexit`` when
the build finishes, so a process that runs several builds (the tests) collects
as usual until it ends.
"""

from __future__ import annotations

import atexit
import gc

from sphinx.application import Sphinx


def _freeze_at_exit(app: Sphinx, exception: BaseException | None) -> None:
    atexit.unregister(gc.freeze)  # once, however many builds the process runs
    atexit.register(gc.freeze)


def setup_process_exit(app: Sphinx) -> None:
    app.connect("build-finished", _freeze_at_exit)
