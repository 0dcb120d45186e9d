"""A provider that records every group it scores (``score_fixtures:catalog``), for the resume tests.

Each call appends the group id to the file named by ``REWARDKIT_TEST_CALLS``, so calls made by a
job in another process (one that was killed) can be counted.
"""

from __future__ import annotations

import os

from rewardkit import RewardProviderSpec
from rewardkit.contracts import RewardCandidateResult, RewardGroupResult, RewardProviderResult


class Recording:
    """Scores a candidate by the length of its completion, skipping the empty ones."""

    def evaluate(self, request):
        path = os.environ.get("REWARDKIT_TEST_CALLS")
        if path:
            with open(path, "a", encoding="utf-8") as log:
                log.write(request.group_id + "\n")
        items = []
        for candidate in request.candidates:
            text = candidate.completion
            result = (
                RewardProviderResult.skip("empty")
                if not text
                else RewardProviderResult({"task": float(len(text) % 7) / 3})
            )
            items.append(RewardCandidateResult(candidate.trajectory_id, result))
        return RewardGroupResult(request.group_id, tuple(items))


def catalog() -> list[RewardProviderSpec]:
    return [RewardProviderSpec("recording", Recording, (), "1", ("task",))]
