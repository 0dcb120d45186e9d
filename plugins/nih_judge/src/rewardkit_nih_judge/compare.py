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

A comparison that fails (unreadable after re-asks, or the request failed) makes every candidate
in it an ``error`` outcome with the reason; a group of one candidate is ``skipped``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rewardkit.contracts import (
    MetricContribution,
    RewardCandidateResult,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
)
from rewardkit_nih_judge import prompts
from rewardkit_nih_judge.client import Exchange, JudgeFailure, JudgeRunner
from rewardkit_nih_judge.params import CompareParams, checked
from rewardkit_nih_judge.rubric import (
    CALL_DIAGNOSTICS,
    call_diagnostics,
    exchange_call,
    failure_call,
    system_and_template,
)
from rewardkit_nih_judge.verdicts import parse_ranking, parse_winner

COMPARE_DIAGNOSTICS = ("position_flips", "ties", "comparisons", *CALL_DIAGNOSTICS)

Outcome = Exchange | JudgeFailure


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
    calls: list[tuple[int, int, bool]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def diagnostics(self, cache: bool, pairs: int) -> tuple[MetricContribution, ...]:
        found = [MetricContribution("comparisons", float(self.verdicts))]
        if pairs and not self.failures:
            found.append(MetricContribution("position_flips", self.flips / pairs, weight=float(pairs)))
        if self.verdicts and not self.failures:
            found.append(MetricContribution("ties", self.ties / self.verdicts, weight=float(self.verdicts)))
        return (*found, *call_diagnostics(self.calls, cache))


def _call(outcome: Outcome) -> tuple[int, int, bool]:
    return failure_call(outcome) if isinstance(outcome, JudgeFailure) else exchange_call(outcome)


def _first_value(winner: str) -> float:
    """What a verdict is worth to the answer shown first."""
    return {"A": 1.0, "B": 0.0, "tie": 0.5}[winner]


class CompareJudge:
    """Group-native comparative judge; every comparison of a group is asked at once."""

    def __init__(self, settings: CompareParams) -> None:
        self.settings = settings
        self.runner = JudgeRunner(settings, "nih-compare")
        self._values = {"rubric": settings.rubric_text}
        self._system, self._template = system_and_template(settings, self._values)

    def __repr__(self) -> str:
        return f"CompareJudge(mode={self.settings.mode!r}, model={self.settings.model!r})"

    def close(self) -> None:
        self.runner.close()

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        if len(request.candidates) < 2:
            results = [RewardProviderResult.skip("a group of one candidate has nothing to compare with")]
        else:
            deadline = time.monotonic() + self.settings.deadline_s
            judge = self._pairwise if self.settings.mode == "pairwise" else self._listwise
            results = self.runner.run(lambda: judge(request, deadline), deadline)
        return RewardGroupResult(
            request.group_id,
            tuple(
                RewardCandidateResult(candidate.trajectory_id, result)
                for candidate, result in zip(request.candidates, results)
            ),
        )

    def _messages(self, slots: dict[str, str]) -> list[dict[str, str]]:
        user = prompts.fill(self._template, {**self._values, **slots})
        return [{"role": "system", "content": self._system}, {"role": "user", "content": user}]

    async def _ask(self, messages: list[dict[str, str]], parse: Any, deadline: float) -> Outcome:
        try:
            return await self.runner.ask(messages, parse, deadline)
        except JudgeFailure as failure:
            return failure

    # -- pairwise ------------------------------------------------------------------------------------

    async def _pairwise(self, request: RewardGroupRequest, deadline: float) -> list[RewardProviderResult]:
        candidates = request.candidates
        prompt = prompts.prompt_text(request.context.prompt)
        pairs = pair_schedule(len(candidates), self.settings.max_comparisons)
        asks = []
        for i, j in pairs:
            for first, second in ((i, j), (j, i)):
                slots = {
                    "prompt": prompt,
                    "first": candidates[first].completion,
                    "second": candidates[second].completion,
                }
                asks.append(self._ask(self._messages(slots), parse_winner, deadline))
        outcomes = await asyncio.gather(*asks)
        tallies = [_Tally() for _ in candidates]
        pair_counts = [0] * len(candidates)
        for index, (i, j) in enumerate(pairs):
            forward, backward = outcomes[2 * index], outcomes[2 * index + 1]
            for member in (i, j):
                pair_counts[member] += 1
                tallies[member].calls.extend(_call(outcome) for outcome in (forward, backward))
            failed = [outcome for outcome in (forward, backward) if isinstance(outcome, JudgeFailure)]
            if failed:
                for member, other in ((i, j), (j, i)):
                    tallies[member].failures.append(
                        f"comparison with {candidates[other].trajectory_id!r} failed: {failed[0].reason}"
                    )
                continue
            assert isinstance(forward, Exchange) and isinstance(backward, Exchange)
            first_says, second_says = forward.verdict.value, backward.verdict.value
            value_i = (_first_value(first_says) + 1.0 - _first_value(second_says)) / 2
            flip = first_says != "tie" and first_says == second_says
            ties = (first_says == "tie") + (second_says == "tie")
            for member, value in ((i, value_i), (j, 1.0 - value_i)):
                tally = tallies[member]
                tally.values.append(value)
                tally.flips += flip
                tally.ties += ties
                tally.verdicts += 2
        cache = self.settings.cache_path is not None
        results = []
        for tally, pairs_of in zip(tallies, pair_counts):
            diagnostics = tally.diagnostics(cache, pairs_of)
            if tally.failures:
                more = f" (and {len(tally.failures) - 1} more)" if len(tally.failures) > 1 else ""
                results.append(RewardProviderResult.fail(tally.failures[0] + more, diagnostics))
                continue
            wins = sum(tally.values)
            reason = f"won {wins:g} of {len(tally.values)} pairwise comparisons, each asked in both orders"
            if tally.flips or tally.ties:
                reason += f"; {tally.flips} position flip(s), {tally.ties} tie verdict(s)"
            results.append(
                RewardProviderResult(
                    terms={"score": wins / len(tally.values)}, diagnostics=diagnostics, reason=reason
                )
            )
        return results

    # -- listwise ------------------------------------------------------------------------------------

    async def _listwise(self, request: RewardGroupRequest, deadline: float) -> list[RewardProviderResult]:
        candidates = request.candidates
        count = len(candidates)
        prompt = prompts.prompt_text(request.context.prompt)
        labels = [prompts.label(position) for position in range(count)]
        orders = (list(range(count)), list(reversed(range(count))))
        parse = partial(parse_ranking, labels=labels)
        asks = []
        for order in orders:
            answers = "\n\n".join(
                f"Answer {labels[position]}:\n{candidates[index].completion}"
                for position, index in enumerate(order)
            )
            asks.append(self._ask(self._messages({"prompt": prompt, "answers": answers}), parse, deadline))
        outcomes = await asyncio.gather(*asks)
        cache = self.settings.cache_path is not None
        calls = [_call(outcome) for outcome in outcomes]
        failed = [outcome for outcome in outcomes if isinstance(outcome, JudgeFailure)]
        if failed:
            tally = _Tally(calls=calls)
            reason = f"the ranking of the group failed: {failed[0].reason}"
            return [RewardProviderResult.fail(reason, tally.diagnostics(cache, 0)) for _ in candidates]
        ranks: list[list[int]] = []
        for order, outcome in zip(orders, outcomes):
            assert isinstance(outcome, Exchange)
            place = {name: rank for rank, name in enumerate(outcome.verdict.value)}
            rank_of = [0] * count
            for position, index in enumerate(order):
                rank_of[index] = place[labels[position]]
            ranks.append(rank_of)
        forward, backward = ranks
        results = []
        for index in range(count):
            others = [other for other in range(count) if other != index]
            flips = sum(
                (forward[index] < forward[other]) != (backward[index] < backward[other]) for other in others
            )
            mean_rank = (forward[index] + backward[index]) / 2
            tally = _Tally(flips=flips, verdicts=2, calls=calls)
            diagnostics = tuple(d for d in tally.diagnostics(cache, len(others)) if d.name != "ties")
            reason = (
                f"ranked {forward[index] + 1} of {count} as given and {backward[index] + 1} of {count} "
                "in reversed order"
            )
            results.append(
                RewardProviderResult(
                    terms={"score": 1.0 - mean_rank / (count - 1)}, diagnostics=diagnostics, reason=reason
                )
            )
        return results


def make_compare_judge(**params: Any) -> CompareJudge:
    """The ``nih-compare`` factory: checks params and the key variable; opens and starts nothing."""
    return CompareJudge(checked(CompareParams, params))


__all__ = ["COMPARE_DIAGNOSTICS", "CompareJudge", "make_compare_judge", "pair_schedule"]
