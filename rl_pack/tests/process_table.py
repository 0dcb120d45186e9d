"""Which processes of the sandbox uids are still alive, from /proc (shared by the sandbox tests).

The rule is the sandbox's own (``rewardkit_rl.code.inside.rk_procs``): a process is alive while any
of its threads is, so a zombie leader whose other threads run on counts. A SIGKILLed process is a
zombie until its parent (the sandbox's init) reaps it, which on a loaded machine can be a moment
after the run has answered; such a zombie runs nothing and does not count as left running.
"""

from __future__ import annotations

from collections.abc import Iterable

from rewardkit_rl.code.inside import rk_procs


def live_processes_of(uids: Iterable[int]) -> list[int]:
    """Pids of live processes any of whose threads is owned by one of ``uids``."""
    return rk_procs.live_processes_of(uids)
