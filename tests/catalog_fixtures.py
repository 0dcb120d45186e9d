"""Catalog factories importable by dotted path (``catalog_fixtures:...``) in the catalog tests."""

from __future__ import annotations

from functools import partial

from rewardkit import CredentialRef, RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext


def score_length(
    candidate: RewardCandidate, context: RewardContext, *, scale: float = 1.0
) -> RewardProviderResult:
    return RewardProviderResult({"length": scale * len(candidate.completion)})


def team_catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec(
            "team-length",
            partial(map_candidates, score_length),
            (),
            "3",
            ("length",),
            semantic_identity={"judge": "none", "credential": CredentialRef("TEAM_JUDGE_KEY").identity()},
        )
    ]


def overriding_catalog() -> list[RewardProviderSpec]:
    lifted = partial(map_candidates, score_length)
    return [
        RewardProviderSpec("gsm8k-team", lifted, (), "1", ("length",)),
        RewardProviderSpec("nonempty", lifted, (), "1", ("length",)),
    ]


def exploding_catalog() -> list[RewardProviderSpec]:
    raise RuntimeError("catalog needs a database")


def not_specs_catalog() -> list[object]:
    return [{"name": "x"}]


def broken_factory_catalog() -> list[RewardProviderSpec]:
    def factory() -> object:
        return object()

    def exploding() -> object:
        raise OSError("tried to load a model in the factory")

    return [
        RewardProviderSpec("no-evaluate", factory, (), "1", ("task",)),
        RewardProviderSpec("explodes", exploding, (), "1", ("task",)),
    ]
