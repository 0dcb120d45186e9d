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
(deterministic). A fault that could be the infrastructure's, a worker timeout (``timeout``), a
``MemoryError`` (``out_of_memory``), an exception while comparing (``comparison_error``) or a
worker killed by a signal the pool did not send (``worker_crash``), is decided by reproduction
(``rewardkit.scoring.reproduction``), never from figures the candidate controls: a worker is leased (nothing
else runs on it, same memory limit, same ``timeout_s``), the canary, the group's own reference
compared with itself through the whole comparison, runs on it, then the candidate's comparison once
more. It faults again: the candidate's 0, with the evidence in the ``reproduction`` note. It does not:
the second verdict counts. The canary fails: an infrastructure ``error`` naming the canary, which the
composition's ``onError`` decides (``raise``, the default, fails the batch). A canary that finds the
reference unusable skips the group, as a worker's finding does. Past the batch's rerun budget
(``reruns.per_batch`` of the spec) the canary alone decides. Faults are reproduced after the batch's
other comparisons, several at once on different workers.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache

from rewardkit.plugin import (
    EXTRACTED_ANSWER,
    REPRODUCTION_NOTE,
    CanaryFailed,
    Charged,
    Fault,
    MetricContribution,
    RerunBudget,
    RewardCandidateResult,
    RewardContractError,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    reproduce,
    rerun_budget,
    usable_cpus,
)
from rewardkit_rl.verifiers.math_answers import (
    exact_value,
    joined,
    normalise,
    plain_expression,
    stated_answers,
    verdict_of_forms,
)
from rewardkit_rl.verifiers.math_cost import Cost, measure, refusal
from rewardkit_rl.verifiers.pool import KillablePool, Lease, Outcome

# The ``math`` provider's revision: 4 reads the compound references of issue 28 (chained
# equalities, ``=``-chain systems, piecewise arrays, ``relation : interval``, approximate sets,
# general solutions with free constants, ``\\ne`` exclusions) and scores a verbatim answer only
# once its reference is verified; 5 reads every box (several different ones state a list, not the
# last one), every inline maths of a final-answer phrase, and only text that renders (not inside
# ``\\phantom``, nor white); 6 scores an infinite, undefined or NaN answer 0 against an approximation
# (revision 5 paid ``\\infty`` for ``\\cos(e) \\approx -0.912``, issue 41); 7 decides a worker's
# fault by reproduction (issue 40): an exception while comparing is the candidate's 0 once it
# reproduces (revision 6 made it an error, failing the batch), a timeout or memory error is charged
# when it reproduces beside a healthy canary, not on the worker's CPU share, and the cost guards
# refuse what they cannot price (``\\Gamma(10^6)``, ``\\operatorname{eye}(10^5)`` reached a worker).
# For ``verifiers/__init__.py`` to register (``revision=``).
REVISION = "7"
MATH_DIAGNOSTICS = (
    "extracted",
    "fast_path",
    "timeout",
    "unparsed",
    "refused_cost",
    "out_of_memory",
    "several_answers",
    "comparison_error",
    "worker_crash",
    "reruns",
)
# What vouches for a worker before a candidate's fault is reproduced on it (named in errors).
CANARY_NAME = "the group's reference compared with itself"
_CHECK_TARGET = "rewardkit_rl.verifiers.math_check:check"
_GOLD_CACHE_SIZE = 4096
_WORST = {"task": 0.0}
# The diagnostic of each kind of worker fault (the pool's ``Outcome.status``).
_FAULT_DIAGNOSTIC = {
    "timeout": "timeout",
    "memory": "out_of_memory",
    "error": "comparison_error",
    "died": "worker_crash",
}


# Cached: a batch builds the same few tuples for most of its candidates (repeated scoring is
# dominated by work in the calling process).
@lru_cache(maxsize=256)
def _diagnostics(
    *,
    extracted: bool = True,
    fast: bool = False,
    unparsed: bool = False,
    reruns: int = 0,
    charged: str | None = None,
) -> tuple[MetricContribution, ...]:
    """Every diagnostic of ``math``, at 0 but those given; ``charged`` is left out (``charged``
    adds it, at 1)."""
    values = dict.fromkeys(MATH_DIAGNOSTICS, 0.0)
    values.update(extracted=float(extracted), fast_path=float(fast), unparsed=float(unparsed))
    values["reruns"] = float(reruns)
    return tuple(MetricContribution(name, value) for name, value in values.items() if name != charged)


def _annotated(result: RewardProviderResult, several: bool, answer: str | None) -> RewardProviderResult:
    """``result`` with the ``several_answers`` diagnostic at 1 when ``several`` (the completion stated
    several different answers, boxes or inline maths in its final-answer phrase, read as one list;
    ``charged`` adds its own, at 1), and the answer text it read as the ``extracted_answer`` note
    (display only: never a term nor a diagnostic) beside the notes it has."""
    if not several and answer is None:
        return result
    diagnostics = result.diagnostics
    if several:
        kept = tuple(item for item in diagnostics if item.name != "several_answers")
        diagnostics = (*kept, MetricContribution("several_answers", 1.0))
    notes = dict(result.notes)
    if answer is not None:
        notes[EXTRACTED_ANSWER] = answer
    return RewardProviderResult(
        terms=result.terms,
        diagnostics=diagnostics,
        status=result.status,
        reason=result.reason,
        charge=result.charge,
        notes=notes or None,
    )


def _refused(reason: str) -> RewardProviderResult:
    return RewardProviderResult.charged(
        reason,
        "refused_cost",
        _WORST,
        deterministic=True,
        diagnostics=_diagnostics(fast=True, charged="refused_cost"),
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
        diagnostics=_diagnostics(extracted=extracted, fast=fast, unparsed=unparsed),
        reason=reason,
    )


def _verdict(outcome: Outcome, reruns: int = 0, note: str | None = None) -> RewardProviderResult:
    """The result of a worker's answer (``ok``): scored, or skipped when the reference is unusable."""
    verdict, detail = outcome.value
    notes = None if note is None else {REPRODUCTION_NOTE: note}
    if verdict == "skip":
        return RewardProviderResult.skip(detail, _diagnostics(reruns=reruns))
    equal, reason, unparsed = detail
    return RewardProviderResult(
        terms={"task": float(bool(equal))},
        diagnostics=_diagnostics(unparsed=bool(unparsed), reruns=reruns),
        reason=None if equal else reason,
        notes=notes,
    )


def _fault(outcome: Outcome) -> Fault:
    """The fault a worker's outcome other than ``ok`` stands for, in the words a reason uses."""
    kind = _FAULT_DIAGNOSTIC[outcome.status]
    detail = {
        "timeout": f"the comparison did not finish ({outcome.reason})",
        "out_of_memory": f"the comparison ran out of memory ({outcome.reason})",
        "comparison_error": f"the comparison raised {outcome.reason}",
        "worker_crash": f"the worker comparing it was killed ({outcome.reason})",
    }[kind]
    return Fault(kind, detail)


class _UnusableReference(Exception):
    """The canary found the reference unusable: the group is skipped, nothing is charged."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


@dataclass(frozen=True)
class _Decision:
    """What reproducing one faulted comparison found: the candidate's result (None when the canary
    found the reference unusable), and what is now known of the reference ("" usable, None not
    known, else why it cannot be used)."""

    result: RewardProviderResult | None
    gold_problem: str | None


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
        # The batch's rerun budget, read in the calling thread: the threads that reproduce faults
        # do not see this context.
        budget = rerun_budget()
        plans = [self._plan(request) for request in requests]
        batch = [item for plan in plans for item in plan.requests]
        # A group's samples often repeat one answer: each distinct request goes to a worker once.
        distinct = list(dict.fromkeys(batch))
        answered = dict(zip(distinct, self.pool.map(distinct, self.timeout_s))) if distinct else {}
        per_plan = []
        offset = 0
        for plan in plans:
            per_plan.append([answered[item] for item in batch[offset : offset + len(plan.requests)]])
            offset += len(plan.requests)
            self._settle_reference(plan, per_plan[-1])
        decided = self._reproduced(plans, answered, budget)
        results = []
        for request, plan, mine in zip(requests, plans, per_plan):
            scored = self._finish(plan, mine, decided)
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
                    plan.results[index] = _refused(refused)
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

    def _reproduced(
        self, plans: list[_Plan], answered: dict[tuple[str, ...], Outcome], budget: RerunBudget
    ) -> dict[tuple[str, ...], _Decision]:
        """Each faulted request of a group whose reference is not known to be unusable, decided by
        reproduction (several at once, each on its own leased worker); the references the canaries
        settled are recorded in their plans."""
        # What one group found of a reference holds for every group of the batch that has it.
        known = {plan.gold: plan.gold_problem for plan in plans if plan.gold_problem is not None}
        for plan in plans:
            if plan.gold_problem is None and plan.gold in known:
                plan.gold_problem = known[plan.gold]
        unusable = {gold for gold, problem in known.items() if problem}
        faulted = [
            request
            for request, outcome in answered.items()
            if outcome.status != "ok" and request[1] not in unusable
        ]
        if not faulted:
            return {}
        with ThreadPoolExecutor(min(len(faulted), self.workers), "rewardkit-math-rerun") as executor:
            futures = [
                executor.submit(self._decide, request, answered[request], budget) for request in faulted
            ]
            decided = dict(zip(faulted, (future.result() for future in futures)))
        found = {request[1]: d.gold_problem for request, d in decided.items() if d.gold_problem is not None}
        for plan in plans:
            if plan.gold_problem is None and plan.gold in found:
                plan.gold_problem = found[plan.gold]
        for gold, problem in found.items():
            self._remember_gold(gold, problem)
        return decided

    def _decide(self, request: tuple[str, ...], first: Outcome, budget: RerunBudget) -> _Decision:
        """Reproduce one faulted request on a leased worker after the canary (see the module
        docstring). A faulted check of the reference alone (``("gold", gold)``, no candidate's
        answer in it) only runs the canary, which settles the reference."""
        fault = _fault(first)
        gold = request[1]
        with self.pool.lease() as worker:
            if request[0] == "gold":
                return self._canary_alone(worker, fault, gold)
            reruns = 0

            def rerun() -> Outcome | Fault:
                nonlocal reruns
                reruns += 1
                second = worker.run(request, self.timeout_s)  # alone on the leased worker
                return second if second.status == "ok" else _fault(second)

            try:
                verdict = reproduce(
                    fault,
                    canary_name=CANARY_NAME,
                    canary=lambda: self._canary_failure(worker, gold),
                    rerun=rerun,
                    budget=budget,
                )
            except CanaryFailed as error:
                return _Decision(self._infrastructure(str(error)), None)
            except _UnusableReference as unusable:
                return _Decision(None, unusable.problem)
        if isinstance(verdict, Charged):
            diagnostics = _diagnostics(reruns=reruns, charged=verdict.fault.kind)
            return _Decision(verdict.result(_WORST, diagnostics=diagnostics), "")
        note = (
            f"not reproduced: {fault.detail} on its first comparison; compared again alone on a "
            f"worker where the canary ({CANARY_NAME}) had just passed, it did not, and the second "
            "verdict counts"
        )
        return _Decision(_verdict(verdict, reruns, note), "")

    def _canary_alone(self, worker: Lease, fault: Fault, gold: str) -> _Decision:
        try:
            why = self._canary_failure(worker, gold)
        except _UnusableReference as unusable:
            return _Decision(None, unusable.problem)
        if why is not None:
            faulted = Fault(fault.kind, f"the reference's own check faulted: {fault.detail}")
            error = CanaryFailed(faulted, CANARY_NAME, why)
            return _Decision(self._infrastructure(str(error)), None)
        return _Decision(None, "")

    def _canary_failure(self, worker: Lease, gold: str) -> str | None:
        """Why the canary failed on ``worker`` (None when it passed): the reference compared with
        itself, through the whole comparison, with the candidate's time and memory limits. Raises
        ``_UnusableReference`` when it finds the reference unusable (a finding, not a failure)."""
        outcome = worker.run(("canary", gold, gold), self.timeout_s)
        if outcome.status != "ok":
            return outcome.reason or outcome.status
        verdict, detail = outcome.value
        if verdict == "skip":
            raise _UnusableReference(detail)
        if not detail[0]:
            return f"the reference did not compare equal to itself ({detail[1]})"
        return None

    @staticmethod
    def _infrastructure(reason: str) -> RewardProviderResult:
        return RewardProviderResult.fail(f"math: {reason}", _diagnostics())

    def _finish(
        self, plan: _Plan, outcomes: list[Outcome], decided: dict[tuple[str, ...], _Decision]
    ) -> list[RewardProviderResult]:
        if plan.gold_problem:
            reason = f"{plan.gold_problem} (reference {plan.gold[:80]!r})"
            skipped = RewardProviderResult.skip(reason)
            return [_annotated(skipped, False, answer) for answer in plan.answers]
        infrastructure = None
        for request, outcome in zip(plan.requests, outcomes):
            if outcome.status != "ok" and decided[request].result is not None:
                infrastructure = infrastructure or decided[request].result
        for index, request, outcome in zip(plan.slow, plan.requests, outcomes):
            if outcome.status == "ok":
                plan.results[index] = _verdict(outcome)
                continue
            decision = decided[request]
            # None: the canary found unusable a reference this group took for usable (it reads
            # as a number here): this answer is skipped, as it would be by a worker's finding.
            plan.results[index] = decision.result or RewardProviderResult.skip(
                decision.gold_problem or "the reference could not be used", _diagnostics()
            )
        if plan.gold_problem is None:
            # Every comparison of this group faulted and no canary vouched for its reference (or
            # the reference's own check faulted): an answer spelled as the reference is not scored.
            why = infrastructure.reason if infrastructure is not None else "its check did not finish"
            for index in plan.spelled:
                reason = (
                    f"spelled as the reference, not scored: the reference is not known to be usable: {why}"
                )
                plan.results[index] = RewardProviderResult.fail(reason, _diagnostics(fast=True))
        lost = RewardProviderResult.fail("no verdict was produced")
        several = set(plan.several)
        return [
            _annotated(result if result is not None else lost, index in several, answer)
            for index, (result, answer) in enumerate(zip(plan.results, plan.answers))
        ]

    def __repr__(self) -> str:
        return f"MathVerifier(timeout_s={self.timeout_s}, workers={self.workers})"
