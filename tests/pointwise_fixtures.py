"""Cheap pointwise providers whose every answer, good or bad, is scripted by the completion
(``pointwise_fixtures:catalog``): what the one-pass and general paths are compared on."""

from __future__ import annotations

from functools import partial
from typing import Any

from rewardkit import (
    MetricContribution,
    RewardProviderResult,
    RewardProviderSpec,
    map_candidates,
)
from rewardkit.contracts import RewardCandidate, RewardContext
from rewardkit.contracts.errors import RewardContractError
from rewardkit.scoring import cancellation

# What a completion may say; the test draws completions from these words.
WORDS = (
    "v=0.5",
    "v=-2.25",
    "v=1e300",
    "i=3",
    "skip",
    "fail",
    "crash",
    "contract",
    "nan",
    "badterm",
    "diag=2.5",
    "diag=-1",
    "idiag=4",
    "baddiag",
    "negweight",
    "badreason",
    "notresult",
    "none",
    "yes",
    "ref",
)

# One result shared by every candidate that says "yes", as a yes/no rule shares its two verdicts.
YES = RewardProviderResult({"task": 1.0})


CALLS = {"count": 0}


def scripted(candidate: RewardCandidate, context: RewardContext) -> Any:
    CALLS["count"] += 1
    text = candidate.completion
    if text == "cancel":  # the request is cancelled while this group is scored
        cancellation.current().cancel("scripted cancel")
        return RewardProviderResult({"task": 1.0})
    key, _, number = text.partition("=")
    if key == "v":
        return RewardProviderResult({"task": float(number)})
    if key == "i":
        return RewardProviderResult({"task": int(number)})
    if key == "diag":
        return RewardProviderResult({"task": 1.0}, (MetricContribution("length", float(number)),))
    if key == "idiag":
        return RewardProviderResult({"task": 1.0}, (MetricContribution("length", int(number), 2),))
    if text == "skip":
        return RewardProviderResult.skip("not applicable")
    if text == "fail":
        return RewardProviderResult.fail("timeout")
    if text == "crash":
        raise RuntimeError("scripted crash")
    if text == "contract":
        raise RewardContractError("scripted contract violation", rule="scripted")
    if text == "nan":
        return RewardProviderResult({"task": float("nan")})
    if text == "badterm":
        return RewardProviderResult({"other": 1.0})
    if text == "baddiag":
        return RewardProviderResult({"task": 1.0}, (MetricContribution("undeclared", 1.0),))
    if text == "negweight":
        return RewardProviderResult({"task": 1.0}, (MetricContribution("length", 1.0, -1.0),))
    if text == "badreason":
        return RewardProviderResult.skip(7)  # type: ignore[arg-type]
    if text == "notresult":
        return 1.5
    if text == "none":  # a scorer that forgot its return
        return None
    if text == "yes":
        return YES
    if text == "ref":
        return RewardProviderResult({"task": float(len(str(context.reference)))})
    return RewardProviderResult({"task": 0.0})


def catalog() -> list[RewardProviderSpec]:
    def spec(name: str, needs: tuple[str, ...]) -> RewardProviderSpec:
        return RewardProviderSpec(
            name, partial(map_candidates, scripted), needs, "1", ("task",), ("length",), cheap=True
        )

    return [spec("scripted", ()), spec("scripted-ref", ("reference",)), spec("scripted-prompt", ("prompt",))]
