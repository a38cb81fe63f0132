"""The sandbox a claim script runs in (Linux): what it may write, reach and leave behind.

Both layers are the kernel's own, need no privilege and apply after a fork, so
they fit the fork server (no exec, no import):

* Namespaces. The claim's supervisor moves into a new user namespace and makes
  the script's process the first process (init) of a new PID namespace and of
  a new network namespace (``isolate_processes``). When init ends, the kernel
  kills every process left in its PID namespace, whatever session it moved to;
  init dies with the supervisor (``PR_SET_PDEATHSIG``), so killing the
  supervisor frees nothing. The network namespace has only a loopback
  interface, brought up only for a claim that needs it (``network =
  "loopback"``: a process group on 127.0.0.1). The script's process also gets
  a mount namespace in which every file system is read-only but the claim's
  own folder and its own compiler caches (Landlock does not govern chmod, chown,
  utime or extended attributes; a read-only mount refuses them), a /proc of
  its PID namespace, and an empty tmpfs over
  each folder where the machine's services keep their Unix sockets (/run,
  /tmp, /var/tmp, /dev/shm and the build's temporary folder, which holds the
  fork server's own socket), with only the claim's own paths beneath them
  bound back (``private_mounts``). Landlock (up to ABI 7) does not govern
  connect() on a socket by its path, so hiding them is what keeps a script
  from D-Bus, docker or the unconfined fork server. In that /proc every
  system-wide entry (sysctls, sysrq-trigger, ...) is bound read-only over
  itself (``protect_proc``): only the entries of the sandbox's own processes
  stay writable there.
* Landlock (``confine``). Writing is denied everywhere but beneath the claim's
  own directory and its own compiler caches (torchclaims.run.compiler_caches),
  to the device nodes a backend opens and, where the script has the
  /proc of its own PID namespace, beneath that /proc: accelerator runtimes
  write there when they start (CUDA fails with "Error 304: OS call failed or
  operation not supported on this OS" without it); TCP bind and connect are
  denied unless the claim needs loopback; from ABI 6, signals and abstract
  Unix sockets outside the sandbox (the supervisor, the build, the fork
  server) are denied too (the network namespace already keeps the machine's
  abstract sockets apart; this holds without it). Reading stays allowed: a
  script reads the project, torch and the claim's inputs.

Where a layer is missing the script still runs, and its record says "ran
without sandbox" and why (and that Landlock still confined its writes, where
only the namespaces are missing: then the fork server does not preload the
compiler, whose headers' folder would be the shared one, read-only:
``namespaces_unavailable``); under ``CI=true`` it does not run (an error record).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import re
import socket
import struct
import subprocess
import sys

from .runtimes import device_nodes

LINUX = sys.platform.startswith("linux")
WITHOUT = "ran without sandbox"  # how a record that ran unconfined begins its sandbox field
REQUIRED_ENV = "CI"  # where CI=true, a script never runs unconfined
SWITCH_ENV = "TORCHCLAIMS_SANDBOX"  # "off": run scripts unconfined (their records say so)
REQUIRED_BUT = f"the sandbox is required here ({REQUIRED_ENV}=true) but "  # then why not: a script's error

_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000
_PROC_FLAGS = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
# mount_setattr(2) (Linux 5.12; the syscall number is shared by every architecture)
_MOUNT_SETATTR, _AT_FDCWD, _AT_RECURSIVE, _MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 0x1
# Where services keep their Unix sockets (D-Bus, docker, systemd, X11, ssh and
# gpg agents, the fork server's listener in the temporary folder): the script
# sees each as an empty tmpfs.
SOCKET_FOLDERS = ("/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm")
_PR_SET_NO_NEW_PRIVS = 38

# Landlock (include/uapi/linux/landlock.h); the syscall numbers are shared by every architecture.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_FS_WRITE_FILE = 1 << 1
_FS_WRITES_ABI1 = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write, remove, make anything
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
# The sandbox's parts, each of which a run can leave out to find the one that
# keeps a device from working (torchclaims doctor): all restrict but the /proc
# write rule, which lets a runtime write beneath the namespace's own /proc. The
# resource bounds are torchclaims.run.bounds.
NAMESPACES, MOUNTS, LANDLOCK, PROC_WRITES = "namespaces", "private mounts", "Landlock", "the /proc write rule"
BOUNDS = "resource bounds"
PARTS = (NAMESPACES, MOUNTS, LANDLOCK, PROC_WRITES, BOUNDS)
RESTRICTING = (NAMESPACES, MOUNTS, LANDLOCK, BOUNDS)


def without(part: str) -> tuple[str, ...]:
    """Every part of the sandbox but ``part``."""
    return tuple(p for p in PARTS if p != part)


MIN_ABI = 4  # the first to restrict TCP
SCOPE_ABI = 6  # the first to scope signals and abstract Unix sockets

# Device nodes a script may open for writing: the usual character devices and
# those of the accelerators (torchclaims.run.runtimes.DEVICE_NODE_NAMES).
_DEVICES = ("null", "zero", "full", "random", "urandom")  # no terminal: a script cannot write to the user's


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _NetPort(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _failed(what: str) -> str:
    code = ctypes.get_errno()
    return f"{what} failed ({errno.errorcode.get(code, code)}: {os.strerror(code)})"


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none)."""
    if not LINUX:
        return 0
    try:
        version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, version)


def isolate_processes() -> str | None:
    """In the supervisor, before it forks the script's process: a new user
    namespace (this process, mapped to its own ids), and new PID and network
    namespaces for its children. Returns why not, or None."""
    if not LINUX:
        return f"process isolation needs Linux namespaces ({platform.system()} has none)"
    uid, gid = os.geteuid(), os.getegid()
    if _libc().unshare(_CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNET) != 0:
        return _failed("unshare(user, PID and network namespaces)")
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    except OSError as exc:
        return f"mapping the user namespace's ids failed ({exc.strerror})"
    return None


def namespaces_unavailable() -> str | None:
    """Why a claim's supervisor could not make its namespaces here, or None. Tried
    in a new interpreter (nothing imported), so that this process stays as it is."""
    if not LINUX:
        return f"process isolation needs Linux namespaces ({platform.system()} has none)"
    flags = _CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNET
    code = (
        "import ctypes, os, sys\n"
        f"if ctypes.CDLL(None, use_errno=True).unshare({flags}) != 0: sys.exit(os.strerror(ctypes.get_errno()))"
    )
    try:
        done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"trying unshare(user, PID and network namespaces) failed ({exc})"
    said = done.stderr.decode("utf-8", "replace").strip()[-200:]
    return None if done.returncode == 0 else f"unshare(user, PID and network namespaces) failed ({said})"


def private_mounts(
    visible: list[str], build_tmp: str, writable: list[str], shown_instead: dict[str, str]
) -> str | None:
    """In the script's process (init of its PID namespace): a mount namespace
    in which every file system is read-only but ``writable`` (so chmod, chown,
    utime and extended attributes fail where Landlock, which does not govern
    them, lets them through), with a /proc of that namespace, and an empty
    tmpfs over each of the ``SOCKET_FOLDERS`` and ``build_tmp`` (the build's
    temporary folder, where the fork server listens), all gone with it. The
    paths in ``visible`` that lie beneath one (the claim's own folder, the
    repository, its own caches) are bound back in, read-only. Each folder of
    ``shown_instead`` (a shared cache) shows the claim's own folder it maps
    to, writable: what the script writes there never reaches the shared one.
    Returns why not, or None. A container may refuse a new /proc: that hides
    nothing, so it is not a reason."""
    libc = _libc()
    if libc.unshare(_CLONE_NEWNS) != 0:
        return _failed("unshare(mount namespace)")
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return _failed("making the mount namespace private")
    if _mount_setattr(libc, "/", set_=_MOUNT_ATTR_RDONLY, recursive=True) != 0:
        return _failed("making every file system read-only")
    libc.mount(b"proc", b"/proc", b"proc", _PROC_FLAGS, None)
    hidden = _folders_to_hide(build_tmp)
    kept = _outermost(p for p in map(os.path.realpath, visible) if any(p.startswith(h + os.sep) for h in hidden))
    handles, sources = {}, {}
    try:
        for path in kept:
            try:
                handles[path] = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue  # absent (or not a folder): nothing to bind back
        for target, source in shown_instead.items():  # opened before a tmpfs may hide it
            sources[target] = os.open(source, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        for folder in hidden:
            if libc.mount(b"tmpfs", folder.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=1777") != 0:
                return _failed(f"mounting an empty tmpfs over {folder}")
        for path, fd in handles.items():
            os.makedirs(path, exist_ok=True)
            if libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, _MS_BIND | _MS_REC, None) != 0:
                return _failed(f"binding {path} back")
        for path in writable:  # its own mount, writable again (and nothing else about it changed)
            target = os.path.realpath(path).encode()
            if libc.mount(target, target, None, _MS_BIND | _MS_REC, None) != 0:
                return _failed(f"binding {path} over itself")
            if _mount_setattr(libc, target.decode(), clear=_MOUNT_ATTR_RDONLY) != 0:
                return _failed(f"making {path} writable")
        for target, fd in sources.items():
            os.makedirs(target, exist_ok=True)  # in a tmpfs of its own (the build's temporary folder)
            if libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None, _MS_BIND, None) != 0:
                return _failed(f"showing {shown_instead[target]} at {target}")
            if _mount_setattr(libc, target, clear=_MOUNT_ATTR_RDONLY) != 0:
                return _failed(f"making {target} writable")
    except OSError as exc:
        return f"making the mount namespace failed ({exc.strerror}: {exc.filename})"
    finally:
        for fd in [*handles.values(), *sources.values()]:
            os.close(fd)
    return None


def _mount_setattr(libc, path: str, set_: int = 0, clear: int = 0, recursive: bool = False) -> int:
    """mount_setattr(2): change only the mount attributes named, keeping those
    the parent namespace locked (nosuid, nodev...), which a remount could not."""
    attr = _MountAttr(set_, clear, 0, 0)
    flags = _AT_RECURSIVE if recursive else 0
    return libc.syscall(
        _MOUNT_SETATTR, _AT_FDCWD, path.encode(), ctypes.c_uint(flags), ctypes.byref(attr), ctypes.sizeof(attr)
    )


def own_proc() -> bool:
    """Whether this process is the init of its own PID namespace and /proc is that namespace's."""
    try:
        return os.getpid() == 1 and os.readlink("/proc/self") == "1"
    except OSError:
        return False


def protect_proc() -> str | None:
    """After ``private_mounts``: bind each system-wide entry of the namespace's
    /proc read-only over itself, so that a write rule beneath /proc reaches
    only the sandbox's own processes (a user namespace's root mapped to the
    machine's root could otherwise write sysctls). Returns why not, or None."""
    if not own_proc():
        return "/proc is not the PID namespace's own"
    libc = _libc()
    for name in sorted(os.listdir("/proc")):
        path = f"/proc/{name}"
        if name.isdigit() or os.path.islink(path):  # a process's own entries; self, thread-self, mounts, net
            continue
        target = path.encode()
        if libc.mount(target, target, None, _MS_BIND | _MS_REC, None) != 0:
            return _failed(f"binding {path} over itself")
        if libc.mount(None, target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _PROC_FLAGS, None) != 0:
            return _failed(f"making {path} read-only")
    return None


def _folders_to_hide(build_tmp: str) -> list[str]:
    """The socket folders and ``build_tmp`` as real paths (/var/run is often a
    link to /run), without those beneath another."""
    return _outermost(os.path.realpath(p) for p in (*SOCKET_FOLDERS, build_tmp) if os.path.isdir(p))


def _outermost(paths) -> list[str]:
    """``paths`` without those beneath another one of them, sorted."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == k or path.startswith(k + os.sep) for k in kept):
            kept.append(path)
    return kept


def loopback_up() -> str | None:
    """Bring up the network namespace's loopback interface; why not, or None."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            request = struct.pack("16sH22x", b"lo", 0)
            flags = struct.unpack("16sH22x", fcntl.ioctl(sock, siocgifflags, request))[1]
            fcntl.ioctl(sock, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))
    except OSError as exc:
        return f"bringing up the loopback interface failed ({exc.strerror})"
    return None


def _device_paths() -> list[str]:
    try:
        names = os.listdir("/dev")
    except OSError:
        return []
    return [f"/dev/{n}" for n in names if n in _DEVICES] + device_nodes()


def confine(writable: list[str], loopback: bool, proc: bool = False) -> str | None:
    """Landlock this process and all it starts: writes only beneath ``writable``
    (and /dev/shm, device nodes, and /proc when ``proc``: only where
    ``protect_proc`` made its system-wide entries read-only), no TCP unless
    ``loopback``, no signals to processes outside. Returns why not, or None."""
    abi = landlock_abi()
    if abi < MIN_ABI:
        return f"Landlock ABI {abi} (kernel {platform.release()}); the sandbox needs ABI {MIN_ABI} or later"
    writes = _FS_WRITES_ABI1 | _FS_REFER | _FS_TRUNCATE
    attr = _RulesetAttr(
        writes,
        0 if loopback else _NET_BIND_TCP | _NET_CONNECT_TCP,
        _SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX if abi >= SCOPE_ABI else 0,
    )
    libc = _libc()
    ruleset = libc.syscall(
        _CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        return _failed("landlock_create_ruleset")
    try:
        rules = [(path, writes) for path in [*writable, "/dev/shm"]] + [
            (path, _FS_WRITE_FILE | _FS_TRUNCATE) for path in [*_device_paths(), *(["/proc"] if proc else [])]
        ]
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # absent here: nothing to allow
            try:
                if not os.path.isdir(path):
                    access &= _FS_WRITE_FILE | _FS_TRUNCATE  # what a rule on a file may allow
                rule = _PathBeneath(access, fd)
                if (
                    libc.syscall(
                        _ADD_RULE, ruleset, ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)
                    )
                    != 0
                ):
                    return _failed(f"landlock_add_rule({path})")
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return _failed("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            return _failed("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return None


def description(abi: int, loopback: bool, proc: bool = False) -> str:
    """What a confined script could do, as its record states it."""
    network = "loopback only" if loopback else "no network"
    scoped = "; no signal or abstract Unix socket outside" if abi >= SCOPE_ABI else ""
    own = ", device nodes and its own processes' /proc entries" if proc else ""
    return (
        f"sandboxed: Landlock ABI {abi} (writes only to its own directory{own}; {network}{scoped}), "
        "user, PID, network and mount namespaces "
        "(empty /run, /tmp, /var/tmp and /dev/shm: no Unix socket of the machine there)"
    )


# The environment a script sees: what programs, Python, torch and the backends
# read, by name or prefix (every backend's recorded prefixes too); never a
# variable whose name says it holds a secret, whatever its prefix (HF_TOKEN).
ENVIRONMENT_NAMES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TEMP", "TMP", "PWD"}
    | {"VIRTUAL_ENV", "LD_LIBRARY_PATH", "SSL_CERT_FILE", "SSL_CERT_DIR", "MPLBACKEND", "MPLCONFIGDIR", "CI"}
    | {"XDG_CACHE_HOME", "XDG_CONFIG_HOME"}
)
ENVIRONMENT_PREFIXES = (
    "LC_", "PYTHON", "CONDA_", "TORCHCLAIMS_", "TORCH", "PYTORCH_", "HF_", "TRANSFORMERS_", "TOKENIZERS_",
    "OMP_", "MKL_", "KMP_", "OPENBLAS_", "TRITON_", "NVIDIA_", "CUDA_", "CUBLAS_", "CUDNN_", "NCCL_", "GLOO_",
)  # fmt: skip
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|(^|_)KEY($|_)", re.IGNORECASE)


def script_environment(environ: dict[str, str], backend_prefixes: tuple[str, ...]) -> dict[str, str]:
    """The variables of ``environ`` a claim script may see: an allow-list, so
    that the build's secrets (GITHUB_TOKEN, cloud keys) never reach a script,
    its record or its page."""
    prefixes = ENVIRONMENT_PREFIXES + backend_prefixes
    return {
        name: value
        for name, value in environ.items()
        if (name in ENVIRONMENT_NAMES or name.startswith(prefixes)) and not SECRET_NAME.search(name)
    }


def required() -> bool:
    """Whether a script must not run without the sandbox here (CI=true)."""
    return os.environ.get(REQUIRED_ENV, "").lower() == "true"


def turned_off() -> str | None:
    """Why the sandbox is off (TORCHCLAIMS_SANDBOX=off, to debug a script), or None."""
    return f"turned off ({SWITCH_ENV}=off)" if os.environ.get(SWITCH_ENV, "").lower() == "off" else None
