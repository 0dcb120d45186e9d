"""Pausing CPython's cyclic garbage collector while cheap batches are scored.

Scoring allocates a few objects per rollout that live until the batch is reported; they push the
collector into full passes over the whole heap (in a trainer: every module and tensor), measured
at 4 to 11 us per rollout in ``benchmarks/overhead.py``, more than the scoring itself. Reference
counting frees a batch's garbage at once, so the pause leaks nothing; cycles wait until it ends.

Overlapping batches share one pause, which ends with the last of them; a batch joins a pause only
while it is younger than ``MAX_PAUSE_S``, so the collector still runs under a steady stream. A
collector the application turned off stays off; turning it off mid-pause is undone at the end.
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
