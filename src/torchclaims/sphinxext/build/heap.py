"""The build's heap: what lives as long as the build is left out of garbage collection.

A full collection walks every object the interpreter tracks. A site build
holds hundreds of thousands that live as long as it does: the modules it
imported, Sphinx's environment and the results store, and every full
collection walked them all (two or three in a rebuild with nothing to do, a
tenth of a second or more; a dozen in a cold build, seconds in all). So they
are frozen (``gc.freeze``) as soon as they exist: when the extension is set
up, when the builder is ready (Sphinx's environment is in) and once the build
state is prepared (the results store is in); a collection then walks only
what the build makes meanwhile. When the build finishes they are unfrozen, so
a process that runs several builds (the tests) collects them as usual.

While the pages are written, Sphinx's main process holds every page it has
resolved until that page's writer is done, and with Python's default a full
collection came every tenth collection of the middle generation, walking the
pages in flight again each time: over a second of a cold build's writing, in
the process every page waits for, and nothing more freed than by rarer ones
(the process's peak memory is the same). So from ``write-started`` until the
build finishes a full collection comes ten times more rarely.

When the process ends, the interpreter collects every object it still tracks,
a fifth of a second more; nothing is worth collecting then, so the objects
are frozen just before (registered with ``atexit`` when the build finishes).
"""

from __future__ import annotations

import atexit
import gc

from sphinx.application import Sphinx
from sphinx.builders import Builder

WRITING_FULL_COLLECTION_EVERY = 100  # collections of the middle generation (Python's default: 10)
_before_writing: list[tuple[int, ...]] = []  # the thresholds to restore when the build finishes


def _freeze(app: Sphinx) -> None:
    gc.freeze()


def _collect_the_whole_heap_rarely(app: Sphinx, builder: Builder) -> None:
    young, middle, _ = threshold = gc.get_threshold()
    _before_writing.append(threshold)
    gc.set_threshold(young, middle, WRITING_FULL_COLLECTION_EVERY)


def _unfreeze_and_freeze_at_exit(app: Sphinx, exception: BaseException | None) -> None:
    if _before_writing:
        gc.set_threshold(*_before_writing[0])
        _before_writing.clear()
    gc.unfreeze()
    atexit.unregister(gc.freeze)  # once, however many builds the process runs
    atexit.register(gc.freeze)


def setup_heap(app: Sphinx) -> None:
    gc.freeze()  # Sphinx and the extensions imported so far
    app.connect("builder-inited", _freeze, priority=100)  # the rest, and Sphinx's environment
    app.connect("builder-inited", _freeze, priority=401)  # the results store (state.prepare, 400)
    app.connect("write-started", _collect_the_whole_heap_rarely)
    app.connect("build-finished", _unfreeze_and_freeze_at_exit, priority=950)  # after the summary (900)
