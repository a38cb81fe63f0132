"""A build's process skips the last garbage collection of its heap, and only when it ends."""

from __future__ import annotations

import os
import subprocess
import sys

from kb import SRC

PROGRAM = """\
import atexit, gc, sys
atexit.register(lambda: print("at exit, frozen:", gc.get_freeze_count() > 0))  # runs after the build's own
from sphinx.cmd.build import build_main
code = build_main(["-q", "-b", "html", sys.argv[1], sys.argv[1] + "/_build/html"])
print("built:", code, "frozen:", gc.get_freeze_count() > 0)
"""


def test_the_heap_is_frozen_when_the_process_ends_not_when_the_build_does(new_site):
    root = new_site("process-exit", ("exit-holds", "holds"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(root)], capture_output=True, text=True, env=env, timeout=600
    )
    assert run.stdout.splitlines() == ["built: 0 frozen: False", "at exit, frozen: True"], run.stderr[-2000:]
