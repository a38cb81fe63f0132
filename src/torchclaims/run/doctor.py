"""``torchclaims doctor``: what the sandbox does to a device on this machine, part by part.

A hardware owner whose claims all end "backend not usable" needs to know which
part of the sandbox (torchclaims.run.sandbox) keeps the device from working,
without bisecting it by hand. The doctor runs the device smoke
(torchclaims.run.device_smoke) where a claim runs, forked from the fork
server: first outside the sandbox (the probe), then with the whole sandbox,
then with each part left out in turn. A part whose absence makes the device
work is the one that stops it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UsageError
from . import sandbox
from .runner import Runner

LABEL_WIDTH = 32


def _row(label: str, why: str | None) -> str:
    return f"{label + ':':<{LABEL_WIDTH}} " + ("works" if why is None else f"fails: {why}")


def diagnose(backend: str, say: Callable[[str], None] = print) -> bool:
    """Print one row per run; True when the device works in the whole sandbox."""
    with Runner(backend, parallel=1, log=say) as runner:
        probe = runner.probe()
        env = probe.environment
        say(f"torchclaims doctor: backend {probe.backend} ({probe.why}), {env.device_name}, torch {env.torch}")
        say(_row("outside the sandbox", probe.unavailable))
        if probe.unavailable is not None:
            say("the device does not work even outside the sandbox: the sandbox is not the cause")
            return False
        if runner.unconfined is not None:
            say(f"the sandbox is {runner.unconfined}: claims run unconfined")
            return True
        abi = sandbox.landlock_abi()
        say(f"{'this machine:':<{LABEL_WIDTH}} Landlock ABI {abi} (the sandbox needs {sandbox.MIN_ABI} or later)")
        inside = runner.device_smoke()
        say(_row("in the sandbox", inside))
        stops = []
        for part in sandbox.PARTS:
            why = runner.device_smoke(sandbox.without(part))
            say(_row(f"without {part}", why))
            if inside is not None and why is None and part in sandbox.RESTRICTING:
                stops.append(part)
    if inside is None:
        say("the device works in the sandbox: claims run confined")
    else:
        say(f"the part that stops the device: {', '.join(stops) or 'no one part alone (several together)'}")
    return inside is None


def run_doctor(backend: str | None) -> bool:
    if not backend:
        raise UsageError("name the backend to examine: torchclaims doctor --backend cuda")
    return diagnose(backend)
