"""Code that runs inside a claim's processes (forked from the fork server).

Kept small and importable so the fork server can preload it together with torch.
The claim's process leads a new session and supervises: it forks the script's
process, keeps the end of its output (file descriptors 1 and 2, C++ output
too) within a byte limit, and when the script ends, times out, is interrupted
or the run's parent process is gone, it ends every process the script started
(torchclaims.processes) and removes the script's own temporary directory.
The script's process runs the script (through sphinx-gallery when a page is
wanted) with ``TMPDIR`` pointing at that directory, and tells the supervisor
how the script ended through a small status file. The result record itself
is written by the verification API.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import runpy
import shutil
import signal
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import processes

# The environment of every script (the fork server's too: see preload). Scripts
# draw figures off-screen and never reach the Hugging Face Hub. Inductor
# compiles in the script's process itself: a pool of compile workers would
# outlive the script's hard exit and leak its semaphores.
SCRIPT_ENVIRONMENT = {"MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"}


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
    tmp_dir: str  # the script's own TMPDIR, removed when the claim ends
    tmp_links: dict[str, str]  # name in tmp_dir -> shared directory it links to (torch's caches)
    threads: int
    log_bytes: int  # the end of the output kept for the record
    log_lines: int
    page_output_bytes: int  # what the script's page may show of its output
    gallery: GalleryTarget | None = None


def _redirect_output(fd: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)


def _bound_page_output(limit: int) -> None:
    """Cap what sphinx-gallery captures for the page at ``limit`` bytes per script,
    and never let an object's HTML repr onto the page (it would render as HTML).

    sphinx-gallery offers no setting for either, so its capturing tee and its
    repr helper are replaced in this process only.
    """
    from sphinx_gallery import gen_rst

    remaining = [limit]
    note = f"\n[… output cut here: a page shows at most {limit:,} bytes of a script's output]\n"

    def keep(text: str) -> str:
        size = len(text.encode("utf-8", "replace"))
        if size <= remaining[0]:
            remaining[0] -= size
            return text
        kept = text.encode("utf-8", "replace")[: remaining[0]].decode("utf-8", "ignore")
        remaining[0] = 0
        return kept

    class BoundedTee(gen_rst._LoggingTee):
        def set_std_and_reset_position(self):
            self.cut = False
            return super().set_std_and_reset_position()

        def write(self, data: str) -> None:
            self.origs[0].write(data)  # the supervisor keeps the end for the record
            kept = keep(data)
            self.output.write(kept)
            if len(kept) < len(data) and not self.cut:
                self.output.write(note)
                self.cut = True

        def flush(self) -> None:
            self.output.flush()

    original_repr = gen_rst._get_last_repr

    def text_repr(capture_repr, value):
        text, method = original_repr(tuple(m for m in capture_repr if m != "_repr_html_"), value)
        return (keep(text) if isinstance(text, str) else text), method

    gen_rst._LoggingTee = BoundedTee
    gen_rst._get_last_repr = text_repr


def _run_gallery(job: ChildJob) -> None:
    """Let sphinx-gallery execute the script block by block and write its page."""
    from sphinx_gallery.gen_rst import generate_file_rst
    from sphinx_gallery.utils import get_md5sum

    target = job.gallery
    _bound_page_output(job.page_output_bytes)
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
    """Entry point of the claim's process: supervise the script, then end all it started."""
    code = 1
    try:
        os.setsid()
        # Out of the terminal's process group now, so Ctrl-C no longer reaches it:
        # the script gets Python's usual handler back (torchclaims.preload).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        processes.become_subreaper()
        processes.die_with_parent(signal.SIGTERM)  # the fork server is gone: clean up and leave
        os.makedirs(job.tmp_dir, mode=0o700, exist_ok=True)
        for name, target in job.tmp_links.items():
            os.makedirs(target, exist_ok=True)
            os.symlink(target, os.path.join(job.tmp_dir, name))
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _script(job, write_fd)  # never returns
        os.close(write_fd)
        parent = multiprocessing.parent_process()
        tail = processes.OutputTail(job.log_bytes)
        ended = processes.supervise(pid, read_fd, parent.sentinel if parent else None, tail)
        left = processes.end_tree(os.getpid(), group=None if processes.LINUX else pid)
        processes.drain(read_fd, tail)
        Path(job.log_path).write_text(tail.text(job.log_lines), encoding="utf-8")
        shutil.rmtree(job.tmp_dir, ignore_errors=True)
        try:
            status = json.loads(Path(job.status_path).read_text())
        except (OSError, ValueError):
            status = {}
        status = {"ended": str(status.get("ended", ""))[:2000], "exit_code": ended.exit_code, "stopped": ended.stopped, "left": left}
        Path(job.status_path).write_text(json.dumps(status))
        code = 0
    except BaseException as exc:  # never leave the script's processes behind, nor an empty status
        Path(job.status_path).write_text(json.dumps({"ended": f"the claim's supervising process failed: {type(exc).__name__}: {exc}"}))
        processes.end_tree(os.getpid())
    finally:
        os._exit(code)


def _script(job: ChildJob, output_fd: int) -> None:
    """The script's process: run it, report how it ended, exit without cleanup."""
    code = 1
    try:
        processes.die_with_parent()
        if not processes.LINUX:
            os.setpgid(0, 0)  # the supervisor can end this group, at least
        _redirect_output(output_fd)
        os.environ.update(job.env, TMPDIR=job.tmp_dir, TEMP=job.tmp_dir, TMP=job.tmp_dir)
        tempfile.tempdir = None  # the fork server may have looked the old one up already
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
    finally:
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
