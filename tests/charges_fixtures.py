"""A catalog for the charge tests (``charges_fixtures:catalog``).

``timing-judge`` is group-native and decides its timeouts by reproduction (``TimingJudge``), and
charges one that starts with ``bomb`` on deterministic evidence (as a guard that refused its text
would); others score their length. ``counted`` needs each candidate's
``completion_token_count``; ``counted-or-skip`` needs it but skips a candidate without one.
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
from rewardkit.scoring.reproduction import CanaryFailed, Charged, Fault, reproduce


class TimingJudge:
    """A judge whose faults are decided by reproduction (``rewardkit.scoring.reproduction``), as real ones.

    ``slow...`` times out every time it is asked: the fault reproduces beside a passing canary, so
    it is charged. ``flaky...`` times out only the first time: the rerun's score counts. ``sick...``
    times out and the canary fails too (the judge is broken): an infrastructure error. ``bomb...``
    is refused by a guard: deterministic, charged at once. Others score their length."""

    def __init__(self) -> None:
        self.asked: dict[str, int] = {}
        self.canaries = 0

    def _ask(self, candidate: RewardCandidate) -> RewardProviderResult | Fault:
        text = candidate.completion
        self.asked[text] = self.asked.get(text, 0) + 1
        if text.startswith(("slow", "sick")) or (text.startswith("flaky") and self.asked[text] == 1):
            return Fault("timed_out", "the judge timed out on it")
        return RewardProviderResult({"score": min(len(text), 10) / 10})

    def _canary(self, text: str) -> str | None:
        self.canaries += 1
        return "the canary timed out as well" if text.startswith("sick") else None

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        items = []
        for candidate in request.candidates:
            if candidate.completion.startswith("bomb"):
                result = RewardProviderResult.charged(
                    "refused: it would cost too much", "refused", {"score": 0.0}
                )
                items.append(RewardCandidateResult(candidate.trajectory_id, result))
                continue
            said = self._ask(candidate)
            if isinstance(said, Fault):
                try:
                    said = reproduce(
                        said,
                        canary_name="another answer of the group",
                        canary=partial(self._canary, candidate.completion),
                        rerun=partial(self._ask, candidate),
                    )
                except CanaryFailed as error:
                    said = RewardProviderResult.fail(f"timing-judge: {error}")
                if isinstance(said, Charged):
                    said = said.result({"score": 0.0})
            items.append(RewardCandidateResult(candidate.trajectory_id, said))
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
