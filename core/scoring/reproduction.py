"""Charge a candidate only for a fault that reproduces beside a healthy canary.

A provider that hit a fault while scoring a candidate, one that *could* be the infrastructure's (a
timeout, a worker that crashed or raised, an unreadable, off-scale or refused verdict, a sandbox
that broke), does not guess whose it is from signals the candidate controls. It calls
``reproduce`` (or ``areproduce``), which:

1. runs a **canary** on the worker that will score the candidate again (the provider's own: a
   trivial program in the same sandbox slot, the reference compared with itself on the same math
   worker, another candidate's answer asked of the same judge). A canary must be one the candidate
   cannot recognise: drawn per request, never a fixed public text. A canary that fails means the
   worker is broken: ``CanaryFailed`` is raised, naming the canary, and the provider reports an
   infrastructure error (counted in ``infra_error_rate``; under ``onError: raise`` the batch fails);
2. scores the candidate **once more, alone** on that worker (nothing else running in its slot or
   worker, the same limits), when the batch's rerun budget allows;
3. faults again: the fault is the candidate's. ``Charged`` comes back with the evidence, and the
   provider scores the candidate at its worst (``Charged.result``). Does not fault: the second
   result is the candidate's score.

Past the batch's rerun budget (``RewardSpec.reruns.per_batch``, operator-owned), the canary alone
decides: it passes, the candidate is charged without a rerun; it fails, infrastructure.

The budget belongs to one batch: ``rerun_budget()`` is the budget of the batch being scored in this
context (the worker enters ``batch_budget`` around each ``score``); a provider handing work to its
own threads passes it on by hand, as it does the cancel scope. A stream (``Reward.stream()``) is one
batch scored a group at a time: it enters ``shared_budget`` around each group, so every
``batch_budget`` entered inside gives that one budget instead of a fresh one. Outside a batch (a
provider called directly), every call gets a budget of ``DEFAULT_RERUNS_PER_BATCH``. A provider
scored in another process (Ray actors, the Reward Service) has the budget of each request it receives.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from rewardkit.contracts import MetricContribution, RewardProviderResult

__all__ = [
    "DEFAULT_RERUNS_PER_BATCH",
    "REPRODUCTION_NOTE",
    "CanaryFailed",
    "Charged",
    "Fault",
    "RerunBudget",
    "areproduce",
    "batch_budget",
    "reproduce",
    "rerun_budget",
    "shared_budget",
]

DEFAULT_RERUNS_PER_BATCH = 32
# The note holding a charge's evidence; every provider may write it without declaring it.
REPRODUCTION_NOTE = "reproduction"
T = TypeVar("T")


@dataclass(frozen=True)
class Fault:
    """A fault met while scoring one candidate that could be the candidate's or the worker's.

    ``kind`` names it in diagnostics (``timeout``, ``worker_crash``, ``verdict_unreadable``...);
    ``detail`` says what happened, in a sentence a user reads in the candidate's reason."""

    kind: str
    detail: str


@dataclass(frozen=True)
class Charged:
    """The verdict of ``reproduce`` when the fault is the candidate's: ``evidence`` says why."""

    fault: Fault
    evidence: str
    rerun: bool  # False when the budget was spent and the canary alone decided

    @property
    def reason(self) -> str:
        return f"{self.fault.detail} ({self.evidence})"

    def result(
        self,
        worst: Mapping[str, float],
        diagnostic: str | None = None,
        diagnostics: tuple[MetricContribution, ...] = (),
        notes: Mapping[str, str] | None = None,
    ) -> RewardProviderResult:
        """The candidate scored at its ``worst`` for this fault, the ``diagnostic`` (``fault.kind`` by
        default) at 1, and the evidence in the ``REPRODUCTION_NOTE`` note."""
        charged = RewardProviderResult.charged(
            self.reason, diagnostic or self.fault.kind, worst, diagnostics=diagnostics
        )
        return RewardProviderResult(
            terms=charged.terms,
            diagnostics=charged.diagnostics,
            reason=charged.reason,
            charge="deterministic",
            notes={**(notes or {}), REPRODUCTION_NOTE: self.evidence},
        )


class CanaryFailed(Exception):
    """The worker failed its canary: the fault is the infrastructure's, not the candidate's.

    ``where`` names what the canary ran on, in the provider's words: a ``worker`` (the default), a
    sandbox ``slot``, a judge's ``endpoint``."""

    def __init__(self, fault: Fault, canary: str, why: str, *, where: str = "worker") -> None:
        self.fault = fault
        self.canary = canary
        self.why = why
        self.where = where
        super().__init__(f"{fault.detail}; and the canary ({canary}) failed too on that {where}: {why}")


class RerunBudget:
    """How many candidates one batch may score again; thread-safe."""

    def __init__(self, per_batch: int = DEFAULT_RERUNS_PER_BATCH) -> None:
        if isinstance(per_batch, bool) or not isinstance(per_batch, int) or per_batch < 0:
            raise ValueError(f"a rerun budget is a whole number >= 0, got {per_batch!r}")
        self.per_batch = per_batch
        self.used = 0
        self.canaries = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Spend one rerun; False when none is left."""
        with self._lock:
            self.canaries += 1
            if self.used >= self.per_batch:
                return False
            self.used += 1
            return True


_CURRENT: ContextVar[RerunBudget | None] = ContextVar("rewardkit_rerun_budget", default=None)
# Set by a stream around each of its groups: the budget of the whole stream, which batch_budget gives.
_SHARED: ContextVar[RerunBudget | None] = ContextVar("rewardkit_shared_rerun_budget", default=None)


def rerun_budget() -> RerunBudget:
    """The rerun budget of the batch being scored in this context (a fresh default one outside)."""
    return _CURRENT.get() or RerunBudget()


@contextmanager
def batch_budget(per_batch: int) -> Iterator[RerunBudget]:
    """Make a fresh budget of ``per_batch`` reruns the current one for the block (one batch); inside
    ``shared_budget``, that shared budget instead (a group of a stream is a piece of its batch)."""
    budget = _SHARED.get() or RerunBudget(per_batch)
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


@contextmanager
def shared_budget(budget: RerunBudget) -> Iterator[RerunBudget]:
    """Within the block, every ``batch_budget`` gives ``budget``: several scoring calls count as one batch."""
    token = _SHARED.set(budget)
    try:
        yield budget
    finally:
        _SHARED.reset(token)


def _spent(budget: RerunBudget) -> str:
    return (
        f"not scored again: this batch's {budget.per_batch} reruns were spent; a canary passed on the worker"
    )


def _reproduced(first: Fault, second: Fault, canary: str) -> str:
    again = "the same way" if second.kind == first.kind else f"again ({second.detail})"
    return f"reproduced: scored again alone, it faulted {again} where the canary ({canary}) had just passed"


def reproduce(
    fault: Fault,
    *,
    canary_name: str,
    canary: Callable[[], str | None],
    rerun: Callable[[], T | Fault],
    budget: RerunBudget | None = None,
) -> T | Charged:
    """Decide ``fault`` by reproduction (see the module docstring).

    ``canary()`` runs the canary on the worker the rerun will use and returns None when it passed,
    else why it failed; ``canary_name`` says what it is, for messages. ``rerun()`` scores the
    candidate again alone on that worker and returns its result, or a ``Fault`` when it faulted
    again. Returns the second result, or ``Charged``; raises ``CanaryFailed``."""
    budget = budget or rerun_budget()
    allowed = budget.take()
    why = canary()
    if why is not None:
        raise CanaryFailed(fault, canary_name, why)
    if not allowed:
        return Charged(fault, _spent(budget), rerun=False)
    second = rerun()
    if isinstance(second, Fault):
        return Charged(fault, _reproduced(fault, second, canary_name), rerun=True)
    return second


async def areproduce(
    fault: Fault,
    *,
    canary_name: str,
    canary: Callable[[], Awaitable[str | None]],
    rerun: Callable[[], Awaitable[T | Fault]],
    budget: RerunBudget | None = None,
) -> T | Charged:
    """``reproduce`` for a provider whose canary and rerun are coroutines (judges)."""
    budget = budget or rerun_budget()
    allowed = budget.take()
    why = await canary()
    if why is not None:
        raise CanaryFailed(fault, canary_name, why)
    if not allowed:
        return Charged(fault, _spent(budget), rerun=False)
    second = await rerun()
    if isinstance(second, Fault):
        return Charged(fault, _reproduced(fault, second, canary_name), rerun=True)
    return second
