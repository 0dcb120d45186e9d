"""``nih-compare``: the candidates of a group judged against each other, scored in [0, 1].

Pairwise (the default): every pair of a small group, or for a big group the pairs of
``max(1, max_comparisons // n)`` rings (candidate ``i`` against ``i+1``, ``i+2``, ... modulo
``n``, so every candidate gets the same number of comparisons), each pair asked in *both*
orders. A verdict is worth 1 to the winner, 0 to the loser and 0.5 to each on a tie; a pair's
value to a candidate is the mean over its two orders, and its score the mean over its pairs. Two
orders naming the answer in the same position ("A" both times) contradict each other: that is a
``position_flips`` diagnostic and the pair counts as a tie, so a judge that always prefers the
first answer gives identical candidates identical scores.

Listwise: the whole group ranked twice, as given and reversed; a candidate's score is
``1 - mean_rank / (n - 1)``; ``position_flips`` is the fraction of other candidates it swapped
places with between the two rankings.

Every answer reaches the judge inside a fence it cannot close (``prompts``). When a comparison's
verdict stays unreadable or off the scale after the re-asks, the judge refuses it for the content
or the length, or its request fails (a 5xx, a timeout, a dropped connection), each candidate in
it is a *suspect*, decided by reproduction
(``attribution``): a canary (two other answers of the group a live verdict read, drawn per
request, compared in both orders) is asked live, then the suspect is compared once more with
another partner (drawn the same way, never the one it failed with), in both orders. It fails
again: charged (score 0, the reason, the diagnostic = 1, the evidence in the ``reproduction``
note), and it forfeits every comparison it is in: each counts as a win for the other candidate
(pairwise), or it is ranked below every uncharged candidate, who are ranked again among
themselves (listwise). It reads: pairwise, that comparison takes the place of the failed ones in
its score; listwise, it is ranked again with the others. A ranking holds every answer, so before
anyone is suspected its answers are compared two at a time in a ring (as two-answer rankings) to
find which comparisons fail. A canary that fails, or a comparison stopped by what says nothing
about it (the deadline, a rate limit that outlasts it), makes the candidates concerned ``error``
outcomes with the reason; a group of one candidate is ``skipped``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rewardkit.plugin import (
    CanaryFailed,
    Charged,
    Fault,
    MetricContribution,
    RerunBudget,
    RewardCandidateResult,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    areproduce,
    rerun_budget,
)
from rewardkit_nih_judge import attribution, prompts
from rewardkit_nih_judge.attribution import CHARGE_DIAGNOSTICS, ENDPOINT, Outcome, chargeable
from rewardkit_nih_judge.client import Exchange, JudgeFailure, JudgeRunner
from rewardkit_nih_judge.fence import FenceKey
from rewardkit_nih_judge.params import CompareParams, checked
from rewardkit_nih_judge.rubric import (
    CALL_DIAGNOSTICS,
    Call,
    call_diagnostics,
    exchange_call,
    failure_call,
    prompter,
)
from rewardkit_nih_judge.verdicts import Verdict, parse_ranking, parse_winner

COMPARE_DIAGNOSTICS = ("position_flips", "ties", "comparisons", *CALL_DIAGNOSTICS, *CHARGE_DIAGNOSTICS)
# How a suspect's reproduction ended: charged; its comparison with another partner in both orders
# (suspect first, then second), read; or why it is an error (a canary that failed, the transport).
Decision = Charged | tuple[Exchange, Exchange] | str


def _counting(budget: RerunBudget) -> RerunBudget:
    """A budget that never runs out, spending ``budget`` while it lasts (so other providers of the
    batch see what comparisons used)."""
    budget.take()
    return RerunBudget(1)


def pair_schedule(count: int, max_pairs: int) -> list[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, a group of ``count`` candidates is judged on."""
    every = [(i, j) for i in range(count) for j in range(i + 1, count)]
    if len(every) <= max_pairs:
        return every
    pairs: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for offset in range(1, max(1, max_pairs // count) + 1):
        for i in range(count):
            j = (i + offset) % count
            pair = (min(i, j), max(i, j))
            if pair not in seen:
                seen.add(pair)
                pairs.append(pair)
    return pairs


@dataclass
class _Tally:
    """What one candidate's comparisons added up to."""

    values: list[float] = field(default_factory=list)
    flips: int = 0
    ties: int = 0
    verdicts: int = 0
    judged: int = 0
    forfeits: int = 0
    replaced: int = 0
    calls: list[Call] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def diagnostics(self, cache: bool, pairs: int) -> tuple[MetricContribution, ...]:
        found = [MetricContribution("comparisons", float(self.verdicts))]
        if pairs and not self.failures:
            found.append(MetricContribution("position_flips", self.flips / pairs, weight=float(pairs)))
        if self.verdicts and not self.failures:
            found.append(MetricContribution("ties", self.ties / self.verdicts, weight=float(self.verdicts)))
        return (*found, *call_diagnostics(self.calls, cache))


def _call(outcome: Outcome) -> Call:
    return failure_call(outcome) if isinstance(outcome, JudgeFailure) else exchange_call(outcome)


def _first_value(winner: str) -> float:
    """What a verdict is worth to the answer shown first."""
    return {"A": 1.0, "B": 0.0, "tie": 0.5}[winner]


def _tally_pair(first: _Tally, second: _Tally | None, first_says: str, second_says: str) -> float:
    """Count one pair asked in both orders (``first_says``: the verdict with ``first``'s answer shown
    first) in the tallies of its members (``second`` None: only ``first``'s counts it); return its
    value to ``first``."""
    value = (_first_value(first_says) + 1.0 - _first_value(second_says)) / 2
    flip = first_says != "tie" and first_says == second_says
    ties = (first_says == "tie") + (second_says == "tie")
    for tally in (first, second):
        if tally is not None:
            tally.flips += flip
            tally.ties += ties
            tally.verdicts += 2
            tally.judged += 1
    return value


def _scored(score: float, diagnostics: tuple[MetricContribution, ...], reason: str) -> RewardProviderResult:
    return RewardProviderResult(
        terms={"score": score}, diagnostics=(*diagnostics, *attribution.uncharged()), reason=reason
    )


class CompareJudge:
    """Group-native comparative judge; every comparison of a group is asked at once."""

    def __init__(self, settings: CompareParams) -> None:
        self.settings = settings
        self.runner = JudgeRunner(settings, "nih-compare")
        self.fences = FenceKey(settings, "nih-compare")
        self.prompter = prompter(settings, self.fences, {})

    def __repr__(self) -> str:
        return f"CompareJudge(mode={self.settings.mode!r}, model={self.settings.model!r})"

    def close(self) -> None:
        self.runner.close()

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        if len(request.candidates) < 2:
            results = [RewardProviderResult.skip("a group of one candidate has nothing to compare with")]
        else:
            deadline = time.monotonic() + self.settings.deadline_s
            self.fences.key()  # the secret is read (or made) here, before any question is asked
            judge = self._pairwise if self.settings.mode == "pairwise" else self._listwise
            budget = rerun_budget()  # the batch's, read in this thread: the loop's thread has no context
            results = self.runner.run(lambda: judge(request, deadline, budget), deadline)
        return RewardGroupResult(
            request.group_id,
            tuple(
                RewardCandidateResult(candidate.trajectory_id, result)
                for candidate, result in zip(request.candidates, results)
            ),
        )

    # -- questions -----------------------------------------------------------------------------------

    def pair_messages(self, prompt: str, first: str, second: str) -> list[dict[str, str]]:
        return self.prompter.messages({"prompt": prompt, "first": first, "second": second})

    def list_messages(self, prompt: str, answers: Sequence[str]) -> list[dict[str, str]]:
        labelled = [(prompts.label(position), text) for position, text in enumerate(answers)]
        return self.prompter.messages({"prompt": prompt}, labelled)

    async def _ask(
        self, messages: list[dict[str, str]], parse: Callable[[str], Verdict], deadline: float, **options: Any
    ) -> Outcome:
        try:
            return await self.runner.ask(messages, parse, deadline, **options)
        except JudgeFailure as failure:
            return failure

    async def _compare(self, prompt: str, texts: Sequence[str], deadline: float, **options: Any) -> Outcome:
        """One question about ``texts`` in the order given: a pair, or a ranking of them all."""
        if self.settings.mode == "pairwise":
            return await self._ask(self.pair_messages(prompt, *texts), parse_winner, deadline, **options)
        labels = [prompts.label(position) for position in range(len(texts))]
        parse = partial(parse_ranking, labels=labels)
        return await self._ask(self.list_messages(prompt, texts), parse, deadline, **options)

    async def _both_orders(self, prompt: str, first: str, second: str, deadline: float) -> list[Outcome]:
        """``first`` and ``second`` compared in both orders, live (never read from the cache)."""
        return list(
            await asyncio.gather(
                self._compare(prompt, (first, second), deadline, use_cache=False),
                self._compare(prompt, (second, first), deadline, use_cache=False),
            )
        )

    async def _reproduce(
        self,
        prompt: str,
        texts: Sequence[str],
        ids: Sequence[str],
        pairs: Sequence[tuple[int, int]],
        outcomes: Sequence[Outcome],
        deadline: float,
        budget: RerunBudget,
    ) -> tuple[dict[int, Decision], dict[int, list[Call]]]:
        """Each suspect's decision, and the calls its rerun took.

        ``outcomes`` holds each of ``pairs`` asked in both orders. A pair with a failure its text
        can cause (and none of the infrastructure's) makes both its members suspects; the answers
        a verdict read are ``clean``, the pool canaries and partners are drawn from.
        """
        clean: set[int] = set()
        failed_with: dict[int, set[int]] = {}
        first_failure: dict[int, JudgeFailure] = {}
        for index, pair in enumerate(pairs):
            both = outcomes[2 * index : 2 * index + 2]
            if any(isinstance(outcome, Exchange) for outcome in both):
                clean.update(pair)
            failures = [outcome for outcome in both if isinstance(outcome, JudgeFailure)]
            if failures and all(chargeable(outcome) for outcome in failures):
                for member, other in (pair, pair[::-1]):
                    failed_with.setdefault(member, set()).add(other)
                    first_failure.setdefault(member, failures[0])
        calls: dict[int, list[Call]] = {suspect: [] for suspect in failed_with}

        async def decide(suspect: int) -> Decision:
            first, second = attribution.stand_ins(texts, ids, suspect, clean, 2, prompt, failed_with[suspect])
            (partner,) = attribution.stand_ins(texts, ids, suspect, clean, 1, prompt, failed_with[suspect])
            other = "itself" if first == second else second.name
            name = f"{first.name} compared with {other} on the same task"
            failure = first_failure[suspect]

            async def ask_canary() -> str | None:
                return attribution.why_failed(
                    await self._both_orders(prompt, first.text, second.text, deadline)
                )

            async def ask_again() -> tuple[Exchange, Exchange] | Fault:
                again = await self._both_orders(prompt, texts[suspect], partner.text, deadline)
                calls[suspect].extend(_call(outcome) for outcome in again)
                failed_again = attribution.again(again)
                if failed_again is not None:
                    return failed_again
                forward, backward = again
                assert isinstance(forward, Exchange) and isinstance(backward, Exchange)
                return forward, backward

            try:
                return await areproduce(
                    attribution.fault_of(failure),
                    canary_name=name,
                    canary=ask_canary,
                    rerun=ask_again,
                    # Suspects of a comparison come in pairs: charging a pair on the canary alone
                    # would charge an honest partner with the payload. So each is always asked
                    # again (at most two calls per member of a failed comparison), and the batch's
                    # budget only counts them.
                    budget=_counting(budget),
                )
            except CanaryFailed as failed:
                return attribution.at_endpoint(failed)
            except JudgeFailure as broke:
                return (
                    f"{failure.reason}; compared again with {partner.name}, the judge failed: {broke.reason}"
                )

        suspects = list(failed_with)
        decisions = await asyncio.gather(*(decide(suspect) for suspect in suspects))
        return dict(zip(suspects, decisions)), calls

    async def _named_by_canary(
        self,
        prompt: str,
        texts: Sequence[str],
        ids: Sequence[str],
        suspect: int,
        clean: Collection[int],
        failure: JudgeFailure,
        deadline: float,
    ) -> str:
        """The reason of a comparison stopped undecided (the deadline, a rate limit: never charged), with
        what a canary comparison of two answers a verdict read (or the task's own text) says: it
        failed too, the judge is down (``CanaryFailed``'s text, naming the canary and the URL); it
        passed, only these requests failed. ``suspect``: a member of the failed comparison (the
        canary holds other answers)."""
        first, second = attribution.stand_ins(texts, ids, suspect, clean, 2, prompt)
        other = "itself" if first == second else second.name
        name = f"{first.name} compared with {other} on the same task"
        why = attribution.why_failed(await self._both_orders(prompt, first.text, second.text, deadline))
        if why is not None:
            return str(CanaryFailed(Fault("judge_failed", failure.reason), name, why, where=ENDPOINT))
        return f"{failure.reason}; the canary ({name}) passed"

    # -- pairwise ------------------------------------------------------------------------------------

    async def _pairwise(
        self, request: RewardGroupRequest, deadline: float, budget: RerunBudget
    ) -> list[RewardProviderResult]:
        candidates = request.candidates
        texts = [candidate.completion for candidate in candidates]
        ids = [candidate.trajectory_id for candidate in candidates]
        prompt = prompts.prompt_text(request.context.prompt)
        pairs = pair_schedule(len(candidates), self.settings.max_comparisons)
        outcomes = await asyncio.gather(
            *(
                self._compare(prompt, (texts[first], texts[second]), deadline)
                for i, j in pairs
                for first, second in ((i, j), (j, i))
            )
        )
        decisions, rerun_calls = await self._reproduce(prompt, texts, ids, pairs, outcomes, deadline, budget)
        infra_reason = None
        broken = [index for index, outcome in enumerate(outcomes) if _infrastructure(outcome)]
        if broken:  # one canary for the group: is the judge down?
            both = [outcomes[2 * index : 2 * index + 2] for index in range(len(pairs))]
            clean = {member for pair, said in zip(pairs, both) if _read(said) for member in pair}
            failure = outcomes[broken[0]]
            assert isinstance(failure, JudgeFailure)
            suspect = pairs[broken[0] // 2][0]
            infra_reason = await self._named_by_canary(prompt, texts, ids, suspect, clean, failure, deadline)
        charged = {index: decided for index, decided in decisions.items() if isinstance(decided, Charged)}
        tallies = [_Tally() for _ in candidates]
        unsettled: set[int] = set()  # members of a failed comparison that no forfeit settled
        for index, (i, j) in enumerate(pairs):
            forward, backward = outcomes[2 * index], outcomes[2 * index + 1]
            for member in (i, j):
                tallies[member].calls.extend(_call(outcome) for outcome in (forward, backward))
            if i in charged or j in charged:  # a forfeit: a win for the other, whatever was said
                for member in (i, j):
                    if member not in charged:
                        tallies[member].values.append(1.0)
                        tallies[member].forfeits += 1
                continue
            failed = [outcome for outcome in (forward, backward) if isinstance(outcome, JudgeFailure)]
            if failed:
                unsettled.update((i, j))
                infra = next((outcome for outcome in failed if not chargeable(outcome)), None)
                for member, other in ((i, j), (j, i)):
                    # the infrastructure's failure is an error; otherwise the member's own decision
                    # says what the comparison comes to (read again: counted below; an error: here)
                    why = infra_reason if infra is not None else decisions[member]
                    if isinstance(why, str):
                        tallies[member].failures.append(f"comparison with {ids[other]!r} failed: {why}")
                continue
            assert isinstance(forward, Exchange) and isinstance(backward, Exchange)
            value_i = _tally_pair(tallies[i], tallies[j], forward.verdict.value, backward.verdict.value)
            tallies[i].values.append(value_i)
            tallies[j].values.append(1.0 - value_i)
        for index, decided in decisions.items():
            tally = tallies[index]
            tally.calls.extend(rerun_calls[index])
            if isinstance(decided, tuple) and index in unsettled:  # read when compared again: counts once
                forward, backward = decided
                tally.values.append(_tally_pair(tally, None, forward.verdict.value, backward.verdict.value))
                tally.replaced += 1
        cache = self.settings.cache_path is not None
        results = []
        for index, tally in enumerate(tallies):
            diagnostics = tally.diagnostics(cache, tally.judged)
            if index in charged:
                results.append(attribution.charge(charged[index], diagnostics))
                continue
            if tally.failures:
                more = f" (and {len(tally.failures) - 1} more)" if len(tally.failures) > 1 else ""
                results.append(RewardProviderResult.fail(tally.failures[0] + more, diagnostics))
                continue
            wins = sum(tally.values)
            reason = f"won {wins:g} of {len(tally.values)} pairwise comparisons, each asked in both orders"
            if tally.forfeits:
                reason += f"; {tally.forfeits} by forfeit (the other answer was charged)"
            if tally.replaced:
                reason += (
                    "; its failed comparisons replaced by one with another answer, asked again after a "
                    "verdict failed (it did not fail again)"
                )
            if tally.flips or tally.ties:
                reason += f"; {tally.flips} position flip(s), {tally.ties} tie verdict(s)"
            results.append(_scored(wins / len(tally.values), diagnostics, reason))
        return results

    # -- listwise ------------------------------------------------------------------------------------

    async def _rank(
        self, prompt: str, texts: Sequence[str], deadline: float
    ) -> tuple[list[Outcome], list[list[int]] | None]:
        """``texts`` ranked as given and reversed: the outcomes, and each text's two ranks (or None)."""
        count = len(texts)
        orders = (list(range(count)), list(reversed(range(count))))
        outcomes = list(
            await asyncio.gather(
                *(self._compare(prompt, [texts[i] for i in order], deadline) for order in orders)
            )
        )
        if any(isinstance(outcome, JudgeFailure) for outcome in outcomes):
            return outcomes, None
        ranks = [[0, 0] for _ in texts]
        for which, (order, outcome) in enumerate(zip(orders, outcomes)):
            assert isinstance(outcome, Exchange)
            place = {name: rank for rank, name in enumerate(outcome.verdict.value)}
            for position, index in enumerate(order):
                ranks[index][which] = place[prompts.label(position)]
        return outcomes, ranks

    async def _listwise(
        self, request: RewardGroupRequest, deadline: float, budget: RerunBudget
    ) -> list[RewardProviderResult]:
        candidates = request.candidates
        count = len(candidates)
        texts = [candidate.completion for candidate in candidates]
        ids = [candidate.trajectory_id for candidate in candidates]
        prompt = prompts.prompt_text(request.context.prompt)
        cache = self.settings.cache_path is not None
        outcomes, ranks = await self._rank(prompt, texts, deadline)
        calls = [_call(outcome) for outcome in outcomes]
        failed = [outcome for outcome in outcomes if isinstance(outcome, JudgeFailure)]
        if any(not chargeable(outcome) for outcome in failed):
            infra = next(outcome for outcome in failed if not chargeable(outcome))
            named = await self._named_by_canary(prompt, texts, ids, 0, (), infra, deadline)
            reason = f"the ranking of the group failed: {named}"
            return [
                RewardProviderResult.fail(reason, _Tally(calls=calls).diagnostics(cache, 0)) for _ in texts
            ]
        decisions: dict[int, Decision] = {}
        if failed:
            # One ranking holds every answer: compare them two at a time in a ring (two-answer
            # rankings, both orders) to find the answers whose comparisons fail, then reproduce.
            ring = pair_schedule(count, count)
            probes = await asyncio.gather(
                *(
                    self._compare(prompt, [texts[first], texts[second]], deadline)
                    for i, j in ring
                    for first, second in ((i, j), (j, i))
                )
            )
            calls += [_call(outcome) for outcome in probes]
            decisions, rerun_calls = await self._reproduce(prompt, texts, ids, ring, probes, deadline, budget)
            calls += [call for taken in rerun_calls.values() for call in taken]
        charged = {index: decided for index, decided in decisions.items() if isinstance(decided, Charged)}
        broken = {index: decided for index, decided in decisions.items() if isinstance(decided, str)}
        rest = [index for index in range(count) if index not in charged and index not in broken]
        note = f"; {len(charged)} charged answer(s) ranked last" if charged else ""
        again_failed: JudgeFailure | None = None
        if failed:
            # the ranking is asked again without the charged answers (all of them, when none was)
            ranks = [[0, 0]] * len(rest)
            if len(rest) > 1:
                again, ranks = await self._rank(prompt, [texts[index] for index in rest], deadline)
                calls += [_call(outcome) for outcome in again]
                again_failed = next((outcome for outcome in again if isinstance(outcome, JudgeFailure)), None)
        results: list[RewardProviderResult] = []
        for index in range(count):
            diagnostics = _Tally(calls=calls).diagnostics(cache, 0)
            decided = decisions.get(index)
            if isinstance(decided, Charged):
                results.append(attribution.charge(decided, diagnostics))
                continue
            if isinstance(decided, str):
                results.append(
                    RewardProviderResult.fail(f"the ranking of the group failed: {decided}", diagnostics)
                )
                continue
            if again_failed is not None or ranks is None:
                why = again_failed.reason if again_failed is not None else "no ranking"
                reason = f"the ranking of the group failed, and again without its charged answers: {why}"
                results.append(RewardProviderResult.fail(reason, diagnostics))
                continue
            position = rest.index(index)
            forward, backward = ranks[position]
            others = [other for other in range(len(rest)) if other != position]
            flips = sum((forward < ranks[other][0]) != (backward < ranks[other][1]) for other in others)
            tally = _Tally(flips=flips, verdicts=2, calls=calls)
            diagnostics = tuple(d for d in tally.diagnostics(cache, len(others)) if d.name != "ties")
            reason = (
                f"ranked {forward + 1} of {count} as given and {backward + 1} of {count} in reversed order"
                + note
            )
            results.append(_scored(1.0 - (forward + backward) / 2 / (count - 1), diagnostics, reason))
        return results


def _infrastructure(outcome: Outcome) -> bool:
    """A failure that says nothing about the request (the deadline, a rate limit that outlasts it,
    the cache): never charged, whoever's text it held."""
    return isinstance(outcome, JudgeFailure) and not chargeable(outcome)


def _read(outcomes: Sequence[Outcome]) -> bool:
    """Whether a verdict was read among ``outcomes`` (a comparison's two orders)."""
    return any(isinstance(outcome, Exchange) for outcome in outcomes)


def make_compare_judge(**params: Any) -> CompareJudge:
    """The ``nih-compare`` factory: checks params and the key variable; opens and starts nothing."""
    return CompareJudge(checked(CompareParams, params))


__all__ = ["COMPARE_DIAGNOSTICS", "CompareJudge", "make_compare_judge", "pair_schedule"]
