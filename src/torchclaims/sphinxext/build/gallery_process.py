"""The Sphinx process assembles gallery pages; it never runs a script.

sphinx-gallery imports matplotlib while it fills in its configuration, to set
the Agg backend for the scripts it would run in this process. Here every script
runs in a claim process (forked from a server that has matplotlib imported,
with ``MPLBACKEND=Agg``), so that import only costs every build, a rebuild with
nothing to do included, about half a second. While sphinx-gallery fills in its
defaults, matplotlib cannot be imported; sphinx-gallery skips it, as it does
where matplotlib is not installed. Later imports, if any, work as usual.
"""

from __future__ import annotations

import sys

from sphinx.application import Sphinx

_blocked: set[str] = set()  # the modules this process blocked (and only those are unblocked)


def _block(app: Sphinx, config) -> None:
    if "matplotlib" not in sys.modules:
        sys.modules["matplotlib"] = None  # `import matplotlib` raises ImportError
        _blocked.add("matplotlib")


def _unblock(app: Sphinx, config) -> None:
    for name in list(_blocked):
        if sys.modules.get(name, 0) is None:
            del sys.modules[name]
        _blocked.discard(name)


def setup_gallery_process(app: Sphinx) -> None:
    # sphinx-gallery fills in its defaults at config-inited with priority 10
    app.connect("config-inited", _block, priority=9)
    app.connect("config-inited", _unblock, priority=11)
