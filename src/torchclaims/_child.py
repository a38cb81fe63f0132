"""Code that runs inside a claim's child process (forked from the fork server).

Kept tiny and importable so the fork server can preload it together with torch.
The child owns a new session (so a timeout can kill everything it started),
sends its file descriptors 1 and 2 to a log file (C++ and fd-level output too),
runs the script, and tells the parent how the script ended through a small
status file. The result record itself is written by the verification API.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GalleryTarget:
    """Where sphinx-gallery should write the example page for a script."""

    fname: str  # script file name relative to src_dir
    src_dir: str
    target_dir: str
    gallery_conf: dict


@dataclass(frozen=True)
class ChildJob:
    claim_id: str
    script: str  # absolute path
    cwd: str
    env: dict[str, str]
    log_path: str
    status_path: str
    figures_dir: str  # where figures left open by a plain run are saved
    threads: int
    gallery: GalleryTarget | None = None


def _redirect_output(log_path: str) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)


def _run_gallery(job: ChildJob) -> None:
    """Let sphinx-gallery execute the script block by block and write its page."""
    from sphinx_gallery.gen_rst import generate_file_rst
    from sphinx_gallery.utils import get_md5sum

    target = job.gallery
    # The parent decided this script must run: execute it even if sphinx-gallery's
    # own checksum says the page is current.
    conf = dict(target.gallery_conf, filename_pattern=".*", plot_gallery=True, run_stale_examples=True, abort_on_example_error=False)
    _, _, _, out_vars = generate_file_rst(target.fname, target.target_dir, target.src_dir, conf)
    # sphinx-gallery skips the checksum when a block raised; write it anyway so the
    # page (with its traceback) is kept: re-running is torchclaims' decision.
    target_file = Path(target.target_dir, target.fname)
    Path(f"{target_file}.md5").write_text(get_md5sum(target_file, mode="t"))
    if out_vars.get("formatted_exception"):
        lines = out_vars["formatted_exception"].strip().splitlines()
        raise ScriptRaised(lines[-1] if lines else "the script raised an exception")


def _save_figures(directory: Path) -> None:
    """Keep the script's figures with its record (sphinx-gallery does it for pages)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    for number in pyplot.get_fignums():
        pyplot.figure(number).savefig(directory / f"figure-{number}.png", dpi=72)


class ScriptRaised(Exception):
    """The script raised inside sphinx-gallery, which already printed it."""


def run(job: ChildJob) -> None:
    """Entry point of the child process."""
    os.setsid()
    os.environ.update(job.env)
    _redirect_output(job.log_path)
    os.chdir(job.cwd)
    sys.path.insert(0, str(Path(job.script).parent))
    sys.argv = [job.script]
    import torch

    torch.set_num_threads(job.threads)
    status: dict[str, str] = {}
    code = 0
    try:
        if job.gallery is not None:
            _run_gallery(job)
        else:
            runpy.run_path(job.script, run_name="__main__")
            _save_figures(Path(job.figures_dir))
    except SystemExit as exc:
        status["ended"] = f"the script called sys.exit({exc.code!r})"
        code = 1
    except ScriptRaised as exc:
        status["ended"] = f"the script raised {exc}"
        code = 1
    except BaseException as exc:
        traceback.print_exc()
        status["ended"] = f"the script raised {type(exc).__name__}: {exc}"
        code = 1
    Path(job.status_path).write_text(json.dumps(status))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip atexit handlers and threads the script left behind


def probe(backend_name: str, env: dict[str, str], conn) -> None:
    """Resolve the backend and fingerprint the environment; send the answer back."""
    os.environ.update(env)
    try:
        from .backends import resolve_backend
        from .fingerprint import collect

        backend, why = resolve_backend(backend_name)
        unavailable = backend.check_available()
        environment = collect(backend, usable=unavailable is None)
        conn.send({"backend": backend.name, "why": why, "unavailable": unavailable, "environment": environment.model_dump(mode="json")})
    except BaseException as exc:
        conn.send({"error": f"{type(exc).__name__}: {exc}"})
    conn.close()
