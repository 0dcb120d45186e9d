"""Which processes are alive, read from ``/proc``; and killing all of a run's processes.

Standard library only: the in-sandbox runner loads it as a top-level module, and the host and the
tests load the same file (``rewardkit_rl.code.processes``), so "alive" means one thing everywhere.

A process is alive while any of its threads is. A zombie thread-group leader (its main thread
called ``pthread_exit``) shows ``Z`` in ``/proc/<pid>/stat`` while its other threads run on: it
is alive, and ``kill(pid, SIGKILL)`` ends the whole group. A zombie whose threads are all gone
runs nothing and holds nothing but its pid (its parent reaps it): it is not alive.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable

_DEAD_STATES = (b"Z", b"X")


def _state(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None  # gone meanwhile


def alive(pid: int) -> bool:
    """Whether any thread of process ``pid`` still runs (or can run)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tasks:
        state = _state(f"/proc/{pid}/task/{tid}/stat")
        if state is not None and state not in _DEAD_STATES:
            return True
    return False


def owners(pid: int) -> set[int]:
    """The real uids of every thread of ``pid`` (a thread may have changed its own uid)."""
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        with contextlib.suppress(OSError):
            found.add(os.stat(f"/proc/{pid}/task/{tid}").st_uid)
    return found


def live_processes(owned: Callable[[int], bool]) -> list[int]:
    """Pids of the live processes any of whose threads has a uid for which ``owned(uid)`` holds."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if any(owned(uid) for uid in owners(pid)) and alive(pid):
            found.append(pid)
    return found


def live_processes_of(uids: Iterable[int]) -> list[int]:
    wanted = set(uids)
    return live_processes(wanted.__contains__)


def kill_all(owned: Callable[[int], bool], rounds: int = 2000) -> None:
    """SIGKILL every live process ``owned`` selects until none is left (a fork bomb re-forks meanwhile)."""
    for number in range(rounds):
        pids = live_processes(owned)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.0002 if number < 50 else 0.01)
    raise RuntimeError(f"processes survive SIGKILL: {live_processes(owned)[:10]}")


def usage(pids: Iterable[int]) -> tuple[float, float, int]:
    """(CPU seconds, seconds spent runnable but waiting for a CPU, threads runnable now) over every
    thread of ``pids``.

    From ``/proc/<pid>/task/<tid>/stat`` (state; utime + stime, in clock ticks) and ``schedstat``
    (its second field, run-queue wait in ns). Read before a kill, they tell a program that used its
    time, slept on its own or competed with itself (more runnable threads than CPUs) from one that
    the machine starved.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = wait = 0.0
    runnable = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            base = f"/proc/{pid}/task/{tid}"
            try:
                with open(f"{base}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
                runnable += fields[0] == b"R"
                cpu += (int(fields[11]) + int(fields[12])) / ticks
                with open(f"{base}/schedstat", "rb") as handle:
                    wait += int(handle.read().split()[1]) / 1e9
            except (OSError, IndexError, ValueError):
                continue
    return cpu, wait, runnable
