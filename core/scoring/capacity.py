"""How many CPUs this process may really use, for anything that sizes a pool or a cap by CPUs.

``os.cpu_count()`` counts the host's CPUs. A process pinned with ``taskset``, or run in a container
or a cgroup with a CPU quota, gets fewer: pools sized from the host's count run more programs at
once than there are CPUs to run them, and wall-clock timeouts then fail correct programs. The
usable count is the smaller of the CPUs in this process's affinity mask and the CPU quota of its
cgroup (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, the tightest level of
the hierarchy, rounded up), and never less than 1.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["cgroup_cpu_quota", "usable_cpus"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")


def usable_cpus(cgroup_root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP) -> int:
    """The CPUs this process may run on: affinity mask and cgroup quota, at least 1.

    ``cgroup_root`` (where the cgroup file systems are mounted) and ``self_cgroup`` (this
    process's cgroup membership) are parameters so a test can pass a tree of its own.
    """
    # macOS and Windows have no affinity mask to read.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = cgroup_cpu_quota(cgroup_root, self_cgroup)
    if quota is not None:
        # A quota of 1.5 CPUs lets two threads run, each for part of the time.
        cpus = min(cpus, math.ceil(quota))
    return max(1, cpus)


def cgroup_cpu_quota(cgroup_root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP) -> float | None:
    """CPUs' worth of time per period this process's cgroups allow (``None``: no quota set).

    Every level from the process's cgroup up to the mount's root is read and the tightest quota
    wins, since a parent's quota bounds all its children. When the cgroup path named in
    ``self_cgroup`` is not found under the mount (a container whose cgroup namespace shows the
    host's path), the mount's root, which is then the container's own cgroup, is read.
    """
    try:
        membership = self_cgroup.read_text(encoding="utf-8")
    except OSError:
        return None
    quotas: list[float] = []
    for line in membership.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if not hierarchy or not path.startswith("/"):
            continue
        if hierarchy == "0" and controllers == "":
            # cgroup v2: one unified hierarchy, mounted at the root (or at unified/ in hybrid mode).
            for mount in (cgroup_root, cgroup_root / "unified"):
                quotas += _levels(mount, path, _v2_quota)
        elif "cpu" in controllers.split(","):
            # cgroup v1: the cpu controller's own mount, named by its controllers ("cpu,cpuacct").
            for name in dict.fromkeys((controllers, "cpu", "cpu,cpuacct")):
                quotas += _levels(cgroup_root / name, path, _v1_quota)
    return min(quotas) if quotas else None


def _levels(mount: Path, path: str, read: Callable[[Path], float | None]) -> list[float]:
    """The quotas found at each level from ``mount``/``path`` up to ``mount``."""
    if not mount.is_dir():
        return []
    start = mount / path.lstrip("/")
    # Under a cgroup namespace a cgroup outside it reads "/../..": never climb out of the mount.
    folder = start if ".." not in Path(path).parts and start.is_dir() else mount
    found: list[float] = []
    while True:
        quota = read(folder)
        if quota is not None:
            found.append(quota)
        if folder == mount:
            return found
        folder = folder.parent


def _v2_quota(folder: Path) -> float | None:
    """``cpu.max`` holds ``"<quota> <period>"`` in microseconds, quota ``max`` when unlimited."""
    fields = _read(folder / "cpu.max").split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def _v1_quota(folder: Path) -> float | None:
    """``cpu.cfs_quota_us`` is -1 when unlimited; the period is in ``cpu.cfs_period_us``."""
    return _ratio(_read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us"))


def _ratio(quota: str, period: str) -> float | None:
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return quota_us / period_us


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""
