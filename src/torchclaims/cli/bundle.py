"""``torchclaims bundle``: what verify needs, packed for a machine with torch and no package index."""

from __future__ import annotations

import sys
from pathlib import Path

from . import ExitCode
from .common import project_root


def register(add) -> None:
    pack = add(
        "bundle",
        "pack what verify needs (wheels, claims/, gallery/, run.sh) into a folder "
        "for a machine with torch and no package index",
    )
    pack.add_argument("output", help="the folder to create")
    pack.add_argument(
        "--allow-uncommitted",
        action="store_true",
        help="pack uncommitted changes too (their runs' records are rejected on merge: a trial run only)",
    )
    pack.add_argument(
        "--python-version",
        default=f"{sys.version_info.major}.{sys.version_info.minor}",
        help="CPython of the target machine (default: this one's)",
    )
    pack.set_defaults(run=run)


def run(args) -> ExitCode:
    import time

    from ..run.bundle import bundle

    started = time.perf_counter()
    packed = bundle(
        project_root(args), Path(args.output).resolve(), args.python_version, allow_uncommitted=args.allow_uncommitted
    )
    print(
        f"packed {packed.path}: {len(packed.wheels)} wheels, {packed.size / 2**20:.1f} MB, "
        f"in {time.perf_counter() - started:.0f} s"
    )
    print(
        f"on the machine with torch: {packed.path / 'run.sh'} --backend <backend>  (PYTHON=... names its interpreter)"
    )
    return ExitCode.OK
