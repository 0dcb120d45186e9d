"""Conformance kit for reward providers, shipped as a pytest plugin.

A customer tests their provider in three lines::

    from rewardkit.testing import RewardProviderTests

    class TestMyReward(RewardProviderTests):
        provider_name = "my-reward"

Override ``params``, ``catalog``, ``group_size`` or ``sample_rollouts`` for inputs your provider
understands. Every ``test_*`` method checks one part of the contract.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import pytest

from rewardkit.binding import BoundProvider
from rewardkit.catalog import ProviderEntry, resolve_catalog
from rewardkit.contracts import RewardGroupRequest, RewardGroupResult
from rewardkit.errors import RewardContractError


class _CallCounter:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        self.calls += 1
        return self.inner.evaluate(request)


class RewardProviderTests:
    """Contract checks for one provider of the catalog. Subclass and set ``provider_name``."""

    provider_name: ClassVar[str] = ""
    params: ClassVar[dict[str, Any]] = {}
    catalog: ClassVar[str | None] = None
    group_size: ClassVar[int] = 4

    def sample_rollouts(self) -> list[dict[str, Any]]:
        """One valid group. Override to give inputs your provider can score."""
        return [
            {
                "trajectory_id": f"t{index}",
                "completion": f"The answer is {index}.",
                "prompt": "What is 1 + 1?",
                "reference": "2",
                "completion_token_count": 5,
                "finish_reason": "stop",
            }
            for index in range(self.group_size)
        ]

    # -- fixtures ------------------------------------------------------------------------------

    @pytest.fixture
    def entry(self) -> ProviderEntry:
        if not self.provider_name:
            pytest.fail(f"{type(self).__name__} must set provider_name")
        return resolve_catalog(self.catalog).entry(self.provider_name)

    @pytest.fixture
    def bound(self) -> BoundProvider:
        return resolve_catalog(self.catalog).bind(self.provider_name, self.params)

    # -- the contract --------------------------------------------------------------------------

    def test_spec_declares_what_it_returns(self, entry: ProviderEntry) -> None:
        spec = entry.spec
        assert spec.terms, "a provider declares at least one term"
        assert spec.revision.strip(), "a provider declares a revision"
        assert len(entry.identity) == 64 and int(entry.identity, 16) >= 0

    def test_construction_is_deterministic_and_side_effect_free(self) -> None:
        threads_before = threading.active_count()
        first = resolve_catalog(self.catalog).bind(self.provider_name, self.params)
        second = resolve_catalog(self.catalog).bind(self.provider_name, self.params)
        assert first.identity == second.identity
        assert threading.active_count() == threads_before, "a factory must not start threads"

    def test_scores_a_group_in_order(self, bound: BoundProvider) -> None:
        rollouts = self.sample_rollouts()
        result = bound.score_group("conformance", rollouts, len(rollouts))
        assert [item.trajectory_id for item in result.items] == [row["trajectory_id"] for row in rollouts]
        for item in result.items:
            assert item.result.status in ("scored", "skipped", "error")

    def test_scoring_is_repeatable(self, bound: BoundProvider) -> None:
        rollouts = self.sample_rollouts()
        first = bound.score_group("conformance", rollouts)
        second = bound.score_group("conformance", rollouts)
        assert first == second, "the same group must get the same result"

    def test_malformed_group_never_reaches_the_provider(self, bound: BoundProvider) -> None:
        counter = _CallCounter(bound.provider)
        guarded = BoundProvider(bound.spec, counter, bound.params, bound.identity)
        rollouts = self.sample_rollouts()
        rollouts[-1] = {**rollouts[-1], "trajectory_id": rollouts[0]["trajectory_id"]}
        with pytest.raises(RewardContractError):
            guarded.score_group("conformance", rollouts)
        with pytest.raises(RewardContractError):
            guarded.score_group("conformance", self.sample_rollouts()[:-1], self.group_size)
        assert counter.calls == 0
