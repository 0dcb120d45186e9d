"""``media_fixtures:catalog``: a provider needing in-process media and a runtime decoder."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext


class ListDecoder:
    """Decodes a list of numbers by scaling it; attests what it is."""

    def __init__(self, factor: float = 1.0, revision: str = "r1") -> None:
        self.factor = factor
        self.name = "list-decoder"
        self.revision = revision
        self.output_range = "neg_one_to_one"
        self.calls = 0

    def decode(self, latent: list[float]) -> list[float]:
        self.calls += 1
        return [value * self.factor for value in latent]


def make_provider(*, decoder: ListDecoder, offset: float = 0.0) -> Any:
    def score(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
        decoded = decoder.decode(candidate.media)
        return RewardProviderResult({"mean": sum(decoded) / len(decoded) + offset})

    return map_candidates(score)


def attested(objects: Mapping[str, Any]) -> dict[str, str]:
    decoder = objects["decoder"]
    if getattr(decoder, "output_range", None) != "neg_one_to_one":
        raise ValueError("the decoder does not attest output_range='neg_one_to_one'")
    return {"name": decoder.name, "revision": decoder.revision, "output_range": decoder.output_range}


def catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec(
            "latent-mean",
            make_provider,
            ("media",),
            "1",
            ("mean",),
            runtime=("decoder",),
            runtime_identity=attested,
        )
    ]
