"""The conformance kit applied to the built-in providers, as a customer would use it."""

from __future__ import annotations

from typing import Any

import pytest

from rewardkit import RewardContractError
from rewardkit.binding import BoundProvider
from rewardkit.testing import RewardProviderTests


class TestConstant(RewardProviderTests):
    provider_name = "constant"
    params = {"value": 0.5}


class TestNonempty(RewardProviderTests):
    provider_name = "nonempty"


class TestExactMatch(RewardProviderTests):
    provider_name = "exact-match"
    params = {"case_sensitive": True}


class TestGsm8k(RewardProviderTests):
    provider_name = "gsm8k"

    def sample_rollouts(self) -> list[dict[str, Any]]:
        return [
            {"trajectory_id": f"t{k}", "completion": f"so the answer is {k}", "reference": "#### 2"}
            for k in range(4)
        ]


class TestKitCatchesABrokenProvider(RewardProviderTests):
    """The kit must fail for a provider that breaks the contract (here: answers out of order)."""

    provider_name = "nonempty"

    def test_scores_a_group_in_order(self, bound: BoundProvider) -> None:
        class Reversing:
            def __init__(self, inner: Any) -> None:
                self.inner = inner

            def evaluate(self, request: Any) -> Any:
                result = self.inner.evaluate(request)
                return type(result)(result.group_id, tuple(reversed(result.items)))

        broken = BoundProvider(bound.spec, Reversing(bound.provider), bound.params, bound.identity)
        with pytest.raises(RewardContractError, match="result-order"):
            super().test_scores_a_group_in_order(broken)
