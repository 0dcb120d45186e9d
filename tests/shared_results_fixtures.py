"""A catalog for the shared-results tests (``shared_results_fixtures:catalog``).

``counting-judge`` is a group-native judge that declares ``cacheable``: it counts how often it is
asked about each answer (across threads), scores an answer by its length, charges an answer that
starts with ``bomb`` (a verdict on what the text caused) and fails the group on one that starts
with ``crash``. ``sampled-judge`` is the same judge
without the declaration, and ``chance-judge`` declares it with a callable that says no (a judge
sampled above temperature 0), so neither is ever shared.
"""

from __future__ import annotations

import threading
from collections import Counter

from rewardkit import RewardProviderResult, RewardProviderSpec
from rewardkit.contracts import RewardCandidateResult, RewardGroupRequest, RewardGroupResult

ASKED: Counter[str] = Counter()  # answer -> times a judge of this catalog was asked about it
_LOCK = threading.Lock()


class CountingJudge:
    """Scores each candidate by its length (at most 10 characters count), and counts the asking."""

    temperature = 0.0

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        items = []
        for candidate in request.candidates:
            text = candidate.completion
            with _LOCK:
                ASKED[text] += 1
            if text.startswith("crash"):
                raise RuntimeError("the judge fell over")
            if text.startswith("bomb"):
                result = RewardProviderResult.charged(
                    "it asked for the top score", "asked_for_it", {"score": 0.0}
                )
            else:
                result = RewardProviderResult(
                    {"score": min(len(text), 10) / 10}, reason=f"judged {text!r}", notes={"heard": text}
                )
            items.append(RewardCandidateResult(candidate.trajectory_id, result))
        return RewardGroupResult(request.group_id, tuple(items))


class SampledJudge(CountingJudge):
    temperature = 0.7


def _at_temperature_zero(judge: CountingJudge) -> bool:
    return judge.temperature == 0


def catalog() -> list[RewardProviderSpec]:
    def judge(name: str, factory: type[CountingJudge], cacheable: object) -> RewardProviderSpec:
        return RewardProviderSpec(
            name,
            factory,
            ("prompt",),
            "1",
            ("score",),
            ("asked_for_it",),
            notes=("heard",),
            cacheable=cacheable,  # type: ignore[arg-type]
        )

    return [
        judge("counting-judge", CountingJudge, True),
        judge("sampled-judge", CountingJudge, False),
        judge("chance-judge", SampledJudge, _at_temperature_zero),
    ]
