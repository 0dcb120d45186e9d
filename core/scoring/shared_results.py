"""Each distinct answer scored once: equal candidates share one scoring and a copy of its result.

Late in training, and for short answers, a batch holds the same completion many times, and a
costly provider (a judge call, a reward model's forward pass, a sandbox run) pays for each. A
provider whose spec declares ``cacheable`` promises that a candidate's result depends only on its
own answer (completion, token count, finish reason) and its group's prompt and reference, the same
each time; for such a provider the bound adapter (``BoundProvider.evaluate``) asks it only about the
answers this batch has not met yet, and every other candidate with an equal answer, in its group or
in another group of the batch, gets a copy of that result. Equal means the same provider identity,
the same prompt and reference (as canonical, type-strict JSON: 1, 1.0 and true differ) and
byte-equal text. A provider that does not declare it is never shared, nor one that needs in-process
media (which is never compared).

Nothing passes between candidates by this: a copy is made of values the provider computed from
exactly the same inputs, and each candidate holds its own object (a charge included: an answer the
provider charged is charged to each candidate that wrote it). Diagnostic ``shared_result`` is 1 on
a candidate whose result was a copy and 0 on one that was scored: its batch mean is the share of
calls saved, and its sum the calls saved.

The scope is one batch: the worker enters ``batch_scope()`` around each ``score``. A run may share
across batches too, by opting in with ``across_batches(max_entries)``: the results are then kept,
the least recently used beyond ``max_entries`` forgotten, until the block ends. Groups scored in
other threads share the scope (the worker copies the context into its threads); the first to meet an
answer scores it and the others wait for it, so an answer is never scored twice at once. When that
scoring fails, the candidates that waited score the answer alone, unless their request was cancelled
(a run started then would outlive the request).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar

from rewardkit.contracts import MetricContribution, RewardProviderResult

__all__ = [
    "SHARED_DIAGNOSTIC",
    "Abandoned",
    "SharedResults",
    "across_batches",
    "batch_scope",
    "current",
    "for_new_batch",
    "sharing",
]

SHARED_DIAGNOSTIC = "shared_result"


class Abandoned(Exception):
    """The candidate that was scoring an answer failed: whoever waited for it scores it alone."""


class SharedResults:
    """Results by answer key, one scoring per key; thread-safe. ``max_entries`` None: unbounded."""

    def __init__(self, max_entries: int | None = None) -> None:
        if max_entries is not None and (type(max_entries) is not int or max_entries < 1):
            raise ValueError(f"max_entries must be a whole number >= 1 or None, got {max_entries!r}")
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, Future[RewardProviderResult]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def claim(self, keys: Sequence[Hashable]) -> list[tuple[bool, Future[RewardProviderResult]]]:
        """For each key, in order: ``(True, future)`` when the caller is the first to meet it and must
        score it (and ``settle`` or ``abandon`` the future), else ``(False, future)`` to wait on (an
        earlier key of the same call, or another caller's)."""
        claims: list[tuple[bool, Future[RewardProviderResult]]] = []
        with self._lock:
            for key in keys:
                known = self._entries.get(key)
                if known is not None:
                    self._entries.move_to_end(key)
                    claims.append((False, known))
                    continue
                future: Future[RewardProviderResult] = Future()
                self._entries[key] = future
                claims.append((True, future))
            self._forget_beyond_bound()
        return claims

    def abandon(self, key: Hashable, future: Future[RewardProviderResult]) -> None:
        """The caller could not score ``key``: forget it, and let its waiters score it themselves."""
        with self._lock:
            if self._entries.get(key) is future:
                del self._entries[key]
        if not future.done():
            future.set_exception(Abandoned())

    def _forget_beyond_bound(self) -> None:
        """Drop the least recently used settled entries past ``max_entries`` (never one in flight:
        its waiters hold the future, and its scorer settles it)."""
        if self.max_entries is None or len(self._entries) <= self.max_entries:
            return
        for key in [key for key, future in self._entries.items() if future.done()]:
            if len(self._entries) <= self.max_entries:
                break
            del self._entries[key]


_CURRENT: ContextVar[SharedResults | None] = ContextVar("rewardkit_shared_results", default=None)
_ACROSS: ContextVar[SharedResults | None] = ContextVar("rewardkit_shared_across_batches", default=None)


def current() -> SharedResults:
    """The shared results of the batch being scored in this context (a fresh one outside a batch, so
    a provider called directly shares only within one call)."""
    shared = _CURRENT.get()
    return shared if shared is not None else SharedResults()


def for_new_batch() -> SharedResults:
    """What a batch starting here shares: its own results, or the run's under ``across_batches``."""
    across = _ACROSS.get()
    return across if across is not None else SharedResults()


@contextmanager
def batch_scope() -> Iterator[SharedResults]:
    """The scope of one batch: its own results, or the run's when ``across_batches`` is in force."""
    shared = for_new_batch()
    token = _CURRENT.set(shared)
    try:
        yield shared
    finally:
        _CURRENT.reset(token)


@contextmanager
def sharing(shared: SharedResults) -> Iterator[SharedResults]:
    """Within the block, every ``batch_scope`` gives ``shared``: several scoring calls (the groups of
    a stream, the batches of a run) count as one batch for sharing."""
    token = _ACROSS.set(shared)
    try:
        yield shared
    finally:
        _ACROSS.reset(token)


@contextmanager
def across_batches(max_entries: int) -> Iterator[SharedResults]:
    """Opt in to sharing results across every batch scored in the block (a training run), keeping
    at most ``max_entries`` of them (the least recently used are forgotten)."""
    with sharing(SharedResults(max_entries)) as shared:
        yield shared


def marked(result: RewardProviderResult, shared: bool) -> RewardProviderResult:
    """A copy of ``result`` with ``shared_result`` (1 for a shared copy, 0 for the scored original)."""
    return RewardProviderResult(
        terms=result.terms,
        diagnostics=(*result.diagnostics, MetricContribution(SHARED_DIAGNOSTIC, 1.0 if shared else 0.0)),
        status=result.status,
        reason=result.reason,
        charge=result.charge,
        notes=result.notes,
    )
