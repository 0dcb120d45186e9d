"""A run-bound catalog for the OpenRLHF streaming test (``openrlhf_stream_catalog:catalog``).

``gated`` scores 1 for a nonempty response; a response holding the word ``six`` first writes
``waiting`` into the folder ``$REWARDKIT_TEST_GATE`` names and waits until the test writes ``open``
there. A folder, not an event: the Reward Service scores in a process of its own."""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path

from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext

GATE_ENV = "REWARDKIT_TEST_GATE"
LONGEST_HOLD_S = 60.0  # a test that forgets the gate fails instead of hanging


def gated(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    if "six" in candidate.completion.split():
        gate = Path(os.environ[GATE_ENV])
        (gate / "waiting").touch()
        waited = 0.0
        while not (gate / "open").exists():
            if waited > LONGEST_HOLD_S:
                raise TimeoutError("the gate was never opened")
            time.sleep(0.01)
            waited += 0.01
    return RewardProviderResult({"nonempty": float(bool(candidate.completion.strip()))})


def catalog() -> list[RewardProviderSpec]:
    return [RewardProviderSpec("gated", partial(map_candidates, gated), (), "1", ("nonempty",))]
