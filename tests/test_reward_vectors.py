"""Every shared composition vector through the in-process ``compose``: the core is checked with the vectors of
rewardkit-testing (the checker and the vector file's own checks are in plugins/testing/tests)."""

from __future__ import annotations

import pytest

from rewardkit.scoring.composition import RewardSpec, RewardSpecError, compose
from rewardkit_testing.composition_vectors import check_vector, in_process_compose, load_reward_vectors

CASES = load_reward_vectors()


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_vector_in_process(case):
    check_vector(case, in_process_compose)


@pytest.mark.parametrize("case", [c for c in CASES if "expect_spec_error" in c], ids=lambda c: c["name"])
def test_spec_error_vectors_fail_at_spec_validation(case):
    # In process, a spec error must surface when the spec is built, before any outcome is read.
    with pytest.raises(RewardSpecError) as caught:
        RewardSpec.parse(case["spec"])
    assert case["expect_spec_error"].casefold() in str(caught.value).casefold()


@pytest.mark.parametrize("case", [c for c in CASES if "expect" in c], ids=lambda c: c["name"])
def test_vector_with_a_prevalidated_spec(case):
    # The hot path passes a RewardSpec, not a dict; it must agree with the vector too.
    parsed = RewardSpec.parse(case["spec"])
    check_vector(case, lambda spec, components: compose(parsed, components).to_json())
