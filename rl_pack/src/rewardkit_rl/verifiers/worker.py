"""Entry point of one pool worker process: ``python -m rewardkit_rl.verifiers.worker``.

The parent passes two pipe descriptors and a ``module:function`` target on the command line. The
worker imports the target once, says ``ready``, then answers ``(tag, payload)`` requests one at a
time until its input pipe closes. A fresh interpreter (not fork, not multiprocessing's spawn) is
used so that the trainer's ``__main__`` is never re-imported and no parent thread state is copied.
"""

from __future__ import annotations

import importlib
import sys
from multiprocessing.connection import Connection


def _limit_memory(megabytes: int) -> None:
    # A runaway symbolic computation should die alone, not take the trainer's host down with it.
    if megabytes <= 0:
        return
    try:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass


def main(argv: list[str]) -> int:
    """Serve requests on the given pipes; returns the process exit status."""
    read_fd, write_fd, target, memory_mb = int(argv[0]), int(argv[1]), argv[2], int(argv[3])
    inbox = Connection(read_fd, writable=False)
    outbox = Connection(write_fd, readable=False)
    module_name, _, function_name = target.partition(":")
    module = importlib.import_module(module_name)
    function = getattr(module, function_name)
    # Pay one-off initialisation (parser tables, caches) before the first timed request.
    warm_up = getattr(module, "warm_up", None)
    if callable(warm_up):
        warm_up()
    _limit_memory(memory_mb)
    outbox.send(("ready", None))
    while True:
        try:
            request = inbox.recv()
        except (EOFError, OSError):
            return 0
        try:
            outbox.send(("ok", function(request)))
        except MemoryError:
            outbox.send(("error", "MemoryError: the worker's memory limit was reached"))
        except Exception as error:  # report, keep serving: one bad input must not kill the worker
            outbox.send(("error", f"{type(error).__name__}: {str(error)[:500]}"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
