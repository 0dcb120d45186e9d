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
verdict stays unreadable or off the scale after the re-asks, or the server refuses it for its
length, each candidate in it is *probed*: compared with a canary answer, in both orders. A
candidate whose probe fails the same way is charged (score 0, the reason, the diagnostic = 1)
when the judge gave a readable verdict elsewhere in the group, in a probe, or to two canary
answers (``attribution``); it forfeits every comparison it is in: each counts as a win for the
other candidate (pairwise), or it is ranked below every uncharged candidate, who are ranked again
among themselves (listwise). A failed comparison no charge explains (the request failed, or no
evidence) makes every candidate in it an ``error`` outcome with the reason; a group of one
candidate is ``skipped``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
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
from rewardkit_nih_judge import attribution, prompts
from rewardkit_nih_judge.attribution import CANARY_ANSWERS, CHARGE_DIAGNOSTICS, Outcome, chargeable
from rewardkit_nih_judge.client import Exchange, JudgeFailure, JudgeRunner
from rewardkit_nih_judge.fence import FenceKey
from rewardkit_nih_judge.params import CompareParams, checked
from rewardkit_nih_judge.rubric import (
    CALL_DIAGNOSTICS,
    WORST,
    Call,
    call_diagnostics,
    exchange_call,
    failure_call,
    prompter,
)
from rewardkit_nih_judge.verdicts import Verdict, parse_ranking, parse_winner

COMPARE_DIAGNOSTICS = ("position_flips", "ties", "comparisons", *CALL_DIAGNOSTICS, *CHARGE_DIAGNOSTICS)


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


def _unattributed(failed: Sequence[Outcome], evidence: str | None) -> str:
    """The reason of a failed comparison no charge explains."""
    first = failed[0]
    assert isinstance(first, JudgeFailure)
    if evidence is not None:
        return (
            f"{first.reason}; no answer in it failed alone (compared with a canary answer), "
            "so none is charged"
        )
    return attribution.unproven(first.reason, failed)


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
            results = self.runner.run(lambda: judge(request, deadline), deadline)
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

    async def _attribute(
        self, prompt: str, suspects: Mapping[int, str], seen: Sequence[Outcome], deadline: float
    ) -> tuple[dict[int, JudgeFailure], str | None]:
        """The suspects to charge, each with its probe's failure, and the evidence that it is theirs
        (``None``: the judge read nothing live, so nobody is charged).

        Each suspect is compared with a canary answer in both orders; one whose probe fails with a
        chargeable failure is charged when the judge read something else live: a verdict in
        ``seen``, another probe, or (asked only when neither) two canary answers compared.
        """
        canary = CANARY_ANSWERS[0]
        indices = list(suspects)
        probes = await asyncio.gather(
            *(
                self._compare(prompt, texts, deadline)
                for index in indices
                for texts in ((suspects[index], canary), (canary, suspects[index]))
            )
        )
        evidence = "the judge read other comparisons of the group"
        proven = attribution.readable(seen)
        failed: dict[int, JudgeFailure] = {}
        for position, index in enumerate(indices):
            probe = probes[2 * position : 2 * position + 2]
            failures = [outcome for outcome in probe if isinstance(outcome, JudgeFailure)]
            if failures and all(chargeable(outcome) for outcome in failures):
                failed[index] = failures[0]
            elif not failures and not proven:
                proven = attribution.readable(probe)
                evidence = "the judge read the comparison of another answer with a canary answer"
        if failed and not proven:
            control = await self._compare(prompt, CANARY_ANSWERS, deadline, use_cache=False)
            proven = attribution.readable([control])
            evidence = "the judge read a comparison of two canary answers to the same task"
        if not proven:
            return {}, None
        return failed, f"{evidence}; this answer compared with a canary answer failed the same way"

    # -- pairwise ------------------------------------------------------------------------------------

    async def _pairwise(self, request: RewardGroupRequest, deadline: float) -> list[RewardProviderResult]:
        candidates = request.candidates
        texts = [candidate.completion for candidate in candidates]
        prompt = prompts.prompt_text(request.context.prompt)
        pairs = pair_schedule(len(candidates), self.settings.max_comparisons)
        outcomes = await asyncio.gather(
            *(
                self._compare(prompt, (texts[first], texts[second]), deadline)
                for i, j in pairs
                for first, second in ((i, j), (j, i))
            )
        )
        suspects = {
            member: texts[member]
            for index, pair in enumerate(pairs)
            if any(chargeable(outcome) for outcome in outcomes[2 * index : 2 * index + 2])
            for member in pair
        }
        charged: dict[int, JudgeFailure] = {}
        evidence: str | None = None
        if suspects:
            charged, evidence = await self._attribute(prompt, suspects, outcomes, deadline)
        tallies = [_Tally() for _ in candidates]
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
                reason = _unattributed(failed, evidence)
                for member, other in ((i, j), (j, i)):
                    tallies[member].failures.append(
                        f"comparison with {candidates[other].trajectory_id!r} failed: {reason}"
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
                tally.judged += 1
        cache = self.settings.cache_path is not None
        results = []
        for index, tally in enumerate(tallies):
            diagnostics = tally.diagnostics(cache, tally.judged)
            if index in charged:
                assert evidence is not None
                results.append(attribution.charge(charged[index], diagnostics, WORST, evidence))
                continue
            if tally.failures:
                more = f" (and {len(tally.failures) - 1} more)" if len(tally.failures) > 1 else ""
                results.append(RewardProviderResult.fail(tally.failures[0] + more, diagnostics))
                continue
            wins = sum(tally.values)
            reason = f"won {wins:g} of {len(tally.values)} pairwise comparisons, each asked in both orders"
            if tally.forfeits:
                reason += f"; {tally.forfeits} by forfeit (the other answer was charged)"
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

    async def _listwise(self, request: RewardGroupRequest, deadline: float) -> list[RewardProviderResult]:
        candidates = request.candidates
        count = len(candidates)
        texts = [candidate.completion for candidate in candidates]
        prompt = prompts.prompt_text(request.context.prompt)
        cache = self.settings.cache_path is not None
        outcomes, ranks = await self._rank(prompt, texts, deadline)
        calls = [_call(outcome) for outcome in outcomes]
        failed = [outcome for outcome in outcomes if isinstance(outcome, JudgeFailure)]
        charged: dict[int, JudgeFailure] = {}
        evidence: str | None = None
        if failed and all(chargeable(outcome) for outcome in failed):
            charged, evidence = await self._attribute(prompt, dict(enumerate(texts)), outcomes, deadline)
        if failed and not charged:
            reason = f"the ranking of the group failed: {_unattributed(failed, evidence)}"
            return [
                RewardProviderResult.fail(reason, _Tally(calls=calls).diagnostics(cache, 0)) for _ in texts
            ]
        rest = [index for index in range(count) if index not in charged]
        note = ""
        again_failed: JudgeFailure | None = None
        if charged:
            note = f"; {len(charged)} charged answer(s) ranked last"
            ranks = [[0, 0]] * len(rest)
            if len(rest) > 1:
                again, ranks = await self._rank(prompt, [texts[index] for index in rest], deadline)
                calls += [_call(outcome) for outcome in again]
                again_failed = next((outcome for outcome in again if isinstance(outcome, JudgeFailure)), None)
        results: list[RewardProviderResult] = []
        for index in range(count):
            diagnostics = _Tally(calls=calls).diagnostics(cache, 0)
            if index in charged:
                assert evidence is not None
                results.append(attribution.charge(charged[index], diagnostics, WORST, evidence))
                continue
            if again_failed is not None or ranks is None:
                why = again_failed.reason if again_failed is not None else "no ranking"
                reason = f"the ranking of the group without its charged answers failed: {why}"
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


def make_compare_judge(**params: Any) -> CompareJudge:
    """The ``nih-compare`` factory: checks params and the key variable; opens and starts nothing."""
    return CompareJudge(checked(CompareParams, params))


__all__ = ["COMPARE_DIAGNOSTICS", "CompareJudge", "make_compare_judge", "pair_schedule"]
