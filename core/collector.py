"""Pausing CPython's cyclic garbage collector while cheap batches are scored.

Scoring allocates a few objects per rollout that live until the batch is reported; they push the
collector into full passes over the whole heap (in a trainer: every module and tensor), measured
at 4 to 11 us per rollout in ``benchmarks/overhead.py``, more than the scoring itself. Reference
counting frees all of a batch's garbage at once, so holding the collector off while a cheap batch
is scored leaks nothing; cycles wait until it resumes.

The pause is shared: overlapping batches (several threads, the service's requests) hold one pause,
and the collector resumes when the last of them ends. A batch joins a pause only while that pause
is younger than ``MAX_PAUSE_S``, so under a steady stream of overlapping batches the collector
still runs between them. When the application has turned the collector off, nothing changes.
Turning it off from another thread while a pause is held is not seen: the pause's end turns it on.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

MAX_PAUSE_S = 0.5

_lock = threading.Lock()
_holders = 0
_since = 0.0


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold the cyclic collector off for the block (shared with overlapping blocks; see above)."""
    global _holders, _since
    with _lock:
        if _holders:
            held = time.monotonic() - _since < MAX_PAUSE_S
        else:
            held = gc.isenabled()
            if held:
                gc.disable()
                _since = time.monotonic()
        if held:
            _holders += 1
    try:
        yield
    finally:
        if held:
            with _lock:
                _holders -= 1
                if not _holders:
                    gc.enable()
