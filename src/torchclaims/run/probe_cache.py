"""The environment probe's answer, remembered between runs.

Probing resolves the backend and fingerprints the environment in a child with
torch imported: seconds. Its answer can only change when what it reads
changes: the interpreter, the installed distributions, the hardware the
system shows, the environment variables a fingerprint records, or the code
that probes. All of these can be read without torch in milliseconds; their
digests key the remembered answer. A run that finds the answer current and no
claim to run starts no process at all. A run with claims to run probes again
(torchclaims.run.execution), so every new record carries an environment measured
by the run that made it; when a key part changed, the run says which.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import sys
from pathlib import Path

from pydantic import ValidationError

from ..backends import BUILTIN_BACKENDS
from ..errors import InvalidFileError
from ..evidence.fingerprint import COMMON_ENV_PREFIXES
from ..evidence.memo import PACKAGE_DIR
from ..evidence.records import Environment
from ..fileio import file_sha256, read_json, write_if_changed
from .runner import Probe
from .runtimes import device_nodes

# The code whose answer is remembered: resolving, checking and fingerprinting a
# backend, the environment the runner gives a child, and the record model.
PROBE_CODE = (
    "backends.py",
    "evidence/fingerprint.py",
    "evidence/records.py",
    "run/runner.py",
    "run/_child.py",
    "run/preload/__init__.py",
    "run/runtimes.py",
    "__init__.py",
)
# Variables that decide which libraries load and which devices a library sees,
# beyond those a fingerprint records (every backend's prefixes).
LOADER_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD")
DISTRIBUTION_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".pth")
MAX_FILE_BYTES = 256 * 1024
FORMAT = 1


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _interpreter() -> str:
    real = os.path.realpath(sys.executable)
    try:
        stat = os.stat(real)
        return f"{real} {stat.st_size} {stat.st_mtime_ns} {sys.version}"
    except OSError:
        return f"{real} {sys.version}"


def _distributions() -> str:
    """Every distribution on the search path, with when it was installed, in the
    order the path gives them (the first of two versions is the one imported).
    Folders without any (a script's own) leave no trace: running the build as
    ``sphinx-build`` or as ``python -m sphinx`` is the same environment."""
    found = []
    for entry in sys.path:
        try:
            with os.scandir(os.path.abspath(entry or ".")) as listing:
                names = sorted(
                    f"{item.name} {item.stat().st_mtime_ns}"
                    for item in listing
                    if item.name.endswith(DISTRIBUTION_SUFFIXES)
                )
        except OSError:
            continue
        found.extend(f"{os.path.abspath(entry or '.')}/{name}" for name in names)
    return "\n".join(found)


def _variables() -> str:
    prefixes = COMMON_ENV_PREFIXES + LOADER_VARIABLES + tuple(p for b in BUILTIN_BACKENDS for p in b.env_prefixes)
    return "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith(prefixes))


def _hardware() -> str:
    parts = [" ".join(os.uname())]  # not platform.uname(): it runs `uname -p`
    for name in ("/proc/cpuinfo", "/proc/driver/nvidia/version"):
        try:
            with open(name, encoding="utf-8", errors="replace") as handle:
                parts.extend(line.strip() for line in handle if line.startswith(("model name", "NVRM")))
        except OSError:
            continue
    for path in device_nodes():  # and what a folder of them holds (/dev/dri/renderD128)
        parts.extend([path, *sorted(glob.glob(f"{path}/*"))])
    return "\n".join(dict.fromkeys(parts))


def _code() -> str:
    return _digest(*(file_sha256(PACKAGE_DIR / name) for name in PROBE_CODE))


def key_parts(backend: str) -> dict[str, str]:
    """What the probe's answer depends on, each part as a digest, by the name a message uses."""
    return {
        "the backend asked for": _digest(backend),
        "the Python interpreter": _digest(_interpreter()),
        "the installed distributions": _digest(_distributions()),
        "the environment variables": _digest(_variables()),
        "the hardware": _digest(_hardware()),
        "torchclaims' probing code": _code(),
    }


# What a changed part means to someone who changed nothing on purpose (a part not listed speaks for itself).
MEANING = {
    "the installed distributions": "the installed Python packages (this is another environment than the last "
    "probe's, or something was installed or upgraded since)",
    "the Python interpreter": "the Python interpreter (another environment, or Python was upgraded)",
}


def recall(path: Path, parts: dict[str, str]) -> tuple[Probe | None, str]:
    """The remembered probe when every key part is unchanged; else None and why it must run."""
    if not path.exists():
        return None, "no earlier probe in this records folder (a first run)"
    try:
        data = read_json(path, MAX_FILE_BYTES, "remembered probe")
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("parts"), dict):
            return None, f"{path} is not a remembered probe of this version"
        answer = data["probe"]
        probe = Probe(
            str(answer["backend"]),
            str(answer["why"]),
            answer["unavailable"],
            Environment.model_validate(answer["environment"]),
        )
        if probe.unavailable is not None and not isinstance(probe.unavailable, str):
            raise TypeError("unavailable must be text or null")
    except InvalidFileError as exc:
        return None, f"the remembered probe cannot be used: {exc.problems[0].message}"
    except (KeyError, TypeError, ValidationError):
        return None, f"{path} is not a valid remembered probe"
    changed = [name for name, digest in parts.items() if data["parts"].get(name) != digest]
    if changed:
        return None, "changed since the last probe: " + ", ".join(MEANING.get(name, name) for name in changed)
    return probe, ""


def remember(path: Path, parts: dict[str, str], probe: Probe) -> None:
    answer = {
        "backend": probe.backend,
        "why": probe.why,
        "unavailable": probe.unavailable,
        "environment": probe.environment.model_dump(mode="json"),
    }
    write_if_changed(
        path, json.dumps({"format": FORMAT, "parts": parts, "probe": answer}, indent=2, sort_keys=True) + "\n"
    )
