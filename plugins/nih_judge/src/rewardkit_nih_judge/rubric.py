"""``nih-rubric``: an LLM judge grades each candidate of a group against a rubric, concurrently.

The judge answers ``{"score": s, "rationale": "..."}`` on the scale ``[lo, hi]``; the term
``score`` is ``(s - lo) / (hi - lo)`` in [0, 1] and the rationale becomes the result's reason
(never part of the reward). A rubric's criteria are weighed inside the judge prompt into the one
score: terms and diagnostics have fixed names. The task and the answer reach the judge inside
fences the candidate cannot close (``prompts``).

A verdict that stays unreadable or off the scale after ``parse_retries`` re-asks, that the judge
refused for the content, or whose request failed (a 5xx, a timeout, a dropped connection) is
decided by reproduction (``attribution``): a canary (the same task with another answer of the
group, drawn per request) is asked live, then the candidate once more alone; it fails again:
charged (score 0, the reason, diagnostic ``verdict_unreadable``, ``off_scale``,
``verdict_refused`` or ``request_failed`` = 1, the evidence in the ``reproduction`` note); it
reads: that verdict is its score. Failed requests share one canary per group (a judge that is down
is asked one more question, not one per candidate). A request refused for its length is charged
(``too_long_for_judge``) once the canary shows the task fits. A canary that fails, like a request
stopped by the deadline or a rate limit that outlasts it, makes an ``error`` outcome with the
reason (the spec's ``onError`` decides), never 0.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
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
from rewardkit_nih_judge.attribution import CHARGE_DIAGNOSTICS, ENDPOINT, WORST, Outcome
from rewardkit_nih_judge.client import FORMAT_CODES, Exchange, Format, JudgeFailure, JudgeRunner
from rewardkit_nih_judge.fence import FenceKey
from rewardkit_nih_judge.params import JudgeParams, RubricParams, checked
from rewardkit_nih_judge.verdicts import Verdict, parse_score

CALL_DIAGNOSTICS = (
    "judge_calls",
    "parse_retries",
    "cache_hit",
    "cache_miss",
    "structured_output",
    "rate_wait_s",
)
RUBRIC_DIAGNOSTICS = ("raw_score", *CALL_DIAGNOSTICS, *CHARGE_DIAGNOSTICS)
__all__ = ["RUBRIC_DIAGNOSTICS", "WORST", "RubricJudge", "make_rubric_judge"]


Call = tuple[int, int, bool, Format | None, float]


@dataclass(frozen=True)
class GroupCanary:
    """The canary a group asked after a request failed (or stopped undecided): its name, and why it
    failed (None: it passed)."""

    name: str
    why: str | None


def _asks_group_canary(outcome: Outcome) -> bool:
    """A failure of the request rather than of its verdict: ``request_failed`` (to be decided by
    reproduction) or ``infra`` (the deadline, a rate limit: never charged). Asking whether the
    judge is up is the same question for each of them, so the group asks it once."""
    return isinstance(outcome, JudgeFailure) and outcome.kind in ("request_failed", "infra")


def call_diagnostics(calls: Sequence[Call], cache: bool) -> tuple[MetricContribution, ...]:
    """Per candidate: requests sent, re-asks, (with a cache) the fraction of verdicts it served, and
    ``structured_output``: the weakest format its live requests asked with (2 JSON schema, 1 JSON
    object, 0 neither: the verdict envelope), absent when no request got a reply; ``rate_wait_s``:
    the seconds its requests waited for the endpoint's budgets or a 429 (``budgets``).

    ``calls`` holds ``(asks, reasks, cached, format, rate_wait_s)`` for each verdict the candidate's
    score used.
    """
    found = [
        MetricContribution("judge_calls", float(sum(call[0] for call in calls))),
        MetricContribution("parse_retries", float(sum(call[1] for call in calls))),
        MetricContribution("rate_wait_s", float(sum(call[4] for call in calls))),
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
    return exchange.asks, exchange.reasks, exchange.cached, exchange.format, exchange.rate_wait_s


def failure_call(failure: JudgeFailure) -> Call:
    return failure.asks, failure.reasks, False, failure.format, failure.rate_wait_s


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
        budget = rerun_budget()  # the batch's, read in this thread: the loop's thread has no context
        results = self.runner.run(lambda: self._judge_group(request, deadline, budget), deadline)
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

    async def _judge_group(
        self, request: RewardGroupRequest, deadline: float, budget: RerunBudget
    ) -> list[RewardProviderResult]:
        prompt = prompts.prompt_text(request.context.prompt)
        texts = [candidate.completion for candidate in request.candidates]
        ids = [candidate.trajectory_id for candidate in request.candidates]
        outcomes = list(await asyncio.gather(*(self._ask(prompt, text, deadline) for text in texts)))
        clean = [index for index, outcome in enumerate(outcomes) if isinstance(outcome, Exchange)]
        broken = [index for index, outcome in enumerate(outcomes) if _asks_group_canary(outcome)]
        # One canary for the group's failed requests: is the judge down, or did only these
        # requests fail? (the same question for each of them, so asked once)
        canary: GroupCanary | None = None
        if broken:
            (stand_in,) = attribution.stand_ins(texts, ids, broken[0], clean, 1, prompt)
            name = f"{stand_in.name} to the same task"
            why = attribution.why_failed([await self._ask(prompt, stand_in.text, deadline, use_cache=False)])
            canary = GroupCanary(name, why)
        return list(
            await asyncio.gather(
                *(
                    self._settle(index, prompt, texts, ids, outcomes, clean, deadline, budget, canary)
                    for index in range(len(texts))
                )
            )
        )

    async def _settle(
        self,
        index: int,
        prompt: str,
        texts: list[str],
        ids: list[str],
        outcomes: list[Outcome],
        clean: Collection[int],
        deadline: float,
        budget: RerunBudget,
        group_canary: GroupCanary | None = None,
    ) -> RewardProviderResult:
        """Candidate ``index``'s result: its verdict, or its failure decided by reproduction."""
        outcome = outcomes[index]
        if isinstance(outcome, Exchange):
            return self._scored(outcome, [exchange_call(outcome)])
        cache = self.settings.cache_path is not None
        calls = [failure_call(outcome)]
        if _asks_group_canary(outcome):
            assert group_canary is not None  # asked by _judge_group for every such failure
            if not attribution.chargeable(outcome):
                return await self._undecided(
                    index, prompt, texts, outcome, calls, deadline, budget, group_canary
                )
            name = group_canary.name
            group_why = group_canary.why

            async def ask_canary() -> str | None:
                return group_why  # asked live for the group just now, before any rerun

        else:
            (canary,) = attribution.stand_ins(texts, ids, index, clean, 1, prompt)
            name = f"{canary.name} to the same task"

            async def ask_canary() -> str | None:
                return attribution.why_failed(
                    [await self._ask(prompt, canary.text, deadline, use_cache=False)]
                )

        async def ask_again() -> Exchange | Fault:
            second = await self._ask(prompt, texts[index], deadline, use_cache=False)
            calls.append(exchange_call(second) if isinstance(second, Exchange) else failure_call(second))
            failed_again = attribution.again([second])
            if failed_again is not None:
                return failed_again
            assert isinstance(second, Exchange)
            return second

        fault = attribution.fault_of(outcome)
        try:
            if outcome.kind == "too_long":
                decided: Exchange | Charged = await attribution.canary_decides(fault, name, ask_canary)
            else:
                decided = await areproduce(
                    fault, canary_name=name, canary=ask_canary, rerun=ask_again, budget=budget
                )
        except CanaryFailed as failed:
            return RewardProviderResult.fail(attribution.at_endpoint(failed), call_diagnostics(calls, cache))
        except JudgeFailure as failure:
            reason = f"{outcome.reason}; asked again alone, the judge failed: {failure.reason}"
            return RewardProviderResult.fail(reason, call_diagnostics(calls, cache))
        if isinstance(decided, Charged):
            return attribution.charge(decided, call_diagnostics(calls, cache))
        return self._scored(decided, calls)  # the fault did not reproduce: the second verdict counts

    async def _undecided(
        self,
        index: int,
        prompt: str,
        texts: list[str],
        failure: JudgeFailure,
        calls: list[Call],
        deadline: float,
        budget: RerunBudget,
        canary: GroupCanary,
    ) -> RewardProviderResult:
        """A request that stopped without saying anything about itself (the deadline, a rate limit
        that outlasts it, the cache): never charged. The canary failed too: the judge is down, an
        error naming the canary and the URL (``CanaryFailed``'s text). It passed: the candidate is
        asked once more alone (within the batch's reruns) and that verdict counts; failing again
        it is still an error, not a charge."""
        cache = self.settings.cache_path is not None
        if canary.why is not None:
            fault = Fault("judge_failed", failure.reason)
            failed = CanaryFailed(fault, canary.name, canary.why, where=ENDPOINT)
            return RewardProviderResult.fail(str(failed), call_diagnostics(calls, cache))
        if not budget.take():
            reason = (
                f"{failure.reason}; the canary ({canary.name}) passed, and this batch's reruns were spent"
            )
            return RewardProviderResult.fail(reason, call_diagnostics(calls, cache))
        second = await self._ask(prompt, texts[index], deadline, use_cache=False)
        if isinstance(second, Exchange):
            return self._scored(second, [*calls, exchange_call(second)])
        calls.append(failure_call(second))
        reason = (
            f"{failure.reason}; the canary ({canary.name}) passed, and asked again alone the judge failed: "
            f"{second.reason}"
        )
        return RewardProviderResult.fail(reason, call_diagnostics(calls, cache))

    def _scored(self, exchange: Exchange, calls: list[Call]) -> RewardProviderResult:
        verdict: Verdict = exchange.verdict
        lo, hi = self._scale
        score = float(verdict.value)
        found = call_diagnostics(calls, self.settings.cache_path is not None)
        diagnostics = (MetricContribution("raw_score", score), *found, *attribution.uncharged())
        return RewardProviderResult(
            terms={"score": (score - lo) / (hi - lo)},
            diagnostics=diagnostics,
            reason=verdict.rationale,
        )


def make_rubric_judge(**params: Any) -> RubricJudge:
    """The ``nih-rubric`` factory: checks params and the key variable; opens and starts nothing."""
    return RubricJudge(checked(RubricParams, params))
