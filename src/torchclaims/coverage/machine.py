"""How many sweep workers the machine holds, and when another one fits.

A sweep is sized to the machine it runs on, not to the share of CPUs the
runner gave its claim when the run started (``TORCHCLAIMS_CPUS``, the CPUs
divided by the claims run at once), which is stale as soon as other claims
end: on an H200 host with 16 cores and 16 claims at once, the operator sweep
kept one worker for its whole 54 s guard, however many claims had ended
meanwhile, and two thirds of its cells were not reached. So the share is only
where a sweep starts (:func:`first_workers`); the ceiling is the machine
(every usable CPU, fewer if memory is short), and the pool grows into it as
CPUs fall idle (:class:`IdleCpus`, measured from ``/proc/stat``): a worker
beyond the share is never started on a CPU something else keeps busy, where
it would only add its own imports to everyone's time.
"""

from __future__ import annotations

import os

from ..run._child import CPUS_ENV

STAT = "/proc/stat"
CGROUP = "/sys/fs/cgroup"


def usable_cpus() -> set[int]:
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def cpu_quota(root: str = CGROUP) -> int | None:
    """CPUs' worth of time the cgroup allows (a container's --cpus), None when unlimited or unknown.

    A container may see every core of its host in /proc/stat while its quota allows a few.
    """
    for quota_file, period_file in (("cpu.max", None), ("cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us")):
        try:  # cgroup v2: "quota period" in one file; v1: one number in each
            with open(f"{root}/{quota_file}") as handle:
                fields = handle.read().split()
            if period_file is not None:
                with open(f"{root}/{period_file}") as handle:
                    fields += handle.read().split()
            quota, period = fields[:2]
            if quota in ("max", "-1"):
                return None
            return max(1, -(-int(quota) // int(period)))
        except (OSError, ValueError):
            continue
    return None


def machine_workers(memory_per_worker_gb: float) -> int:
    """The most workers the machine holds: one per usable CPU (within the cgroup's quota), fewer if memory is short."""
    cpus = min(len(usable_cpus()), cpu_quota() or len(usable_cpus()))
    try:
        with open("/proc/meminfo") as handle:
            fields = dict(line.split(":", 1) for line in handle)
        available_gb = int(fields["MemAvailable"].split()[0]) / 2**20
    except (OSError, KeyError, ValueError):
        return cpus
    return max(1, min(cpus, int(available_gb // memory_per_worker_gb)))


def first_workers(ceiling: int) -> int:
    """Workers to start at once: the CPUs the runner gave the claim, all of ``ceiling`` outside the runner."""
    share = os.environ.get(CPUS_ENV, "")
    return max(1, min(ceiling, int(share))) if share.isdigit() and int(share) > 0 else ceiling


class IdleCpus:
    """Idle CPUs (in CPU-equivalents) among the usable ones since the previous reading.

    ``read()`` is None where the kernel does not say (no ``/proc/stat``): the
    caller then takes the whole machine at once.
    """

    def __init__(self, stat_path: str = STAT):
        self.stat_path = stat_path
        self.cpus = {f"cpu{n}" for n in usable_cpus()}
        self.last = self._counters()

    def _counters(self) -> tuple[int, int] | None:
        """(idle jiffies, all jiffies) summed over the usable CPUs."""
        try:
            with open(self.stat_path) as handle:
                lines = [line.split() for line in handle if line.startswith("cpu")]
        except OSError:
            return None
        idle = total = 0
        for name, *values in lines:
            if name in self.cpus:
                numbers = [int(v) for v in values[:8]]  # user nice system idle iowait irq softirq steal
                idle += numbers[3] + numbers[4]
                total += sum(numbers)
        return (idle, total) if total else None

    def read(self) -> float | None:
        now = self._counters()
        before, self.last = self.last, now
        if now is None or before is None or now[1] <= before[1]:
            return None if now is None else 0.0
        return len(self.cpus) * (now[0] - before[0]) / (now[1] - before[1])


def use_device(slot: int, devices: int) -> int:
    """Make device ``slot % devices`` the worker's current one; the index it then uses.

    Where the backend cannot switch devices (the call raises), the worker keeps
    the default one: the sweep counts the devices its workers did use.
    """
    import torch

    if devices < 2:
        return 0
    try:
        torch.accelerator.set_device_index(slot % devices)
    except Exception:
        pass  # the default device; the count of devices used shows it
    return torch.accelerator.current_device_index()


def device_count(device_type: str) -> int:
    """Devices of ``device_type`` one process can address (1 where torch.accelerator does not say)."""
    import torch

    accelerator = getattr(torch, "accelerator", None)
    if device_type == "cpu" or accelerator is None or not accelerator.is_available():
        return 1
    current = accelerator.current_accelerator()
    return max(1, accelerator.device_count()) if current is not None and current.type == device_type else 1
