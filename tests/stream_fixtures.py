"""A catalog for the stream tests (``rl.reward.catalog: stream_fixtures:catalog``).

It offers the binding and charge fixtures' providers and ``held``: group-native (so scored on the
stream's threads), it scores each candidate by its words, except that a candidate ``hold:NAME``
waits until the test opens ``GATES[NAME]`` (``STARTED[NAME]`` says it is waiting) or its request is
cancelled, which it records in ``CANCELLED`` before raising. ``cheap-sparse`` and ``cheap-verdict``
are the binding fixtures' ``sparse`` and ``verdict`` declared ``cheap``; ``noted`` (cheap too) notes
the thread that scored each candidate in ``SCORED_IN`` and raises ``KeyboardInterrupt`` on ``ctrl-c``.
The shared-results fixtures' judges (``counting-judge``, ``sampled-judge``) count the asking."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from functools import partial

from bindings_fixtures import catalog as bindings_catalog
from bindings_fixtures import sparse, verdict
from charges_fixtures import catalog as charges_catalog
from shared_results_fixtures import catalog as shared_results_catalog

from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import (
    RewardCandidate,
    RewardCandidateResult,
    RewardContext,
    RewardGroupRequest,
    RewardGroupResult,
)
from rewardkit.scoring.cancellation import current

GATES: defaultdict[str, threading.Event] = defaultdict(threading.Event)
STARTED: defaultdict[str, threading.Event] = defaultdict(threading.Event)
CANCELLED: set[str] = set()
SCORED_IN: list[threading.Thread] = []
Scorer = Callable[[RewardCandidate, RewardContext], RewardProviderResult]
LONGEST_HOLD_S = 60.0  # a test that forgets to open a gate fails instead of hanging


def _wait_at_gate(name: str) -> None:
    STARTED[name].set()
    scope = current()
    waited = 0.0
    while not GATES[name].wait(0.01):
        if scope.cancelled:
            CANCELLED.add(name)
            scope.raise_if_cancelled()
        waited += 0.01
        if waited > LONGEST_HOLD_S:
            raise TimeoutError(f"gate {name!r} was never opened")


class Held:
    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        items = []
        for candidate in request.candidates:
            text = candidate.completion
            if text.startswith("hold:"):
                _wait_at_gate(text.removeprefix("hold:"))
            result = RewardProviderResult({"words": float(len(text.split()))})
            items.append(RewardCandidateResult(candidate.trajectory_id, result))
        return RewardGroupResult(request.group_id, tuple(items))


def noted(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    if candidate.completion == "ctrl-c":
        raise KeyboardInterrupt  # as the user's Ctrl-C lands in whichever thread is scoring
    SCORED_IN.append(threading.current_thread())
    return RewardProviderResult({"chars": float(len(candidate.completion))})


def reset() -> None:
    GATES.clear()
    STARTED.clear()
    CANCELLED.clear()
    SCORED_IN.clear()


def catalog() -> list[RewardProviderSpec]:
    def cheap(name: str, score: Scorer, term: str, diagnostics: tuple[str, ...] = ()) -> RewardProviderSpec:
        return RewardProviderSpec(
            name, partial(map_candidates, score), (), "1", (term,), diagnostics, cheap=True
        )

    return [
        *bindings_catalog(),
        *charges_catalog(),
        *shared_results_catalog(),
        RewardProviderSpec("held", Held, (), "1", ("words",)),
        cheap("cheap-sparse", sparse, "size", ("length",)),
        cheap("cheap-verdict", verdict, "words", ("chars",)),
        cheap("noted", noted, "chars"),
    ]
