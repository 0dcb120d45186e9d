"""A pids cgroup per sandbox slot: a hard cap on processes that no uid or rlimit trick escapes.

Works with the cgroup v1 ``pids`` hierarchy and with cgroup v2 when its ``pids`` controller is
enabled for our cgroup. Both need write access to the cgroup filesystem (root on CI).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


class CgroupUnavailable(RuntimeError):
    """No writable pids controller was found; the message says what was looked at."""


def _mounts() -> list[tuple[str, str, list[str]]]:
    rows = []
    with open("/proc/self/mounts", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) >= 4:
                rows.append((fields[1], fields[2], fields[3].split(",")))
    return rows


def _own_path(v1_controller: str | None) -> str:
    """Our cgroup path in the hierarchy of ``v1_controller`` (None: the v2 hierarchy)."""
    with open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            names = controllers.split(",") if controllers else []
            if (v1_controller is None and not names) or (v1_controller in names):
                return path
    return "/"


def find_pids_parent() -> Path:
    """The directory under which slot cgroups are created; raises ``CgroupUnavailable``."""
    looked: list[str] = []
    for mount_point, fstype, options in _mounts():
        if fstype == "cgroup" and "pids" in options:
            parent = Path(mount_point) / _own_path("pids").lstrip("/")
            looked.append(f"v1 {parent}")
            if os.access(parent, os.W_OK):
                return parent
        elif fstype == "cgroup2":
            parent = Path(mount_point) / _own_path(None).lstrip("/")
            looked.append(f"v2 {parent}")
            try:
                controllers = (parent / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            if "pids" in controllers and os.access(parent, os.W_OK):
                return parent
    raise CgroupUnavailable(
        "no writable cgroup with a pids controller (looked at: "
        + (", ".join(looked) or "no cgroup mounts")
        + "); run as root with /sys/fs/cgroup writable, or set cgroup='off'"
    )


class PidsCgroup:
    """One child cgroup with ``pids.max`` set; ``enter_command`` moves a shell into it."""

    def __init__(self, parent: Path, name: str, max_pids: int) -> None:
        self.path = parent / name
        self.path.mkdir(exist_ok=True)
        if (parent / "cgroup.subtree_control").exists():  # v2: the controller must be delegated
            with contextlib.suppress(OSError):
                (parent / "cgroup.subtree_control").write_text("+pids")
        (self.path / "pids.max").write_text(str(max_pids))

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in self.procs_file.read_text().split()]
        except OSError:
            return []

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup until it is empty (or ~2 s have passed)."""
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def remove(self) -> None:
        self.kill_all()
        for _ in range(200):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)
