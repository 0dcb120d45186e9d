"""Packing sequences into batches by a token budget, and one batch for every waiting group.

``token_budget_batches`` sorts sequences by length (longest first, so the largest batch runs
first and a budget too big for the device fails at once) and cuts the sorted list into buckets
whose padded size, ``len(bucket) * longest``, stays within the budget; a sequence longer than the
budget runs alone. Padding is then only the difference between neighbours in length, instead of
the difference to the longest sequence of a fixed-size batch (``fixed_size_batches``, the
baseline of ``benchmarks/reward_model.py``).

``Coalescer`` lets the threads that score groups at the same time share forward passes: a
thread appends its sequences to a queue and either finds them already scored by the thread that
held the model, or takes everything queued and scores it in one set of buckets. A group never
waits for a batch that started after it arrived. Pure Python; no torch here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def token_budget_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Indices into ``lengths`` grouped into buckets of at most ``budget`` padded tokens.

    Each index appears once; a bucket's padded size is its count times its longest length.
    """
    if budget < 1:
        raise ValueError(f"a token budget must be positive, got {budget}")
    order = sorted(range(len(lengths)), key=lambda index: (-lengths[index], index))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in order:
        length = max(1, lengths[index])
        width = max(longest, length)
        if current and width * (len(current) + 1) > budget:
            batches.append(current)
            current, width = [], length
        current.append(index)
        longest = width
    if current:
        batches.append(current)
    return batches


def fixed_size_batches(count: int, size: int) -> list[list[int]]:
    """Indices ``0..count-1`` in order, ``size`` at a time (each batch padded to its longest)."""
    if size < 1:
        raise ValueError(f"a batch size must be positive, got {size}")
    return [list(range(start, min(count, start + size))) for start in range(0, count, size)]


def padded_tokens(lengths: Sequence[int], batches: Sequence[Sequence[int]]) -> int:
    """Tokens a forward pass computes over these batches, padding included."""
    return sum(len(batch) * max(lengths[index] for index in batch) for batch in batches if batch)


class _Job(Generic[T, R]):
    __slots__ = ("done", "error", "items", "results")

    def __init__(self, items: list[T]) -> None:
        self.items = items
        self.results: list[R] = []
        self.error: BaseException | None = None
        self.done = False


class Coalescer(Generic[T, R]):
    """``submit(items)`` returns ``run(all queued items)`` sliced back to the caller's items.

    ``run`` is called by one thread at a time, with every item queued when that thread took the
    queue (its own included); it returns one result per item, in order. A failure of ``run``
    is raised in every thread whose items it held.
    """

    def __init__(self, run: Callable[[list[T]], list[R]]) -> None:
        self._run = run
        self._queue: list[_Job[T, R]] = []
        self._queue_lock = threading.Lock()
        self._run_lock = threading.Lock()

    def submit(self, items: Sequence[T]) -> list[R]:
        job: _Job[T, R] = _Job(list(items))
        if not job.items:
            return []
        with self._queue_lock:
            self._queue.append(job)
        with self._run_lock:
            if not job.done:
                with self._queue_lock:
                    jobs, self._queue = self._queue, []
                self._run_jobs(jobs)
        if job.error is not None:
            raise job.error
        return job.results

    def _run_jobs(self, jobs: list[_Job[T, R]]) -> None:
        items = [item for job in jobs for item in job.items]
        try:
            results = self._run(items)
            if len(results) != len(items):
                raise RuntimeError(f"a batch of {len(items)} sequences gave {len(results)} scores")
        except BaseException as error:
            for job in jobs:
                job.error, job.done = error, True
            return
        start = 0
        for job in jobs:
            job.results = list(results[start : start + len(job.items)])
            start += len(job.items)
            job.done = True
