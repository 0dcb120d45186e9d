"""``nih-rubric``: an LLM judge grades each candidate of a group against a rubric, concurrently.

The judge answers ``{"score": s, "rationale": "..."}`` on the scale ``[lo, hi]``; the term
``score`` is ``(s - lo) / (hi - lo)`` in [0, 1] and the rationale becomes the result's reason
(never part of the reward). A rubric's criteria are weighed inside the judge prompt into the one
score: terms and diagnostics have fixed names. A verdict that cannot be read after
``parse_retries`` re-asks, a score off the scale, or a request that fails within the deadline is
an ``error`` outcome with the reason (the spec's ``onError`` decides), never 0.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from rewardkit.contracts import (
    MetricContribution,
    RewardCandidate,
    RewardCandidateResult,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
)
from rewardkit_nih_judge import prompts
from rewardkit_nih_judge.client import Exchange, JudgeFailure, JudgeRunner
from rewardkit_nih_judge.params import JudgeParams, RubricParams, checked
from rewardkit_nih_judge.verdicts import parse_score

CALL_DIAGNOSTICS = ("judge_calls", "parse_retries", "cache_hit", "cache_miss")
RUBRIC_DIAGNOSTICS = ("raw_score", *CALL_DIAGNOSTICS)


def call_diagnostics(calls: Sequence[tuple[int, int, bool]], cache: bool) -> tuple[MetricContribution, ...]:
    """Per candidate: requests sent, re-asks, and (with a cache) the fraction of verdicts it served.

    ``calls`` holds ``(asks, reasks, cached)`` for each verdict the candidate's score used.
    """
    found = [
        MetricContribution("judge_calls", float(sum(asks for asks, _, _ in calls))),
        MetricContribution("parse_retries", float(sum(reasks for _, reasks, _ in calls))),
    ]
    if cache and calls:
        hits = sum(1 for *_, cached in calls if cached)
        count = len(calls)
        found.append(MetricContribution("cache_hit", hits / count, weight=float(count)))
        found.append(MetricContribution("cache_miss", (count - hits) / count, weight=float(count)))
    return tuple(found)


def exchange_call(exchange: Exchange) -> tuple[int, int, bool]:
    return exchange.asks, exchange.reasks, exchange.cached


def failure_call(failure: JudgeFailure) -> tuple[int, int, bool]:
    return failure.asks, failure.reasks, False


def system_and_template(settings: JudgeParams, values: dict[str, str]) -> tuple[str, str]:
    """The filled system message and the user template; the rubric goes to the system message
    when a custom template has no ``{rubric}`` slot, so the judge always reads it."""
    system = prompts.fill(settings.system_message(), values)
    template = settings.user_template
    if "{rubric}" not in template:
        system += "\n\nRubric:\n" + settings.rubric_text
    return system, template


class RubricJudge:
    """Group-native: every candidate of a group is judged at once (up to ``max_concurrency``)."""

    def __init__(self, settings: RubricParams) -> None:
        self.settings = settings
        self.runner = JudgeRunner(settings, "nih-rubric")
        lo, hi = settings.scale
        self._scale = (float(lo), float(hi))
        self._values = {
            "rubric": settings.rubric_text,
            "lo": prompts.number_text(lo),
            "hi": prompts.number_text(hi),
        }
        self._system, self._template = system_and_template(settings, self._values)
        self._parse = partial(parse_score, scale=self._scale)

    def __repr__(self) -> str:
        return f"RubricJudge(model={self.settings.model!r}, base_url={self.settings.base_url!r})"

    def close(self) -> None:
        self.runner.close()

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        deadline = time.monotonic() + self.settings.deadline_s
        results = self.runner.run(lambda: self._judge_group(request, deadline), deadline)
        return RewardGroupResult(
            request.group_id,
            tuple(
                RewardCandidateResult(candidate.trajectory_id, result)
                for candidate, result in zip(request.candidates, results)
            ),
        )

    def messages(self, prompt: str, candidate: RewardCandidate) -> list[dict[str, str]]:
        slots = {**self._values, "prompt": prompt, "completion": candidate.completion}
        user = prompts.fill(self._template, slots)
        return [{"role": "system", "content": self._system}, {"role": "user", "content": user}]

    async def _judge_group(self, request: RewardGroupRequest, deadline: float) -> list[RewardProviderResult]:
        prompt = prompts.prompt_text(request.context.prompt)
        return list(await asyncio.gather(*(self._judge(prompt, c, deadline) for c in request.candidates)))

    async def _judge(self, prompt: str, candidate: RewardCandidate, deadline: float) -> RewardProviderResult:
        cache = self.settings.cache_path is not None
        try:
            exchange = await self.runner.ask(self.messages(prompt, candidate), self._parse, deadline)
        except JudgeFailure as failure:
            return RewardProviderResult.fail(failure.reason, call_diagnostics([failure_call(failure)], cache))
        lo, hi = self._scale
        score = float(exchange.verdict.value)
        calls = call_diagnostics([exchange_call(exchange)], cache)
        diagnostics = (MetricContribution("raw_score", score), *calls)
        return RewardProviderResult(
            terms={"score": (score - lo) / (hi - lo)},
            diagnostics=diagnostics,
            reason=exchange.verdict.rationale,
        )


def make_rubric_judge(**params: Any) -> RubricJudge:
    """The ``nih-rubric`` factory: checks params and the key variable; opens and starts nothing."""
    return RubricJudge(checked(RubricParams, params))
