"""Identity hashes follow the provider's declared param types: equal configurations, equal hashes."""

from __future__ import annotations

import pytest

from rewardkit import PreflightError, resolve_catalog
from rewardkit.composition import RewardSpec
from rewardkit.worker import RewardWorker


def identity(name: str, params: dict | None = None) -> str:
    return resolve_catalog().bind(name, params).identity


def test_a_float_param_written_as_an_integer_has_the_same_identity():
    assert identity("constant", {"value": 1}) == identity("constant", {"value": 1.0})
    assert identity("constant", {"value": 6}) == identity("constant", {"value": 6.0})


def test_an_explicit_default_and_an_omitted_one_have_the_same_identity():
    catalog = resolve_catalog()
    omitted = identity("exact-match")
    assert identity("exact-match", {"case_sensitive": False}) == omitted
    assert identity("constant", {"value": 1.0}) == identity("constant") == identity("constant", {})
    # what `rewardkit providers` lists is the identity of the default configuration
    assert catalog.entry("exact-match").identity == omitted
    assert catalog.entry("constant").identity == identity("constant")


def test_different_configurations_never_share_an_identity():
    hashes = {
        identity("constant", {"value": 1}),
        identity("constant", {"value": 2}),
        identity("constant", {"value": 1.5}),
        identity("exact-match", {"case_sensitive": True}),
        identity("exact-match"),
    }
    assert len(hashes) == 5


def test_a_wrongly_typed_param_is_still_refused_before_hashing():
    with pytest.raises(PreflightError, match="param value must be a number"):
        identity("constant", {"value": "1"})


def test_components_equal_once_normalised_are_one_configuration():
    spec = RewardSpec.parse(
        {
            "components": [
                {"name": "a", "provider": "constant", "params": {"value": 6}},
                {"name": "b", "provider": "constant", "params": {"value": 6.0}},
            ]
        }
    )
    # the same configuration read twice is a double count, not two configurations of one name
    with pytest.raises(PreflightError, match="optimized-term collision"):
        RewardWorker(spec, resolve_catalog(), group_size=None)
    single = RewardWorker(RewardSpec.single("constant", {"value": 6}), resolve_catalog(), group_size=None)
    other = RewardWorker(RewardSpec.single("constant", {"value": 6.0}), resolve_catalog(), group_size=None)
    assert single.records == other.records
    assert single.spec_identity == other.spec_identity
