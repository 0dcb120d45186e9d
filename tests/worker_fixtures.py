"""A catalog of controllable providers for the worker and job tests (``worker_fixtures:catalog``)."""

from __future__ import annotations

import os
import threading
import time
from functools import partial

from rewardkit import MetricContribution, RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext

CALLS = {"count": 0}
_lock = threading.Lock()


def score_keyed(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    """Reads ``value=<x>`` / ``skip`` / ``error`` / ``crash`` from the completion."""
    with _lock:
        CALLS["count"] += 1
    text = candidate.completion
    if text.startswith("skip"):
        return RewardProviderResult.skip("not applicable")
    if text.startswith("error"):
        return RewardProviderResult.fail("timeout")
    if text.startswith("crash"):
        raise RuntimeError("provider crashed")
    value = float(text.split("=", 1)[1]) if "=" in text else 0.0
    return RewardProviderResult(
        {"score": value, "bonus": value / 2}, diagnostics=(MetricContribution("length", float(len(text))),)
    )


# What the "where" providers saw, one entry per candidate: (thread name, collector enabled).
SEEN: list[tuple[str, bool]] = []


def score_where(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    """Records the thread it runs in and whether the cyclic collector was on; scores ``value=<x>``."""
    import gc

    with _lock:
        SEEN.append((threading.current_thread().name, gc.isenabled()))
    text = candidate.completion
    return RewardProviderResult({"score": float(text.split("=", 1)[1]) if "=" in text else 0.0})


SLOW_SCORED = {"count": 0}


def score_slow_or_broken(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    """``broken`` breaks the contract (the batch fails); anything else takes 20 ms and scores 1."""
    if candidate.completion == "broken":
        from rewardkit.contracts.errors import RewardContractError

        raise RewardContractError("scripted contract violation", rule="scripted")
    time.sleep(0.02)
    with _lock:
        SLOW_SCORED["count"] += 1
    return RewardProviderResult({"score": 1.0})


def catalog() -> list[RewardProviderSpec]:
    revision = os.environ.get("WORKER_FIXTURE_REVISION", "1")
    return [
        RewardProviderSpec(
            "keyed", partial(map_candidates, score_keyed), (), revision, ("score", "bonus"), ("length",)
        ),
        RewardProviderSpec("where", partial(map_candidates, score_where), (), "1", ("score",)),
        RewardProviderSpec(
            "slow-or-broken", partial(map_candidates, score_slow_or_broken), (), "1", ("score",)
        ),
        RewardProviderSpec(
            "where-cheap", partial(map_candidates, score_where), (), "1", ("score",), cheap=True
        ),
        RewardProviderSpec(
            "keyed-ref",
            partial(map_candidates, score_keyed),
            ("reference",),
            "1",
            ("score", "bonus"),
            ("length",),
        ),
    ]
