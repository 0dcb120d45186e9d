"""``rewardkit.scoring.capacity.usable_cpus``: the CPUs a process may use (affinity and cgroup quota).

The cgroup trees here are fake folders laid out as the kernel mounts them; the affinity case runs
a real interpreter under ``taskset -c 0`` (util-linux)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit.scoring.capacity import cgroup_cpu_quota, usable_cpus

AFFINITY = len(os.sched_getaffinity(0))


def _tree(tmp_path: Path, membership: str, files: dict[str, str]) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    root.mkdir()
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    self_cgroup = tmp_path / "self_cgroup"
    self_cgroup.write_text(membership)
    return root, self_cgroup


def test_v2_quota_of_the_process_cgroup_rounds_up(tmp_path: Path) -> None:
    root, me = _tree(tmp_path, "0::/job/worker\n", {"job/worker/cpu.max": "150000 100000"})
    assert cgroup_cpu_quota(root, me) == 1.5
    assert usable_cpus(root, me) == min(AFFINITY, 2)


def test_v2_a_parent_quota_bounds_its_children(tmp_path: Path) -> None:
    files = {"job/cpu.max": "100000 100000", "job/worker/cpu.max": "max 100000"}
    root, me = _tree(tmp_path, "0::/job/worker\n", files)
    assert cgroup_cpu_quota(root, me) == 1.0
    assert usable_cpus(root, me) == 1


def test_v2_without_a_quota_the_affinity_decides(tmp_path: Path) -> None:
    root, me = _tree(tmp_path, "0::/job\n", {"job/cpu.max": "max 100000", "cpu.max": "max 100000"})
    assert cgroup_cpu_quota(root, me) is None
    assert usable_cpus(root, me) == AFFINITY


def test_v2_a_namespaced_path_reads_the_mount_root(tmp_path: Path) -> None:
    # A container sees its own cgroup at the mount's root, and the host's path (or "/../..")
    # in /proc/self/cgroup: the root's quota applies, and nothing above the mount is read.
    root, me = _tree(tmp_path, "0::/../../host/slice\n", {"cpu.max": "50000 100000"})
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota(root, me) == 0.5
    assert usable_cpus(root, me) == 1  # a half-CPU quota still runs one program


def test_v1_quota_of_the_cpu_controller(tmp_path: Path) -> None:
    membership = "9:pids:/\n4:memory:/job\n2:cpu,cpuacct:/job\n1:name=systemd:/job\n0::/\n"
    files = {
        "cpu,cpuacct/job/cpu.cfs_quota_us": "300000",
        "cpu,cpuacct/job/cpu.cfs_period_us": "100000",
        "cpu,cpuacct/cpu.cfs_quota_us": "-1",
        "cpu,cpuacct/cpu.cfs_period_us": "100000",
    }
    root, me = _tree(tmp_path, membership, files)
    assert cgroup_cpu_quota(root, me) == 3.0
    assert usable_cpus(root, me) == min(AFFINITY, 3)


def test_v1_unlimited_and_hybrid_v2_without_cpu_have_no_quota(tmp_path: Path) -> None:
    files = {
        "cpu/cpu.cfs_quota_us": "-1",
        "cpu/cpu.cfs_period_us": "100000",
        "unified/cgroup.procs": "",
    }
    root, me = _tree(tmp_path, "1:cpu:/\n0::/\n", files)
    assert cgroup_cpu_quota(root, me) is None
    assert usable_cpus(root, me) == AFFINITY


def test_no_cgroup_files_at_all(tmp_path: Path) -> None:
    assert cgroup_cpu_quota(tmp_path / "absent", tmp_path / "absent_self") is None
    assert usable_cpus(tmp_path / "absent", tmp_path / "absent_self") == AFFINITY


@pytest.mark.parametrize("text", ["garbage", "0 100000", "100000 0", "12 x"])
def test_unreadable_quota_files_are_no_quota(tmp_path: Path, text: str) -> None:
    root, me = _tree(tmp_path, "0::/job\n", {"job/cpu.max": text})
    assert cgroup_cpu_quota(root, me) is None


def test_a_process_pinned_to_one_cpu_sees_one() -> None:
    taskset = shutil.which("taskset")
    assert taskset is not None, "taskset (util-linux) is needed: apt-get install util-linux"
    code = "from rewardkit.scoring.capacity import usable_cpus; print(usable_cpus())"
    out = subprocess.run(
        [taskset, "-c", "0", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "1"
