"""RewardSpec validation and the composition rules, one by one and as properties."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

import rewardkit
from rewardkit import RewardkitError
from rewardkit.scoring.composition import (
    ComponentOutcome,
    ComponentSpec,
    Composition,
    CompositionError,
    RewardSpec,
    RewardSpecError,
    compose,
)


def spec(*components: dict[str, Any], **rules: Any) -> RewardSpec:
    return RewardSpec.parse({"components": list(components), **rules})


def scored(value: float) -> dict[str, Any]:
    return {"status": "scored", "value": value}


SKIP = {"status": "skipped", "reason": "does not apply"}
ERROR = {"status": "error", "reason": "sandbox timeout"}


# --- the spec ---------------------------------------------------------------------------------------


def test_defaults_fill_name_weight_gate_threshold_floor_on_error_clip():
    parsed = spec({"provider": "math"})
    (component,) = parsed.components
    assert (component.name, component.provider, component.params, component.term) == (
        "math",
        "math",
        {},
        None,
    )
    assert (component.weight, component.gate, component.threshold) == (1.0, False, 1.0)
    assert (parsed.floor, parsed.on_error, parsed.clip) == (0.0, "raise", None)


def test_on_error_accepts_both_spellings_and_serialises_as_on_error_alias():
    assert spec({"provider": "math"}, onError="zero").on_error == "zero"
    assert spec({"provider": "math"}, on_error="none").on_error == "none"
    dumped = spec({"provider": "math"}, on_error="none", clip=(0, 1)).to_json()
    assert dumped["onError"] == "none" and "on_error" not in dumped
    assert dumped["clip"] == [0.0, 1.0]
    assert RewardSpec.parse(json.loads(json.dumps(dumped))) == RewardSpec.parse(dumped)


@pytest.mark.parametrize(
    ("data", "needles"),
    [
        ({"components": [{"provider": "math", "wieght": 1}]}, ["components[0]", "'wieght'", "'weight'"]),
        ({"components": [{"provider": "math"}], "flor": 0}, ["'flor'", "did you mean 'floor'"]),
        ({"components": [{"provider": "m", "weight": float("nan")}]}, ["components[0].weight", "finite"]),
        ({"components": [{"provider": "m", "weight": float("inf")}]}, ["components[0].weight", "finite"]),
        ({"components": [{"provider": "m", "threshold": float("-inf")}]}, ["threshold", "finite"]),
        ({"components": [{"provider": "m"}], "floor": float("nan")}, ["floor", "finite"]),
        ({"components": [{"provider": "m"}], "clip": [0, float("inf")]}, ["clip[1]", "finite"]),
        ({"components": [{"provider": "m"}], "clip": [2, 1]}, ["clip", "lower bound 2.0 is above"]),
        ({"components": [{"provider": "m"}], "clip": [0]}, ["clip", "two numbers"]),
        ({"components": [{"provider": "m"}], "clip": "0,1"}, ["clip", "list"]),
        ({"components": [{"provider": "a"}, {"provider": "a"}]}, ["duplicate component name 'a'", "[1]"]),
        (
            {"components": [{"provider": "j", "name": "x"}, {"provider": "k", "name": "x"}]},
            ["duplicate", "'x'"],
        ),
        ({"components": []}, ["at least one component"]),
        ({"components": [{"provider": "m"}], "onError": "ignore"}, ["onError", "'ignore'"]),
        ({"components": [{"provider": "m"}], "onError": "zero", "on_error": "none"}, ["not both"]),
        ({"components": [{"provider": "m", "weight": "0.5"}]}, ["components[0].weight", "str"]),
        ({"components": [{"provider": "m", "weight": True}]}, ["components[0].weight", "bool"]),
        ({"components": [{"provider": "m", "gate": "yes"}]}, ["components[0].gate", "boolean"]),
        ({"components": [{"provider": "m", "gate": 1}]}, ["components[0].gate"]),
        ({"components": [{"provider": "Math Reward"}]}, ["components[0].provider", "'Math Reward'"]),
        ({"components": [{"provider": "m", "term": "Bad Term"}]}, ["components[0].term"]),
        ({"components": [{"name": "x"}]}, ["components[0].provider", "Field required"]),
        ({"components": [{"provider": "m", "params": {"k": float("nan")}}]}, ["params", "JSON"]),
        ({"components": [{"provider": "m", "params": {"k": object()}}]}, ["params", "JSON"]),
        ({}, ["components", "Field required"]),
    ],
)
def test_invalid_specs_are_refused_with_the_field_path(data, needles):
    with pytest.raises(RewardSpecError) as caught:
        RewardSpec.parse(data)
    message = str(caught.value)
    for needle in needles:
        assert needle in message, (needle, message)
    assert isinstance(caught.value, CompositionError) and isinstance(caught.value, RewardkitError)
    assert caught.value.problems


def test_every_problem_is_listed_not_only_the_first():
    with pytest.raises(RewardSpecError) as caught:
        RewardSpec.parse({"components": [{"provider": "m", "weight": "x"}], "clip": [3, 1], "x": 1})
    assert len(caught.value.problems) == 3


def test_non_mapping_spec_is_refused():
    with pytest.raises(RewardSpecError, match="mapping"):
        RewardSpec.parse(["math"])  # type: ignore[arg-type]


def test_spec_nests_in_a_larger_pydantic_config_with_full_paths():
    class Reward(BaseModel):
        spec: RewardSpec

    with pytest.raises(ValidationError) as caught:
        Reward.model_validate({"spec": {"components": [{"provider": "m", "weight": float("nan")}]}})
    assert caught.value.errors()[0]["loc"] == ("spec", "components", 0, "weight")
    assert Reward.model_validate({"spec": {"components": [{"provider": "m"}]}}).spec.names == ("m",)


def test_single_builds_a_one_component_spec():
    single = RewardSpec.single("exact-match", {"case_sensitive": True}, term="task")
    (component,) = single.components
    assert component.name == "exact-match" and component.params == {"case_sensitive": True}
    assert component.term == "task"
    assert compose(single, {"exact-match": scored(1)}).total == 1.0
    with pytest.raises(RewardSpecError, match="provider"):
        RewardSpec.single("Not A Name")


def test_with_terms_fills_only_missing_terms_and_asks_by_provider():
    asked: list[str] = []

    def resolver(provider: str) -> str:
        asked.append(provider)
        return {"judge": "helpful", "math": "task"}[provider]

    original = spec(
        {"provider": "math"}, {"name": "j2", "provider": "judge", "term": "harmless"}, {"provider": "judge"}
    )
    filled = original.with_terms(resolver)
    assert [c.term for c in filled.components] == ["task", "harmless", "helpful"]
    assert asked == ["math", "judge"]
    assert [c.term for c in original.components] == [None, "harmless", None]  # the spec is immutable
    assert filled.with_terms(resolver) is filled
    with pytest.raises(RewardSpecError, match=r"component 'math'.*returned ''"):
        spec({"provider": "math"}).with_terms(lambda provider: "")


def test_with_terms_works_with_the_catalog_default_term():
    catalog = rewardkit.resolve_catalog()
    filled = RewardSpec.single("exact-match").with_terms(lambda p: catalog.entry(p).spec.default_term)
    assert filled.components[0].term == "task"


def test_spec_is_frozen():
    parsed = spec({"provider": "math"})
    with pytest.raises(ValidationError):
        parsed.floor = 1.0  # type: ignore[misc]


def test_public_names_are_exported_from_the_package():
    assert rewardkit.compose is compose and rewardkit.RewardSpec is RewardSpec
    assert rewardkit.CompositionError is CompositionError
    assert {"compose", "RewardSpec", "CompositionError"} <= set(rewardkit.__all__)


# --- the rules --------------------------------------------------------------------------------------


def test_weighted_sum_in_spec_order_with_full_breakdown():
    result = compose(
        spec({"provider": "math", "weight": 0.7}, {"provider": "fmt", "weight": -0.5}),
        {"math": scored(1), "fmt": scored(0.5)},
    )
    assert result.total == pytest.approx(0.45, abs=1e-12) and result.gated is False
    assert result.breakdown["math"] == {
        "status": "scored",
        "value": 1.0,
        "weight": 0.7,
        "contribution": 0.7,
        "reason": None,
        "gate": False,
    }
    assert result.breakdown["fmt"]["contribution"] == -0.25
    assert isinstance(result.breakdown["math"]["value"], float)


def test_skipped_adds_nothing_and_is_not_an_error_under_raise():
    result = compose(spec({"provider": "a"}, {"provider": "b"}), {"a": scored(0.5), "b": SKIP})
    assert result.total == 0.5
    assert result.breakdown["b"] == {
        "status": "skipped",
        "value": None,
        "weight": 1.0,
        "contribution": 0.0,
        "reason": "does not apply",
        "gate": False,
    }


def test_error_under_raise_fails_naming_component_and_reason_and_keeps_breakdown():
    with pytest.raises(CompositionError) as caught:
        compose(spec({"provider": "a"}, {"provider": "b"}), {"a": scored(1), "b": ERROR})
    error = caught.value
    assert "'b'" in str(error) and "sandbox timeout" in str(error) and "onError" in str(error)
    assert error.component == "b"
    assert error.breakdown is not None and error.breakdown["a"]["contribution"] == 1.0


def test_error_under_raise_wins_over_a_failed_gate():
    with pytest.raises(CompositionError, match="'b'"):
        compose(
            spec({"provider": "a", "gate": True}, {"provider": "b"}),
            {"a": scored(0), "b": {"status": "error"}},
        )


def test_error_without_reason_says_so():
    with pytest.raises(CompositionError, match="no reason given"):
        compose(spec({"provider": "a"}), {"a": {"status": "error"}})


def test_error_under_zero_adds_nothing_and_under_none_nulls_the_total():
    outcomes = {"a": scored(1), "b": ERROR}
    zero = compose(spec({"provider": "a"}, {"provider": "b"}, onError="zero"), outcomes)
    assert zero.total == 1.0 and zero.breakdown["b"]["status"] == "error"
    none = compose(spec({"provider": "a"}, {"provider": "b"}, onError="none", clip=[0, 1]), outcomes)
    assert none.total is None and none.gated is False and none.breakdown["a"]["contribution"] == 1.0


@pytest.mark.parametrize("on_error", ["zero", "none"])
@pytest.mark.parametrize(
    ("gate_outcome", "passed"),
    [(scored(0.99), False), (scored(1.0), True), (scored(7), True), (SKIP, False), (ERROR, False)],
)
def test_gate_outcomes(on_error, gate_outcome, passed):
    result = compose(
        spec({"provider": "g", "gate": True, "weight": 0}, {"provider": "m"}, floor=-2, onError=on_error),
        {"g": gate_outcome, "m": scored(0.5)},
    )
    assert result.breakdown["g"]["passed"] is passed
    assert result.gated is (not passed)
    assert result.total == (0.5 if passed else -2.0)


def test_gated_total_is_the_floor_clipped():
    result = compose(
        spec({"provider": "g", "gate": True}, floor=-1, clip=[-0.5, 1]),
        {"g": scored(0)},
    )
    assert (result.total, result.gated) == (-0.5, True)


def test_clip_applies_last():
    two = spec({"provider": "a"}, {"provider": "b"}, clip=[-1, 1])
    assert compose(two, {"a": scored(1), "b": scored(1)}).total == 1.0
    assert compose(two, {"a": scored(-1), "b": scored(-1)}).total == -1.0
    assert compose(two, {"a": scored(0.25), "b": scored(0.5)}).total == 0.75


def test_overflowing_sum_is_refused_not_returned():
    with pytest.raises(CompositionError, match="not finite"):
        compose(
            spec({"provider": "a", "weight": 1e308}, {"provider": "b", "weight": 1e308}),
            {"a": scored(10), "b": scored(10)},
        )


# --- outcomes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcomes", "needles"),
    [
        ({"a": scored(1)}, ["missing outcome", "'b'"]),
        ({"a": scored(1), "b": scored(1), "c": scored(1)}, ["unknown component", "'c'"]),
        (
            {"a": scored(1), "c": scored(1)},
            ["unknown component(s) ['c']", "missing outcome for component(s) ['b']"],
        ),
        ({"a": scored(1), "b": {"status": "passed"}}, ["'b'", "status 'passed'"]),
        ({"a": scored(1), "b": {"status": "scored"}}, ["'b'", "numeric 'value'", "None"]),
        ({"a": scored(1), "b": {"status": "scored", "value": "1"}}, ["'b'", "numeric"]),
        ({"a": scored(1), "b": {"status": "scored", "value": True}}, ["'b'", "numeric"]),
        ({"a": scored(1), "b": {"status": "scored", "value": float("nan")}}, ["'b'", "not finite"]),
        ({"a": scored(1), "b": {"status": "scored", "value": float("-inf")}}, ["'b'", "not finite"]),
        (
            {"a": scored(1), "b": {"status": "skipped", "value": 0.0}},
            ["'b'", "skipped outcome carries no value"],
        ),
        ({"a": scored(1), "b": {"status": "error", "reason": 3}}, ["'b'", "reason"]),
        (
            {"a": scored(1), "b": {"status": "scored", "value": 1, "score": 1}},
            ["'b'", "unknown outcome fields"],
        ),
        ({"a": scored(1), "b": 1.0}, ["'b'", "mapping"]),
    ],
)
def test_malformed_outcomes_are_refused_naming_the_component(outcomes, needles):
    with pytest.raises(CompositionError) as caught:
        compose(spec({"provider": "a"}, {"provider": "b"}, onError="zero"), outcomes)
    for needle in needles:
        assert needle in str(caught.value), (needle, str(caught.value))


def test_outcomes_must_be_a_mapping():
    with pytest.raises(CompositionError, match="mapping"):
        compose(spec({"provider": "a"}), [scored(1)])  # type: ignore[arg-type]


def test_component_outcome_values():
    outcomes = {"a": ComponentOutcome("scored", 2), "b": ComponentOutcome("skipped", None, "n/a")}
    assert compose(spec({"provider": "a"}, {"provider": "b"}), outcomes).total == 2.0
    assert ComponentOutcome("error", None, "timeout").to_json() == {
        "status": "error",
        "value": None,
        "reason": "timeout",
    }
    with pytest.raises(CompositionError, match="not finite"):
        ComponentOutcome("scored", float("nan"))
    with pytest.raises(CompositionError, match="status"):
        ComponentOutcome("maybe")  # type: ignore[arg-type]


def test_dict_spec_is_accepted_and_bad_dict_spec_raises_spec_error():
    assert compose({"components": [{"provider": "a"}]}, {"a": scored(3)}).total == 3.0
    with pytest.raises(RewardSpecError, match="duplicate"):
        compose({"components": [{"provider": "a"}, {"provider": "a"}]}, {"a": scored(3)})


def test_result_is_json_serialisable_and_detached():
    result = compose(spec({"provider": "a", "gate": True}), {"a": scored(1)})
    dumped = result.to_json()
    assert json.loads(json.dumps(dumped, allow_nan=False)) == dumped
    dumped["breakdown"]["a"]["value"] = 99
    assert result.breakdown["a"]["value"] == 1.0


# --- properties -------------------------------------------------------------------------------------

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
outcome_strategy = st.one_of(
    finite.map(scored),
    st.just(SKIP),
    st.just(ERROR),
)


@st.composite
def specs_and_outcomes(draw: st.DrawFn) -> tuple[RewardSpec, dict[str, dict[str, Any]]]:
    count = draw(st.integers(min_value=1, max_value=5))
    components = [
        {
            "name": f"c{index}",
            "provider": draw(st.sampled_from(["math", "judge", "format"])),
            "weight": draw(finite),
            "gate": draw(st.booleans()),
            "threshold": draw(finite),
        }
        for index in range(count)
    ]
    rules: dict[str, Any] = {
        "floor": draw(finite),
        "onError": draw(st.sampled_from(["zero", "none"])),
    }
    if draw(st.booleans()):
        low, high = sorted((draw(finite), draw(finite)))
        rules["clip"] = [low, high]
    parsed = spec(*components, **rules)
    outcomes = {f"c{index}": draw(outcome_strategy) for index in range(count)}
    return parsed, outcomes


@settings(max_examples=300, deadline=None)
@given(specs_and_outcomes())
def test_properties_of_every_composition(case):
    parsed, outcomes = case
    result = compose(parsed, outcomes)
    assert isinstance(result, Composition)
    # The breakdown always has every component, and each contribution is weight*value or 0.
    assert list(result.breakdown) == list(parsed.names)
    for component in parsed.components:
        entry = result.breakdown[component.name]
        outcome = outcomes[component.name]
        assert entry["status"] == outcome["status"] and entry["weight"] == component.weight
        expected = component.weight * outcome["value"] if outcome["status"] == "scored" else 0.0
        assert entry["contribution"] == expected
    # Gated exactly when some gate did not score at least its threshold; then the total is the floor.
    expect_gated = any(
        c.gate and not (outcomes[c.name]["status"] == "scored" and outcomes[c.name]["value"] >= c.threshold)
        for c in parsed.components
    )
    assert result.gated is expect_gated
    low, high = parsed.clip if parsed.clip is not None else (-math.inf, math.inf)
    if result.gated:
        assert result.total == min(max(parsed.floor, low), high)
    elif parsed.on_error == "none" and any(o["status"] == "error" for o in outcomes.values()):
        assert result.total is None
    else:
        raw = sum(entry["contribution"] for entry in result.breakdown.values())
        assert result.total == min(max(raw, low), high)
    if result.total is not None:
        assert low <= result.total <= high and math.isfinite(result.total)


@settings(max_examples=200, deadline=None)
@given(specs_and_outcomes())
def test_any_error_under_raise_fails_whatever_the_gates(case):
    parsed, outcomes = case
    raising = RewardSpec.parse({**parsed.to_json(), "onError": "raise"})
    errored = [name for name, outcome in outcomes.items() if outcome["status"] == "error"]
    if errored:
        with pytest.raises(CompositionError) as caught:
            compose(raising, outcomes)
        assert caught.value.component == errored[0]
        assert set(caught.value.breakdown or {}) == set(parsed.names)
    else:
        assert compose(raising, outcomes) == compose(parsed, outcomes)


@settings(max_examples=100, deadline=None)
@given(specs_and_outcomes())
def test_dict_and_model_specs_compose_alike(case):
    parsed, outcomes = case
    assert compose(parsed.to_json(), outcomes) == compose(parsed, outcomes)
    component_values = {name: ComponentOutcome(**outcome) for name, outcome in outcomes.items()}
    assert compose(parsed, component_values) == compose(parsed, outcomes)


def test_component_spec_is_usable_on_its_own():
    component = ComponentSpec.model_validate({"provider": "math", "weight": 2})
    assert component.name == "math" and component.weight == 2.0
