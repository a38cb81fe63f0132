"""The build's heap: frozen while the build runs, unfrozen after it, frozen again when its process ends."""

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


def build_in_a_process(program: str, root) -> list[str]:
    """Run ``program`` (a build of ``root``) in a fresh interpreter; the lines it printed, less the
    build's progress lines about its claims."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-c", program, str(root)], capture_output=True, text=True, env=env, timeout=600
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return [line for line in run.stdout.splitlines() if not line.startswith("torchclaims: ")]


def test_the_heap_is_frozen_when_the_process_ends_not_when_the_build_does(new_site):
    root = new_site("process-exit", ("exit-holds", "holds"))
    assert build_in_a_process(PROGRAM, root) == ["built: 0 frozen: False", "at exit, frozen: True"]


DURING = """\
import gc, sys
import torchclaims.sphinxext.directives.check_report as check_report, torchclaims.sphinxext.build.state as state
seen = {}
prepare, wait_early = state.prepare, check_report.wait_early
def before_prepare(app):
    seen["before the store"] = gc.get_freeze_count()
    prepare(app)
def before_reading(app, *args):
    seen["before reading"] = gc.get_freeze_count()
    return wait_early(app, *args)
state.prepare, check_report.wait_early = before_prepare, before_reading  # connected by name at setup
from sphinx.cmd.build import build_main
code = build_main(["-q", "-b", "html", sys.argv[1], sys.argv[1] + "/_build/html"])
print(code, seen["before the store"] > 0, seen["before reading"] > seen["before the store"], gc.get_freeze_count())
"""


def test_what_lives_as_long_as_the_build_is_frozen_while_it_runs_and_unfrozen_after(new_site):
    """Frozen: the modules and Sphinx's environment before the build state is prepared, the
    results store once it is; a collection during the build then leaves them alone."""
    root = new_site("heap-during", ("heap-holds", "holds"))
    assert build_in_a_process(DURING, root)[-1:] == ["0 True True 0"]


WRITING = """\
import gc, sys
import torchclaims.sphinxext.build.publishing as publishing
seen = []
search_page = publishing._search_page
def on_a_page_written(app, *args):
    seen.append(gc.get_threshold())
    return search_page(app, *args)
publishing._search_page = on_a_page_written  # connected by name at setup
gc.set_threshold(500, 7, 9)  # the process's own, kept outside the build
from sphinx.cmd.build import build_main
code = build_main(["-q", "-b", "html", sys.argv[1], sys.argv[1] + "/_build/html"])
print(code, sorted(set(seen)), gc.get_threshold())
"""


def test_while_pages_are_written_the_whole_heap_is_collected_rarely(new_site):
    """A full collection walks every page the main process holds for its writer: while
    writing, one every hundredth middle collection, not every tenth; the process's own
    thresholds are back when the build finishes."""
    root = new_site("heap-writing", ("writing-holds", "holds"))
    assert build_in_a_process(WRITING, root)[-1:] == ["0 [(500, 7, 100)] (500, 7, 9)"]
