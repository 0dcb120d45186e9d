"""A catalog for the stream tests (``rl.reward.catalog: stream_fixtures:catalog``).

It offers the binding and charge fixtures' providers and ``held``: group-native (so scored on the
stream's threads), it scores each candidate by its words, except that a candidate ``hold:NAME``
waits until the test opens ``GATES[NAME]`` (``STARTED[NAME]`` says it is waiting) or its request is
cancelled, which it records in ``CANCELLED`` before raising."""

from __future__ import annotations

import threading
from collections import defaultdict

from bindings_fixtures import catalog as bindings_catalog
from charges_fixtures import catalog as charges_catalog

from rewardkit import RewardProviderResult, RewardProviderSpec
from rewardkit.cancellation import current
from rewardkit.contracts import RewardCandidateResult, RewardGroupRequest, RewardGroupResult

GATES: defaultdict[str, threading.Event] = defaultdict(threading.Event)
STARTED: defaultdict[str, threading.Event] = defaultdict(threading.Event)
CANCELLED: set[str] = set()
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


def reset() -> None:
    GATES.clear()
    STARTED.clear()
    CANCELLED.clear()


def catalog() -> list[RewardProviderSpec]:
    held = RewardProviderSpec("held", Held, (), "1", ("words",))
    return [*bindings_catalog(), *charges_catalog(), held]
