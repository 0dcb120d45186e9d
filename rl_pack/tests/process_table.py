"""Which processes of the sandbox uids are still alive, from /proc (shared by the sandbox tests)."""

from __future__ import annotations

import os


def live_processes_of(uids: set[int]) -> list[int]:
    """Pids owned by ``uids`` that are not zombies.

    A SIGKILLed process is a zombie until its parent (the sandbox's init) reaps it, which on a
    loaded machine can be a moment after the run has answered; a zombie runs nothing and holds
    nothing but its pid, so it does not count as left running.
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid not in uids:
                continue
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        if state not in (b"Z", b"X"):
            found.append(int(entry))
    return found
