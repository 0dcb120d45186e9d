"""A run-bound catalog for the verl streaming test (``rl.reward.catalog: verl_stream_catalog:catalog``).

``gated`` scores 1 for a nonempty response, but a response holding the word ``six`` waits until the
test opens ``GATE`` (``WAITING`` says it has started), so the test sees what verl's reward loop hands
back while one response is still being scored, without timing anything."""

from __future__ import annotations

import threading
from functools import partial

from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext

GATE = threading.Event()
WAITING = threading.Event()
LONGEST_HOLD_S = 60.0  # a test that forgets the gate fails instead of hanging


def gated(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    if "six" in candidate.completion.split():
        WAITING.set()
        if not GATE.wait(LONGEST_HOLD_S):
            raise TimeoutError("the gate was never opened")
    return RewardProviderResult({"nonempty": float(bool(candidate.completion.strip()))})


def catalog() -> list[RewardProviderSpec]:
    return [RewardProviderSpec("gated", partial(map_candidates, gated), (), "1", ("nonempty",))]
