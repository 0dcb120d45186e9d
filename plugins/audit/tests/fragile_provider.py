"""Providers for the audit's own edge cases, given by catalog path (``fragile_provider:catalog``)."""

from __future__ import annotations

from typing import Any

import rewardkit
from rewardkit import RewardProviderSpec


@rewardkit.provider(name="fragile", revision="1")
def fragile(completion: str, reference: Any) -> float:
    """A sound final-answer check that raises on an answer holding a comma (a list answer)."""
    lines = completion.strip().splitlines()
    answer = lines[-1].removeprefix("Answer:").strip() if lines else ""
    if ", " in answer:
        raise ValueError("cannot read a list answer")
    return float(answer == str(reference).strip())


@rewardkit.provider(name="blind", revision="1")
def blind(completion: str) -> float:
    """Reads neither prompt nor reference: no shipped family applies to it."""
    return float(bool(completion.strip()))


def catalog() -> list[RewardProviderSpec]:
    return [fragile, blind]
