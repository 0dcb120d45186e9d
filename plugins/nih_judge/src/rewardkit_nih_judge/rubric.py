"""``nih-rubric``: an LLM judge grades each candidate of a group against a rubric, concurrently.

The judge answers ``{"score": s, "rationale": "..."}`` on the scale ``[lo, hi]``; the term
``score`` is ``(s - lo) / (hi - lo)`` in [0, 1] and the rationale becomes the result's reason
(never part of the reward). A rubric's criteria are weighed inside the judge prompt into the one
score: terms and diagnostics have fixed names. The task and the answer reach the judge inside
fences the candidate cannot close (``prompts``).

A verdict that stays unreadable or off the scale after ``parse_retries`` re-asks, or a request the
server refuses for its length, is charged to the candidate (score 0, the reason, diagnostic
``verdict_unreadable``, ``off_scale`` or ``too_long_for_judge`` = 1) when the judge read another
answer of the group, or a canary answer (``attribution``); otherwise, like a request that failed
within the deadline, it is an ``error`` outcome with the reason (the spec's ``onError`` decides),
never 0.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
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
from rewardkit_nih_judge.attribution import CHARGE_DIAGNOSTICS, Outcome
from rewardkit_nih_judge.client import FORMAT_CODES, Exchange, Format, JudgeFailure, JudgeRunner
from rewardkit_nih_judge.fence import FenceKey
from rewardkit_nih_judge.params import JudgeParams, RubricParams, checked
from rewardkit_nih_judge.verdicts import Verdict, parse_score

CALL_DIAGNOSTICS = ("judge_calls", "parse_retries", "cache_hit", "cache_miss", "structured_output")
RUBRIC_DIAGNOSTICS = ("raw_score", *CALL_DIAGNOSTICS, *CHARGE_DIAGNOSTICS)
WORST = {"score": 0.0}


Call = tuple[int, int, bool, Format | None]


def call_diagnostics(calls: Sequence[Call], cache: bool) -> tuple[MetricContribution, ...]:
    """Per candidate: requests sent, re-asks, (with a cache) the fraction of verdicts it served, and
    ``structured_output``: the weakest format its live requests asked with (2 JSON schema, 1 JSON
    object, 0 neither: the verdict envelope), absent when no request got a reply.

    ``calls`` holds ``(asks, reasks, cached, format)`` for each verdict the candidate's score used.
    """
    found = [
        MetricContribution("judge_calls", float(sum(call[0] for call in calls))),
        MetricContribution("parse_retries", float(sum(call[1] for call in calls))),
    ]
    formats = [FORMAT_CODES[call[3]] for call in calls if call[3] is not None]
    if formats:
        found.append(MetricContribution("structured_output", float(min(formats))))
    if cache and calls:
        hits = sum(1 for call in calls if call[2])
        count = len(calls)
        found.append(MetricContribution("cache_hit", hits / count, weight=float(count)))
        found.append(MetricContribution("cache_miss", (count - hits) / count, weight=float(count)))
    return tuple(found)


def exchange_call(exchange: Exchange) -> Call:
    return exchange.asks, exchange.reasks, exchange.cached, exchange.format


def failure_call(failure: JudgeFailure) -> Call:
    return failure.asks, failure.reasks, False, failure.format


def prompter(settings: JudgeParams, fences: FenceKey, values: dict[str, str]) -> prompts.Prompter:
    return prompts.Prompter(
        settings.system_message(),
        settings.user_template,
        settings.rubric_text,
        values,
        fences.marker,
        labels=settings.kind() != "rubric",
    )


class RubricJudge:
    """Group-native: every candidate of a group is judged at once (up to ``max_concurrency``)."""

    def __init__(self, settings: RubricParams) -> None:
        self.settings = settings
        self.runner = JudgeRunner(settings, "nih-rubric")
        self.fences = FenceKey(settings, "nih-rubric")
        lo, hi = settings.scale
        self._scale = (float(lo), float(hi))
        values = {"lo": prompts.number_text(lo), "hi": prompts.number_text(hi)}
        self.prompter = prompter(settings, self.fences, values)
        self._parse = partial(parse_score, scale=self._scale)

    def __repr__(self) -> str:
        return f"RubricJudge(model={self.settings.model!r}, base_url={self.settings.base_url!r})"

    def close(self) -> None:
        self.runner.close()

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        deadline = time.monotonic() + self.settings.deadline_s
        self.fences.key()  # the secret is read (or made) here, before any question is asked
        results = self.runner.run(lambda: self._judge_group(request, deadline), deadline)
        return RewardGroupResult(
            request.group_id,
            tuple(
                RewardCandidateResult(candidate.trajectory_id, result)
                for candidate, result in zip(request.candidates, results)
            ),
        )

    def messages(self, prompt: str, completion: str) -> list[dict[str, str]]:
        """What the judge is sent for ``completion`` to the task ``prompt`` (as text)."""
        return self.prompter.messages({"prompt": prompt, "completion": completion})

    async def _ask(self, prompt: str, completion: str, deadline: float, use_cache: bool = True) -> Outcome:
        try:
            return await self.runner.ask(
                self.messages(prompt, completion), self._parse, deadline, use_cache=use_cache
            )
        except JudgeFailure as failure:
            return failure

    async def _judge_group(self, request: RewardGroupRequest, deadline: float) -> list[RewardProviderResult]:
        prompt = prompts.prompt_text(request.context.prompt)
        outcomes = list(
            await asyncio.gather(*(self._ask(prompt, c.completion, deadline) for c in request.candidates))
        )
        evidence = "the judge read other answers of the group"
        proven = attribution.readable(outcomes)
        if not proven and any(attribution.chargeable(outcome) for outcome in outcomes):
            canary = await self._ask(prompt, attribution.CANARY_ANSWERS[0], deadline, use_cache=False)
            proven = attribution.readable([canary])
            evidence = "the judge read a canary answer to the same task"
        return [self._result(outcome, evidence if proven else None) for outcome in outcomes]

    def _result(self, outcome: Outcome, evidence: str | None) -> RewardProviderResult:
        cache = self.settings.cache_path is not None
        if isinstance(outcome, JudgeFailure):
            calls = call_diagnostics([failure_call(outcome)], cache)
            if evidence is not None and attribution.chargeable(outcome):
                return attribution.charge(outcome, calls, WORST, evidence)
            return RewardProviderResult.fail(attribution.unproven(outcome.reason, [outcome]), calls)
        verdict: Verdict = outcome.verdict
        lo, hi = self._scale
        score = float(verdict.value)
        calls = call_diagnostics([exchange_call(outcome)], cache)
        diagnostics = (MetricContribution("raw_score", score), *calls, *attribution.uncharged())
        return RewardProviderResult(
            terms={"score": (score - lo) / (hi - lo)},
            diagnostics=diagnostics,
            reason=verdict.rationale,
        )


def make_rubric_judge(**params: Any) -> RubricJudge:
    """The ``nih-rubric`` factory: checks params and the key variable; opens and starts nothing."""
    return RubricJudge(checked(RubricParams, params))
