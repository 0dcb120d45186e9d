"""Finding and ending every process of a session; run as a script, the owner-death watchdog.

``python -I -S sessions.py SESSION GRACE`` waits for EOF on stdin (the owner closed it or died),
then ends the session. Standard library only, so it starts fast in any interpreter."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time


def session_pids(session: int) -> list[int]:
    """Live (not zombie) processes whose session id is ``session``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] not in (b"Z", b"X"):
            found.append(int(entry))
    return found


def end_session(session: int, grace_s: float) -> None:
    """SIGTERM every process of ``session``, up to ``grace_s`` seconds, then SIGKILL until none is left."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 30.0)):
        end = time.monotonic() + wait
        # by session only: a PID seen earlier may belong to someone else by now
        while (alive := session_pids(session)) and time.monotonic() <= end:
            for pid in alive:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            time.sleep(0.1)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while os.read(0, 4096):
        pass
    end_session(int(sys.argv[1]), float(sys.argv[2]))
