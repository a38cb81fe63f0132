"""Code that runs inside a claim's processes (forked from the fork server).

Kept small and importable so the fork server can preload it together with torch.
The claim's process leads a new session and supervises: it forks the script's
process into the sandbox's namespaces (torchclaims.run.sandbox), keeps the end of
its output (file descriptors 1 and 2, C++ output too) within a byte limit,
receives its result record over a pipe, and when the script ends, times out,
is interrupted or the run's parent process is gone, it ends every process the
script started (torchclaims.run.processes) and removes the script's own temporary
directory. The supervisor writes the log, the record and the status files,
in the run's folder, which the script cannot write to.

The script's process confines itself (Landlock) and then runs the script
(through sphinx-gallery when a page is wanted) with ``TMPDIR`` pointing at
its own directory, the only place it can write: its figures and its page go
there too, and the runner takes them from there (torchclaims.run.runner).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import multiprocessing
import os
import runpy
import signal
import stat
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from ..limits import Limits
from . import bounds, processes, sandbox
from .folders import remove_tree

# The environment of every script (the fork server's too: see preload). Scripts
# draw figures off-screen and never reach the Hugging Face Hub. Inductor
# compiles in the script's process itself: a pool of compile workers would
# outlive the script's hard exit and leak its semaphores.
SCRIPT_ENVIRONMENT = {"MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"}
RECORD_FD_ENV = "TORCHCLAIMS_RECORD_FD"  # the pipe on which the verification API hands the record to the supervisor
CPUS_ENV = "TORCHCLAIMS_CPUS"  # the CPUs the run gives the script: its torch threads, and where a sweep starts
TEXT_REPRS = ("__repr__", "__str__")  # the capture_repr methods a page may show a value by


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
    root: str  # the repository the script belongs to (it reads the project)
    build_tmp: str  # the build's temporary folder (the fork server's socket is there): hidden from the script
    env: dict[str, str]
    run_dir: str  # the claim's folder in the run's: the supervisor's files, and the script's own folder
    shown_instead: dict[str, str]  # a shared folder -> the claim's own one its mount namespace shows there
    cache_dirs: tuple[str, ...]  # folders outside its own the script may write: its own compiler caches
    threads: int
    log_bytes: int  # the end of the output kept for the record
    log_lines: int
    record_bytes: int  # the largest record the supervisor accepts
    loopback: bool = False  # the claim needs the loopback interface (a process group on 127.0.0.1)
    readable: tuple[str, ...] = ()  # paths the run names that the script reads (a model file's folder)
    parts: tuple[str, ...] = sandbox.PARTS  # the sandbox's parts applied (all, but in torchclaims doctor)
    unconfined: str | None = None  # why the sandbox is off for this run (None: it is on)
    sandbox_required: bool = False  # CI=true: a script the sandbox cannot confine does not run
    gallery: GalleryTarget | None = None
    limits: Limits = field(default_factory=Limits)  # what the claim may take (torchclaims.run.bounds)

    # Written by the supervisor only:
    @property
    def log_path(self) -> str:
        return os.path.join(self.run_dir, "log")

    @property
    def status_path(self) -> str:
        return os.path.join(self.run_dir, "status.json")

    @property
    def record_path(self) -> str:
        return os.path.join(self.run_dir, "record.json")

    # The script's own folder, the only place it can write:
    @property
    def work_dir(self) -> str:
        return os.path.join(self.run_dir, "work")

    @property
    def tmp_dir(self) -> str:  # its TMPDIR, removed when the claim ends
        return os.path.join(self.work_dir, "tmp")

    @property
    def figures_dir(self) -> str:  # figures left open by a plain run
        return os.path.join(self.work_dir, "figures")

    @property
    def page_dir(self) -> str:  # the gallery page, staged for the runner to move into place
        return os.path.join(self.work_dir, "page")

    @property
    def figure_folders(self) -> list[str]:  # where the runner takes figures from: a plain run's, or its page's
        if self.gallery is None:
            return [self.figures_dir]
        images = os.path.join(staged_target(self)[1], "images")
        return [images, os.path.join(images, "thumb")]

    @property
    def ended_path(self) -> str:  # how the script ended, in the script's words
        return os.path.join(self.work_dir, "ended.json")


def _redirect_output(fd: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)


def _log_page_output() -> None:
    """Send what the script prints to this process's output too, where the
    supervisor keeps its end for the record: sphinx-gallery captures it for the
    page and logs each line at Sphinx's verbose level, through its own logger."""
    from sphinx.util.logging import VERBOSE, getLogger

    handler = logging.StreamHandler(sys.stdout)
    handler.addFilter(lambda entry: entry.msg != "Output from %s")  # the header before each block's output
    gallery_logger = getLogger("sphinx-gallery").logger
    gallery_logger.addHandler(handler)
    gallery_logger.setLevel(VERBOSE)
    gallery_logger.propagate = False


def staged_target(job: ChildJob) -> tuple[str, str]:
    """(source folder, gallery output folder) as the script's process sees them:
    the same layout beneath its page folder, so the page's links come out as
    they would in the real source folder."""
    target = job.gallery
    relative = os.path.relpath(target.target_dir, target.gallery_conf["src_dir"])
    return job.page_dir, os.path.join(job.page_dir, relative)


def _run_gallery(job: ChildJob) -> None:
    """Let sphinx-gallery execute the script block by block and write its page
    (into the script's own folder: the runner moves it into place)."""
    from sphinx_gallery.gen_rst import generate_file_rst
    from sphinx_gallery.utils import get_md5sum

    target = job.gallery
    _log_page_output()
    src_dir, target_dir = staged_target(job)
    os.makedirs(target_dir, exist_ok=True)
    # The parent decided this script must run: execute it even if sphinx-gallery's
    # own checksum says the page is current. A value is shown by its text repr
    # only (the build shows all output as text anyway: torchclaims.run.gallery_page).
    conf = dict(
        target.gallery_conf,
        src_dir=src_dir,
        filename_pattern=".*",
        plot_gallery=True,
        run_stale_examples=True,
        abort_on_example_error=False,
    )
    conf["capture_repr"] = tuple(method for method in conf["capture_repr"] if method in TEXT_REPRS)
    _, _, _, out_vars = generate_file_rst(target.fname, target_dir, target.src_dir, conf)
    # sphinx-gallery skips the checksum when a block raised; write it anyway so the
    # page (with its traceback) is kept: re-running is torchclaims' decision.
    target_file = Path(target_dir, target.fname)
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
        # the script gets Python's usual handler back (torchclaims.run.preload).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        processes.become_subreaper()
        processes.die_with_parent(signal.SIGTERM)  # the fork server is gone: clean up and leave
        os.makedirs(job.tmp_dir, mode=0o700, exist_ok=True)
        for folder in (*job.cache_dirs, *job.shown_instead.values()):
            os.makedirs(folder, exist_ok=True)  # a sandbox rule needs the folder to exist
        for shared, own in job.shown_instead.items():  # where torch looks under the script's TMPDIR leads there too
            os.symlink(own, os.path.join(job.tmp_dir, os.path.basename(shared)))
        # the script's process is init of its own PID namespace
        unconfined = job.unconfined or (
            sandbox.isolate_processes() if sandbox.NAMESPACES in job.parts else f"{sandbox.NAMESPACES} left out"
        )
        read_fd, write_fd = os.pipe()
        record_r, record_w = os.pipe()
        state_r, state_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            for fd in (read_fd, record_r, state_r):
                os.close(fd)
            _script(job, write_fd, record_w, state_w, unconfined)  # never returns
        for fd in (write_fd, record_w, state_w):
            os.close(fd)
        parent = multiprocessing.parent_process()
        tail, record = processes.OutputTail(job.log_bytes), processes.Received(job.record_bytes)
        shm = f"/proc/{pid}/root/dev/shm"  # the script's own, in its mount namespace
        watch = (lambda: bounds.while_running(os.getpid(), job.limits, shm)) if processes.LINUX else None
        ended = processes.supervise(
            pid, read_fd, parent.sentinel if parent else None, tail, {record_r: record}, watch, bounds.WATCH_S
        )
        left = processes.end_tree(os.getpid(), group=None if processes.LINUX else pid)
        processes.drain(read_fd, tail)
        processes.drain(record_r, record)
        Path(job.log_path).write_text(tail.text(job.log_lines), encoding="utf-8")
        if record.data:
            Path(job.record_path).write_bytes(record.data)
        remove_tree(job.tmp_dir)
        said = _script_said(job.ended_path)
        status = {
            "ended": str(said.get("ended", "") if isinstance(said, dict) else "")[:2000],
            "exit_code": ended.exit_code,
            "stopped": ended.stopped,
            "left": left,
            "sandbox": _sandbox_state(state_r, unconfined),
            "exceeded": [ended.exceeded] if ended.exceeded else [],
        }
        Path(job.status_path).write_text(json.dumps(status))
        code = 0
    except BaseException as exc:  # never leave the script's processes behind, nor an empty status
        Path(job.status_path).write_text(
            json.dumps({"ended": f"the claim's supervising process failed: {type(exc).__name__}: {exc}"})
        )
        processes.end_tree(os.getpid())
    finally:
        os._exit(code)


def _script_said(path: str) -> object:
    """How the script's process said it ended: the script's own words, so bounded,
    only ever a cause of error, and read only from a regular file (not through a
    link, and never a FIFO, which would keep this process waiting for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as handle:
        try:
            return json.loads(handle.read(8192)) if stat.S_ISREG(os.fstat(fd).st_mode) else {}
        except (OSError, ValueError):
            return {}


def _sandbox_state(state_fd: int, unconfined: str | None) -> str:
    """What the script's process said of its confinement before the script ran
    (it closed that pipe first, so the script cannot write to it)."""
    os.set_blocking(state_fd, False)
    try:
        said = os.read(state_fd, 4096).decode("utf-8", "replace")
    except OSError:
        said = ""
    os.close(state_fd)
    if unconfined is not None and not said.startswith(sandbox.WITHOUT):  # it says what still held, after why
        return f"{sandbox.WITHOUT}: {unconfined}"
    return said or f"{sandbox.WITHOUT}: the script's process ended before it was confined"


def _enter_sandbox(job: ChildJob, state_fd: int, unconfined: str | None) -> None:
    """Confine this process (and all it will start); say how, on a pipe closed
    before the script runs. Where CI=true requires the sandbox, stop without it.
    Without namespaces, Landlock still confines what it can."""
    proc = False  # the namespace's own /proc, its system-wide entries read-only
    if unconfined is None and sandbox.MOUNTS in job.parts:
        unconfined = sandbox.private_mounts(
            _visible(job), job.build_tmp, [job.work_dir, *job.cache_dirs], job.shown_instead
        )
        proc = unconfined is None and sandbox.PROC_WRITES in job.parts and sandbox.protect_proc() is None
        if job.loopback and unconfined is None:
            unconfined = sandbox.loopback_up()
    elif unconfined is None:
        unconfined = f"{sandbox.MOUNTS} left out"
    landlocked = False
    if job.unconfined is None and sandbox.LANDLOCK in job.parts:  # not turned off
        writable = [job.work_dir, *job.cache_dirs, *(job.shown_instead if unconfined is None else ())]
        refused = sandbox.confine(writable, job.loopback, proc)
        landlocked, unconfined = refused is None, refused or unconfined
    elif unconfined is None:
        unconfined = f"{sandbox.LANDLOCK} left out"
    if unconfined is None:
        state = sandbox.description(sandbox.landlock_abi(), job.loopback, proc)
    else:  # a part missing is the whole sandbox missing to a reader; what held is said after why
        held = f"; Landlock ABI {sandbox.landlock_abi()} still confined its writes" if landlocked else ""
        state = f"{sandbox.WITHOUT}: {unconfined}{held}"
    os.write(state_fd, state.encode("utf-8")[:4000])
    os.close(state_fd)
    if unconfined is not None and job.sandbox_required:
        raise SandboxMissing(sandbox.REQUIRED_BUT + unconfined)


def _visible(job: ChildJob) -> list[str]:
    """What the script reads or writes beneath the hidden folders (/tmp above all),
    bound back in: the project, its own folder, its own caches, the home folder,
    the interpreter's and its packages' folders (a venv's, what its .pth files add,
    and where imported modules really are), and the paths the run names (a model
    file's folder)."""
    return [
        job.root,
        job.work_dir,
        *job.cache_dirs,
        *job.readable,
        os.path.expanduser("~"),
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        *filter(None, sys.path),
        *_linked_from(filter(None, sys.path)),
        *_imported_folders(),
    ]


def _linked_from(folders) -> list[str]:
    """Where the links in the package folders lead (a machine's torch linked
    into a venv's folder): the script, and every process it starts, import through them."""
    found = []
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                targets = [os.path.realpath(entry.path) for entry in entries if entry.is_symlink()]
            found += [t if os.path.isdir(t) else os.path.dirname(t) for t in targets]  # a linked module: its folder
        except OSError:
            continue  # a zip, or a folder that is gone
    return found


def _imported_folders() -> set[str]:
    """Where the modules imported so far really live, whatever finder found
    them (an editable install maps its package to a folder off the path)."""
    files = [getattr(module, "__file__", None) for module in list(sys.modules.values())]
    if "torch" not in sys.modules:  # a fork server that imports nothing: the script imports it
        spec = importlib.util.find_spec("torch")
        files.append(spec.origin if spec is not None else None)
    folders = {os.path.dirname(file) for file in files if isinstance(file, str)}  # thousands of modules, few folders
    return {os.path.realpath(folder) for folder in folders}


class SandboxMissing(Exception):
    """CI=true and the script could not be confined: it must not run."""


def _script(job: ChildJob, output_fd: int, record_fd: int, state_fd: int, unconfined: str | None) -> None:
    """The script's process: confine it, run the script, say how it ended, exit without cleanup."""
    code = 1
    status: dict[str, str] = {}
    try:
        processes.die_with_parent()
        if not processes.LINUX:
            os.setpgid(0, 0)  # the supervisor can end this group, at least
        _redirect_output(output_fd)
        os.environ.update(job.env, TMPDIR=job.tmp_dir, TEMP=job.tmp_dir, TMP=job.tmp_dir)
        allowed = sandbox.script_environment(dict(os.environ), _backend_prefixes())
        os.environ.clear()
        os.environ.update(allowed)
        os.environ[RECORD_FD_ENV] = str(record_fd)
        tempfile.tempdir = None  # the fork server may have looked the old one up already
        _own_resource_tracker()
        sys.dont_write_bytecode = True  # the project is read-only to the script
        _enter_sandbox(job, state_fd, unconfined)
        os.chdir(job.cwd)
        sys.path.insert(0, str(Path(job.script).parent))
        sys.argv = [job.script]
        import torch

        torch.set_num_threads(job.threads)
        os.environ[CPUS_ENV] = str(job.threads)  # a sweep starts that many workers, then grows
        if sandbox.BOUNDS in job.parts:
            bounds.restrict(job.limits, own_user_namespace=unconfined is None)
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
            status["ended"] = _raised(str(exc), job.limits)
            code = 1
        except BaseException as exc:
            traceback.print_exc()
            status["ended"] = _raised(f"{type(exc).__name__}: {exc}", job.limits)
            code = 1
    except SandboxMissing as exc:
        status["ended"] = str(exc)
        code = 1
    finally:
        try:
            Path(job.ended_path).write_text(json.dumps(status))
        except OSError:
            pass  # the script removed its own folder: the exit code still says how it ended
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # skip atexit handlers and threads the script left behind


def _raised(exception: str, limits: Limits) -> str:
    """How a script that raised ``exception`` ended, with the bound it ran into, if any."""
    bound = bounds.exceeded_by(exception, limits)
    return f"the script raised {exception}" + (f"; {bound}" if bound else "")


def _backend_prefixes() -> tuple[str, ...]:
    """The variables every backend records, which its runtime reads (XLA_FLAGS, NEURON_RT_...)."""
    from ..backends import all_backends

    return tuple(prefix for backend in all_backends().values() for prefix in backend.env_prefixes)


def _own_resource_tracker() -> None:
    """Semaphores the script makes are tracked by a tracker of its own, inside
    its sandbox: one left by a killed script then never reaches the run's
    tracker, which would report it as leaked on the build's terminal."""
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker
    if getattr(tracker, "_fd", None) is not None:
        os.close(tracker._fd)
    tracker._fd = tracker._pid = None


def probe(backend_name: str, env: dict[str, str], conn) -> None:
    """Resolve the backend and fingerprint the environment; send the answer back."""
    os.environ.update(env)
    try:
        from ..backends import resolve_backend
        from ..evidence.fingerprint import collect

        backend, why = resolve_backend(backend_name)
        unavailable = backend.smoke()
        environment = collect(backend, usable=unavailable is None)
        conn.send(
            {
                "backend": backend.name,
                "why": why,
                "unavailable": unavailable,
                "environment": environment.model_dump(mode="json"),
            }
        )
    except BaseException as exc:
        conn.send({"error": f"{type(exc).__name__}: {exc}"})
    conn.close()
