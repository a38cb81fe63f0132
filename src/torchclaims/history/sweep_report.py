"""The release sweep's report: what each release's run measured, and the session's closing summary."""

from __future__ import annotations

from dataclasses import dataclass

from .sweep_plan import Release

# The targets the summary prints beside the measured figures (2 cores).
TARGET_FULL_MIN = 90  # every release of the torch and torch_xla series
TARGET_PEAK_GB = 15  # the sweep's folder at any time
TARGET_IDLE_S = 120  # a sweep with nothing to run


@dataclass
class Measured:
    release: Release
    status: str  # "current", "would run", "ran", "pruned", "failed"; "would probe", "probed" (name_sweep)
    detail: str = ""
    install_s: float = 0.0
    verify_s: float = 0.0
    env_bytes: int = 0
    results_file: str = ""
    claims: int = 0  # claims run


def summary_line(m: Measured) -> str:
    if m.status in ("current", "pruned"):
        return m.detail
    figures = (
        f"install {m.install_s / 60:.1f} min, verify {m.verify_s / 60:.1f} min, environment {m.env_bytes / 1e9:.1f} GB"
    )
    what = f"{m.status} {m.claims} claim(s)" if m.claims else m.status
    return what + (f" ({figures})" if m.install_s else "") + (f"; {m.detail}" if m.detail else "")


def report(measured: list[Measured], wall_s: float, peak_bytes: int) -> list[str]:
    """The session's closing summary, with the targets beside the measured figures."""
    lines = [f"{m.release.name:<22} {summary_line(m)}" for m in measured]
    ran = [m for m in measured if m.status in ("ran", "probed")]  # probed: installed for the name probe alone
    lines.append(
        f"{len(ran)} environment(s) run, {sum(m.status == 'current' for m in measured)} current, "
        f"{sum(m.status == 'failed' for m in measured)} failed, in {wall_s / 60:.1f} min"
    )
    lines.append(f"peak disk of the sweep's folder: {peak_bytes / 1e9:.1f} GB (target < {TARGET_PEAK_GB} GB)")
    if ran:
        lines.append(
            f"{wall_s / 60:.1f} min for {len(ran)} environment(s), {wall_s / 60 / len(ran):.1f} min each "
            f"(target for all 7 torch + 2 torch_xla releases: < {TARGET_FULL_MIN} min)"
        )
    elif any(m.status in ("would run", "would probe") for m in measured):
        would = [m for m in measured if m.status == "would run"]
        probes = sum(m.status == "would probe" for m in measured)  # name_sweep: the private-name probe
        lines.append(
            f"dry run: {len(would)} release(s) would run {sum(m.claims for m in would)} claim run(s) in all"
            + (f", {probes} would be probed for torch's private names" if probes else "")
            + "; nothing was installed"
        )
    else:
        lines.append(f"nothing to run: {wall_s:.1f} s (target < {TARGET_IDLE_S} s)")
    return lines
