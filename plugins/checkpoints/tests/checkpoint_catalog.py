"""A catalog whose provider records what it receives (``checkpoint_catalog:catalog``), for the tests
that compare what reaches a provider through the TRL binding and through checkpoint evaluation.

``RECEIVED`` gets one entry per scored group: the prompt and reference exactly as the provider got
them (frozen JSON), and the completion texts. The revision is ``$RECORDER_REVISION`` (default "1")
so a test can bump it between two runs.
"""

from __future__ import annotations

import os
from typing import Any

from rewardkit import (
    RewardCandidateResult,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    RewardProviderSpec,
)

RECEIVED: list[dict[str, Any]] = []


class Recorder:
    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        RECEIVED.append(
            {
                "prompt": request.context.prompt,
                "reference": request.context.reference,
                "completions": tuple(candidate.completion for candidate in request.candidates),
            }
        )
        return RewardGroupResult(
            group_id=request.group_id,
            items=tuple(
                RewardCandidateResult(
                    trajectory_id=candidate.trajectory_id,
                    result=RewardProviderResult(terms={"task": self.scale * (len(candidate.completion) % 3)}),
                )
                for candidate in request.candidates
            ),
        )


def recorder(scale: float = 1.0) -> Recorder:
    return Recorder(scale)


def catalog() -> list[RewardProviderSpec]:
    revision = os.environ.get("RECORDER_REVISION", "1")
    return [
        RewardProviderSpec("recorder", recorder, ("prompt", "reference"), revision, ("task",)),
        RewardProviderSpec("recorder-copy", recorder, ("prompt", "reference"), revision, ("task",)),
    ]


def same_catalog() -> list[RewardProviderSpec]:
    """The same providers under another catalog path."""
    return catalog()


def shout(row: dict[str, Any]) -> dict[str, Any]:
    """An ``items_fn``: upper-cases the user messages, keeping the row's keys."""
    messages = [
        {**message, "content": message["content"].upper()} if message["role"] == "user" else message
        for message in row["prompt"]
    ]
    return {**row, "prompt": messages}


def drops_a_key(row: dict[str, Any]) -> dict[str, Any]:
    """An ``items_fn`` that breaks the contract: it removes a column."""
    return {key: value for key, value in row.items() if key != "topic"}
