"""The conformance kit applied to every built-in provider, as a customer would use it."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from rewardkit import BoundProvider, RewardContractError, resolve_catalog
from rewardkit_testing import Case, RewardProviderTests, Sample


class TestConstant(RewardProviderTests):
    provider_name = "constant"
    params = {"value": 0.5}

    def cases(self) -> list[Case]:
        return [Case(samples=[Sample("anything", value=0.5), Sample("", value=0.5)])]


class TestNonempty(RewardProviderTests):
    provider_name = "nonempty"

    def cases(self) -> list[Case]:
        return [Case(samples=[Sample("text", value=1.0), Sample("   \n", value=0.0), Sample("", value=0.0)])]


class TestExactMatch(RewardProviderTests):
    provider_name = "exact-match"
    params = {"case_sensitive": True}

    def cases(self) -> list[Case]:
        samples = [Sample("Paris", value=1.0), Sample(" Paris  ", value=1.0), Sample("paris", value=0.0)]
        return [Case(reference="Paris", samples=[*samples, Sample("London", value=0.0)])]


class TestGsm8k(RewardProviderTests):
    provider_name = "gsm8k"

    def cases(self) -> list[Case]:
        return [
            Case(
                name="gold with a number",
                reference="16 - 3 - 4 = 9 eggs, 9 * 2 = 18 dollars.\n#### 18",
                samples=[
                    Sample("She makes 18 dollars, so the answer is 18.", value=1.0),
                    Sample("#### 18", value=1.0),
                    Sample("The answer is 26.", value=0.0),
                    Sample("I cannot tell.", value=0.0),
                ],
            ),
            Case(
                name="gold without a number",
                reference="#### unknown",
                samples=[Sample("The answer is 18.", status="skipped"), Sample("", status="skipped")],
            ),
        ]


class TestArithmetic(RewardProviderTests):
    provider_name = "arithmetic"

    def cases(self) -> list[Case]:
        return [
            Case(
                reference="3/4",
                samples=[
                    Sample("so the answer is 0.75", value=1.0),
                    Sample("The answer is 3/4.", value=1.0),
                    Sample("#### 0.7", value=0.0),
                    Sample("no number here", value=0.0),
                ],
            ),
            Case(reference="2 +", samples=[Sample("The answer is 2.", status="skipped")]),
        ]


class TestCountdown(RewardProviderTests):
    provider_name = "countdown"

    def cases(self) -> list[Case]:
        return [
            Case(
                reference={"target": 24, "numbers": [4, 6, 1]},
                samples=[
                    Sample("<answer>4*6*1</answer>", value=1.0),
                    Sample("<answer>4+6+1</answer>", value=0.0),
                    Sample("<answer>4*6</answer>", value=0.0),
                    Sample("no answer", value=0.0),
                ],
            )
        ]


def test_every_builtin_provider_has_a_conformance_class():
    tested = {
        cls.provider_name
        for cls in vars(sys.modules[__name__]).values()
        if isinstance(cls, type) and issubclass(cls, RewardProviderTests) and "cases" in vars(cls)
    }
    builtin = {entry.spec.name for entry in resolve_catalog().entries() if entry.owner.builtin}
    assert builtin <= tested, f"built-in providers without kit cases: {sorted(builtin - tested)}"


class TestKitCatchesABrokenProvider(TestNonempty):
    """The kit must fail for a provider that breaks the contract (here: answers out of order)."""

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
