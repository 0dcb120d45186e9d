"""The ``math`` verifier: final-answer extraction, a cheap exact path, math-verify in killable workers.

Per group: the reference is checked once (a reference that cannot be parsed, has an unsupported
form or states a false equation makes every candidate ``skipped``, so a group is never
half-scored); each candidate's answer is extracted from the text that renders (``\\phantom`` and
white ink taken out): every ``\\boxed{}``, else the last ``<answer>``, else the inline maths of a
"final answer" phrase, several different ones joined into the list they state (``several_answers``);
an exact normalised comparison decides what it can (an answer spelled as a reference that is not
a plain number or expression scores 1 only once the reference is known to be usable: else the
group is skipped); the cost guards (``math_cost``) refuse, unevaluated, an answer whose
evaluation would explode (a tower of powers, a huge factorial, a sum over a huge range, deep
nesting) unless it is spelled as the reference or the reference shares that structure; the rest
are compared form by form (``math_forms``: relations, lists, intervals, matrices, piecewise
functions, approximations), leaf by leaf with math-verify, in parallel worker processes with a
hard wall-clock ``timeout_s`` each. An answer that cannot be read scores 0 with the reason.

A candidate can only hurt itself: what its text causes is a verdict on it (``charged``: ``task``
0, the reason, a diagnostic 1), never an error. A refused answer is charged ``refused_cost``
(deterministic). A worker timeout (``timeout``) or ``MemoryError`` (``out_of_memory``) is
charged, on non-deterministic evidence, only when the reference is known to be usable, another
check in this batch finished within its time (else a canary, the reference check, is run and
must), and the worker spent at least ``MIN_CPU_SHARE`` of the time on a CPU (it computed, it did
not wait). Without that evidence, and for a worker killed by a signal the pool did not send (the
OOM killer), the candidate is an ``error``: infrastructure, which the composition's ``onError``
decides.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from rewardkit.builtin.answers import EXTRACTED_ANSWER
from rewardkit.capacity import usable_cpus
from rewardkit.contracts import (
    MetricContribution,
    RewardCandidateResult,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
)
from rewardkit.errors import RewardContractError
from rewardkit_rl.verifiers.math_answers import (
    exact_value,
    joined,
    normalise,
    plain_expression,
    stated_answers,
    verdict_of_forms,
)
from rewardkit_rl.verifiers.math_cost import Cost, measure, refusal
from rewardkit_rl.verifiers.pool import KillablePool, Outcome

# The ``math`` provider's revision: 4 reads the compound references of issue 28 (chained
# equalities, ``=``-chain systems, piecewise arrays, ``relation : interval``, approximate sets,
# general solutions with free constants, ``\\ne`` exclusions) and scores a verbatim answer only
# once its reference is verified; 5 reads every box (several different ones state a list, not the
# last one), every inline maths of a final-answer phrase, and only text that renders (not inside
# ``\\phantom``, nor white); 6 scores an infinite, undefined or NaN answer 0 against an approximation
# (revision 5 paid ``\\infty`` for ``\\cos(e) \\approx -0.912``, issue 41). For ``verifiers/__init__.py``
# to register (``revision=``).
REVISION = "6"
MATH_DIAGNOSTICS = (
    "extracted",
    "fast_path",
    "timeout",
    "unparsed",
    "refused_cost",
    "out_of_memory",
    "several_answers",
)
_CHECK_TARGET = "rewardkit_rl.verifiers.math_check:check"
_GOLD_CACHE_SIZE = 4096
_WORST = {"task": 0.0}
# A timed-out worker is charged only when it spent at least this share of the wall time on a CPU:
# below it, it waited (an overloaded machine) more than it computed.
MIN_CPU_SHARE = 0.5
_FAULTS = ("timeout", "memory")


def _diagnostics(
    extracted: float, fast: float, timeout: float, unparsed: float = 0.0, charged: str | None = None
) -> tuple[MetricContribution, ...]:
    found = (
        MetricContribution("extracted", extracted),
        MetricContribution("fast_path", fast),
        MetricContribution("timeout", timeout),
        MetricContribution("unparsed", unparsed),
        MetricContribution("refused_cost", 0.0),
        MetricContribution("out_of_memory", 0.0),
        MetricContribution("several_answers", 0.0),
    )
    return tuple(item for item in found if item.name != charged)


def _annotated(result: RewardProviderResult, several: bool, answer: str | None) -> RewardProviderResult:
    """``result`` with the ``several_answers`` diagnostic at 1 when ``several`` (the completion stated
    several different answers, boxes or inline maths in its final-answer phrase, read as one list;
    ``charged`` adds its own, at 1), and the answer text it read as the ``extracted_answer`` note
    (display only: never a term nor a diagnostic)."""
    if not several and answer is None:
        return result
    diagnostics = result.diagnostics
    if several:
        kept = tuple(item for item in diagnostics if item.name != "several_answers")
        diagnostics = (*kept, MetricContribution("several_answers", 1.0))
    return RewardProviderResult(
        terms=result.terms,
        diagnostics=diagnostics,
        status=result.status,
        reason=result.reason,
        charge=result.charge,
        notes=None if answer is None else {EXTRACTED_ANSWER: answer},
    )


def _charged(reason: str, diagnostic: str, *, deterministic: bool, fast: bool) -> RewardProviderResult:
    return RewardProviderResult.charged(
        reason,
        diagnostic,
        _WORST,
        deterministic=deterministic,
        diagnostics=_diagnostics(1.0, float(fast), 0.0, charged=diagnostic),
    )


def _scored(
    value: bool,
    *,
    extracted: bool = True,
    fast: bool = False,
    reason: str | None = None,
    unparsed: bool = False,
) -> RewardProviderResult:
    return RewardProviderResult(
        terms={"task": float(value)},
        diagnostics=_diagnostics(float(extracted), float(fast), 0.0, float(unparsed)),
        reason=reason,
    )


def _from_outcome(outcome: Outcome, unproven: str | None) -> RewardProviderResult:
    """The result of a worker's outcome; a timeout or a memory error is charged to the candidate
    when ``unproven`` is None (the evidence holds), else it is an error saying what is missing."""
    if outcome.status in _FAULTS:
        share = outcome.cpu_share
        if unproven is None and share is not None and share < MIN_CPU_SHARE:
            unproven = f"the worker spent {share:.0%} of the time on a CPU (it waited more than it computed)"
        elif unproven is None and share is None:
            unproven = "the worker's CPU time could not be read"
        if unproven is None:
            diagnostic = "timeout" if outcome.status == "timeout" else "out_of_memory"
            return _charged(
                f"{outcome.reason} (the worker computed {share:.0%} of the time)",
                diagnostic,
                deterministic=False,
                fast=False,
            )
        if outcome.status == "timeout":
            return RewardProviderResult.fail(f"timeout, not charged: {unproven}", _diagnostics(1.0, 0.0, 1.0))
        reason = f"{outcome.reason}, not charged: {unproven}"
        return RewardProviderResult.fail(reason, _diagnostics(1.0, 0.0, 0.0))
    if outcome.status == "error":
        return RewardProviderResult.fail(f"math-verify failed: {outcome.reason}", _diagnostics(1.0, 0.0, 0.0))
    verdict, detail = outcome.value
    if verdict == "skip":
        return RewardProviderResult.skip(detail, _diagnostics(1.0, 0.0, 0.0))
    equal, reason, unparsed = detail
    return _scored(bool(equal), reason=None if equal else reason, unparsed=bool(unparsed))


@dataclass
class _Plan:
    """One group's work: results decided cheaply, and the requests left for the workers."""

    gold: str
    results: list[RewardProviderResult | None]
    slow: list[int] = field(default_factory=list)
    requests: list[tuple[str, ...]] = field(default_factory=list)  # one per ``slow``, then a gold check
    spelled: list[int] = field(default_factory=list)  # answers spelled as the reference
    several: list[int] = field(default_factory=list)  # completions stating several different answers
    answers: list[str | None] = field(default_factory=list)  # the text read as each one's answer
    gold_problem: str | None = ""  # "" usable, None not known yet, else why it cannot be used


class MathVerifier:
    """Group provider for the ``math`` reward (see the module docstring). Call ``close()`` when done."""

    # What the workers run (``module:function``), read when the pool starts; tests point it at a
    # function that hangs on purpose.
    check_target = _CHECK_TARGET

    def __init__(
        self,
        *,
        timeout_s: float = 5.0,
        max_answer_chars: int = 1000,
        workers: int = 0,
        memory_limit_mb: int = 4096,
    ) -> None:
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
            raise TypeError(f"math: timeout_s must be a number of seconds, got {timeout_s!r}")
        if not math.isfinite(timeout_s) or not 0 < timeout_s <= 600:
            raise ValueError(f"math: timeout_s must be in (0, 600] seconds, got {timeout_s!r}")
        for name, value, low in (
            ("max_answer_chars", max_answer_chars, 1),
            ("workers", workers, 0),
            ("memory_limit_mb", memory_limit_mb, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"math: {name} must be an integer >= {low}, got {value!r}")
        self.timeout_s = float(timeout_s)
        self.max_answer_chars = max_answer_chars
        # Worker processes beyond the CPUs this process may use (affinity, cgroup quota) only queue.
        self.workers = workers or min(usable_cpus(), 8)
        self.memory_limit_mb = memory_limit_mb
        self._pool: KillablePool | None = None  # created on the first check that needs it
        self._lock = threading.Lock()
        self._gold_cache: OrderedDict[str, str] = OrderedDict()

    @property
    def pool(self) -> KillablePool:
        with self._lock:
            if self._pool is None:
                limit = self.memory_limit_mb
                self._pool = KillablePool(self.check_target, self.workers, memory_limit_mb=limit)
            return self._pool

    def close(self) -> None:
        """Stop the worker processes (also done at interpreter exit)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _cached_gold(self, gold: str) -> str | None:
        """Why this reference could not be used when it was checked before ("" when it could;
        None: not known yet)."""
        with self._lock:
            known = self._gold_cache.get(gold)
            if known is not None:
                self._gold_cache.move_to_end(gold)
            return known

    def _remember_gold(self, gold: str, problem: str) -> None:
        with self._lock:
            self._gold_cache[gold] = problem
            while len(self._gold_cache) > _GOLD_CACHE_SIZE:
                self._gold_cache.popitem(last=False)

    def _reference(self, request: RewardGroupRequest) -> str:
        reference = request.context.reference
        if isinstance(reference, bool) or not isinstance(reference, (str, int, float)):
            raise RewardContractError(
                f"math needs a string (LaTeX) or number reference, got {type(reference).__name__}",
                group_id=request.group_id,
                rule="reference-type",
            )
        return reference if isinstance(reference, str) else repr(reference)

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        """Score one group (the provider contract)."""
        return self.evaluate_many([request])[0]

    def evaluate_many(self, requests: Sequence[RewardGroupRequest]) -> list[RewardGroupResult]:
        """Score several groups with one pass over the workers (a rollout batch at once)."""
        plans = [self._plan(request) for request in requests]
        batch = [item for plan in plans for item in plan.requests]
        # A group's samples often repeat one answer: each distinct request goes to a worker once.
        distinct = list(dict.fromkeys(batch))
        answered = dict(zip(distinct, self.pool.map(distinct, self.timeout_s))) if distinct else {}
        outcomes = [answered[item] for item in batch]
        per_plan = []
        offset = 0
        for plan in plans:
            per_plan.append(outcomes[offset : offset + len(plan.requests)])
            offset += len(plan.requests)
            self._settle_reference(plan, per_plan[-1])
        in_budget = self._evidence(plans, per_plan, any(o.status == "ok" for o in answered.values()))
        results = []
        for request, plan, mine in zip(requests, plans, per_plan):
            scored = self._finish(plan, mine, in_budget)
            results.append(
                RewardGroupResult(
                    request.group_id,
                    tuple(
                        RewardCandidateResult(candidate.trajectory_id, result)
                        for candidate, result in zip(request.candidates, scored)
                    ),
                )
            )
        return results

    def _plan(self, request: RewardGroupRequest) -> _Plan:
        gold = self._reference(request).strip()
        count = len(request.candidates)
        plan = _Plan(gold, [None] * count, answers=[None] * count)
        if not gold or len(gold) > self.max_answer_chars:
            reason = "the reference is empty" if not gold else "the reference is longer than max_answer_chars"
            plan.results = [RewardProviderResult.skip(reason)] * count
            return plan
        gold_cost: Cost | None = None
        gold_form = normalise(gold)
        gold_number = exact_value(gold_form) is not None
        for index, candidate in enumerate(request.candidates):
            found = stated_answers(candidate.completion)
            if found is None:
                plan.results[index] = _scored(False, extracted=False, fast=True)
                continue
            answer = joined(found[0])
            plan.answers[index] = answer or None  # shown, even when rejected below
            if len(found[0]) > 1:
                plan.several.append(index)
            if not answer or len(answer) > self.max_answer_chars:
                # An empty or runaway "answer" is not a final answer; it earns nothing.
                plan.results[index] = _scored(False, fast=True)
                continue
            if len(found[0]) > 1 and gold_number:
                # Several different answers state a list; a list is never the one number.
                reason = "several different answers (a list), the reference is one number"
                plan.results[index] = _scored(False, fast=True, reason=reason)
                continue
            answer_form = normalise(answer)
            verdict = verdict_of_forms(gold_form, answer_form)
            if verdict is not None:
                plan.results[index] = _scored(verdict, fast=True)
                if verdict and answer_form == gold_form:
                    plan.spelled.append(index)
                continue
            # The cost guards, after the exact check: an answer spelled as the reference is never
            # refused, nor one whose costly structure the reference shares (``math_cost.refusal``).
            if answer_form != gold_form:
                gold_cost = gold_cost or measure(gold)
                refused = refusal(gold_cost, measure(answer))
                if refused is not None:
                    plan.results[index] = _charged(refused, "refused_cost", deterministic=True, fast=True)
                    continue
            plan.slow.append(index)
            plan.requests.append(("verify", gold, answer))
        # Whether the reference can be used matters when some answer needs a worker, or is
        # spelled as the reference: an identical answer scores 1 only once the reference is
        # known to be usable (parsed, and true where it states a relation). The workers check it
        # with every answer (or alone, when no answer needs them), and one that finds it unusable
        # skips the whole group, so that no group is half-scored; the finding is cached. The
        # other answers settled above (equal or unequal numbers, missing or refused answers) are
        # what they are whatever the workers think of the reference.
        if not plan.slow and not plan.spelled:
            return plan
        known = exact_value(gold_form) is not None or plain_expression(gold)
        plan.gold_problem = "" if known else self._cached_gold(gold)
        if plan.gold_problem:
            plan.slow, plan.requests = [], []  # known to be unusable: no worker is needed
        elif plan.gold_problem is None and not plan.slow:
            plan.requests.append(("gold", gold))
        return plan

    def _settle_reference(self, plan: _Plan, outcomes: list[Outcome]) -> None:
        """What the workers' answers say of a reference not known yet (a fault says nothing)."""
        if plan.gold_problem is not None:
            return
        answered = [
            (request[0], outcome.value)
            for request, outcome in zip(plan.requests, outcomes)
            if outcome.status == "ok"
        ]
        if answered:
            problems = [
                detail
                for kind, (verdict, detail) in answered
                if (kind == "verify" and verdict == "skip") or (kind == "gold" and detail)
            ]
            plan.gold_problem = problems[0] if problems else ""
            self._remember_gold(plan.gold, plan.gold_problem)

    def _evidence(self, plans: list[_Plan], outcomes: list[list[Outcome]], in_budget: bool) -> bool:
        """Whether a check finished within its time in this batch. When a timeout or a memory
        error is to be judged and that is not known, or its group's reference is not known to be
        usable, the references of those groups are checked (a canary: they must finish in time);
        their findings settle the references."""
        faulted = [
            plan
            for plan, mine in zip(plans, outcomes)
            if not plan.gold_problem and any(outcome.status in _FAULTS for outcome in mine)
        ]
        unknown = list(dict.fromkeys(plan.gold for plan in faulted if plan.gold_problem is None))
        if not faulted or (in_budget and not unknown):
            return in_budget
        canaries = unknown or [faulted[0].gold]
        checked = self.pool.map([("gold", gold) for gold in canaries], self.timeout_s)
        for gold, outcome in zip(canaries, checked):
            if outcome.status != "ok":
                continue
            in_budget = True
            problem = outcome.value[1] or ""
            self._remember_gold(gold, problem)
            for plan in faulted:
                if plan.gold == gold and plan.gold_problem is None:
                    plan.gold_problem = problem
        return in_budget

    def _finish(self, plan: _Plan, outcomes: list[Outcome], in_budget: bool) -> list[RewardProviderResult]:
        if plan.gold_problem:
            reason = f"{plan.gold_problem} (reference {plan.gold[:80]!r})"
            skipped = RewardProviderResult.skip(reason)
            return [_annotated(skipped, False, answer) for answer in plan.answers]
        if plan.gold_problem is None:
            unproven: str | None = "the reference is not known to be usable (its check did not finish)"
        elif not in_budget:
            unproven = "no check finished within its time in this batch (a canary neither)"
        else:
            unproven = None
        for index, outcome in zip(plan.slow, outcomes):
            plan.results[index] = _from_outcome(outcome, unproven)
        if plan.gold_problem is None:
            for index in plan.spelled:
                reason = f"spelled as the reference, not scored: {unproven}"
                plan.results[index] = RewardProviderResult.fail(reason, _diagnostics(1.0, 1.0, 0.0))
        lost = RewardProviderResult.fail("no verdict was produced")
        several = set(plan.several)
        return [
            _annotated(result if result is not None else lost, index in several, answer)
            for index, (result, answer) in enumerate(zip(plan.results, plan.answers))
        ]

    def __repr__(self) -> str:
        return f"MathVerifier(timeout_s={self.timeout_s}, workers={self.workers})"
