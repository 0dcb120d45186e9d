"""Pausing CPython's cyclic garbage collector while cheap batches are scored (``docs/performance.md``).

The few objects a rollout leaves until its batch is reported trigger full collections over the whole
heap, 4 to 11 us per rollout in ``benchmarks/overhead.py``; reference counting still frees a batch at
once, so the pause leaks nothing. Overlapping batches share one pause, which ends with the last of
them and is joined only while younger than ``MAX_PAUSE_S`` (the collector still runs under a steady
stream). A collector the application turned off stays off; turning it off mid-pause is undone."""

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
    """Hold the cyclic collector off for the block (see the module doc)."""
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
