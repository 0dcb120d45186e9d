"""The catalog the Ray tests persist by dotted path (``ray_catalog:catalog``).

Actors import it themselves, as they would a customer's catalog module. ``scripted-*`` providers
read each candidate's outcome from its completion (JSON ``{"<provider>": {"status", "value",
"reason"}}``) so one spec exercises every composition rule on real actors; ``revisioned`` takes
its revision from ``REWARDKIT_RAYTEST_REVISION``, so a test can give one actor different code.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from functools import partial

from rewardkit import RewardCandidate, RewardContext, RewardProviderResult, RewardProviderSpec
from rewardkit.contracts import MetricContribution
from rewardkit.scoring.pointwise import map_candidates

REVISION_ENV = "REWARDKIT_RAYTEST_REVISION"
SCRIPTED = ("scripted-a", "scripted-b", "scripted-c")


def score_scripted(
    candidate: RewardCandidate, context: RewardContext, *, provider: str, sleep_s: float = 0.0
) -> RewardProviderResult:
    """The outcome the candidate's completion scripts for ``provider`` (after ``sleep_s``)."""
    if sleep_s:
        time.sleep(sleep_s)
    outcome = json.loads(candidate.completion)[provider]
    seen = MetricContribution("scripted", 1.0)
    if outcome["status"] == "skipped":
        return RewardProviderResult.skip(outcome.get("reason") or "scripted skip", (seen,))
    if outcome["status"] == "error":
        return RewardProviderResult.fail(outcome.get("reason") or "scripted error", (seen,))
    return RewardProviderResult(terms={"task": float(outcome["value"])}, diagnostics=(seen,))


def score_length(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    return RewardProviderResult(terms={"task": float(len(candidate.completion) % 7)})


def catalog() -> Iterator[RewardProviderSpec]:
    for name in SCRIPTED:
        yield RewardProviderSpec(
            name=name,
            factory=partial(map_candidates, partial(score_scripted, provider=name)),
            needs=(),
            revision="1",
            terms=("task",),
            diagnostics=("scripted",),
            description="the outcome scripted in the completion (param: sleep_s)",
        )
    yield RewardProviderSpec(
        name="revisioned",
        factory=partial(map_candidates, score_length),
        needs=(),
        revision=os.environ.get(REVISION_ENV, "1"),
        terms=("task",),
        description="completion length mod 7; revision from $REWARDKIT_RAYTEST_REVISION",
    )
