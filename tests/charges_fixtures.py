"""A catalog for the charge tests (``charges_fixtures:catalog``).

``timing-judge`` is group-native and charges a candidate whose completion starts with ``slow`` on
non-deterministic evidence (as a judge that timed out on it would), and one that starts with
``bomb`` on deterministic evidence (as a guard that refused its text would); others score their
length. ``counted`` needs each candidate's ``completion_token_count``; ``counted-or-skip`` needs it
but skips a candidate without one.
"""

from __future__ import annotations

from functools import partial

from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import (
    RewardCandidate,
    RewardCandidateResult,
    RewardContext,
    RewardGroupRequest,
    RewardGroupResult,
)


class TimingJudge:
    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        items = []
        for candidate in request.candidates:
            text = candidate.completion
            if text.startswith("slow"):
                result = RewardProviderResult.charged(
                    "the judge timed out on it", "timed_out", {"score": 0.0}, deterministic=False
                )
            elif text.startswith("bomb"):
                result = RewardProviderResult.charged(
                    "refused: it would cost too much", "refused", {"score": 0.0}
                )
            else:
                result = RewardProviderResult({"score": min(len(text), 10) / 10})
            items.append(RewardCandidateResult(candidate.trajectory_id, result))
        return RewardGroupResult(request.group_id, tuple(items))


def count_tokens(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    count = candidate.completion_token_count
    if count is None:
        return RewardProviderResult.skip("no token count")
    return RewardProviderResult({"tokens": float(count)})


def catalog() -> list[RewardProviderSpec]:
    counted = partial(map_candidates, count_tokens)
    return [
        RewardProviderSpec("timing-judge", TimingJudge, (), "1", ("score",), ("timed_out", "refused")),
        RewardProviderSpec("counted", counted, ("completion_token_count",), "1", ("tokens",)),
        RewardProviderSpec(
            "counted-or-skip",
            counted,
            ("completion_token_count",),
            "1",
            ("tokens",),
            skip_when_absent=("completion_token_count",),
        ),
    ]
