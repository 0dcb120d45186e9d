"""``compose_columns`` (what the batch paths call) against ``compose_rows`` (the row-by-row rules).

A batch composed a component at a time must give every candidate the same total, gate, breakdown
and error as the same batch composed row by row, and pass every shared vector.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardkit.scoring.composition import (
    Composition,
    CompositionError,
    CompositionRowError,
    RewardSpec,
    compose_columns,
    compose_rows,
)
from rewardkit_testing.composition_vectors import check_vector, load_reward_vectors

VALUES = st.sampled_from([0.0, -0.0, 1.0, 0.25, -3.0, 7, 1e308, -1e308])
OUTCOMES = st.one_of(
    st.tuples(st.just("scored"), VALUES, st.sampled_from([None, "why"])),
    st.tuples(st.just("skipped"), st.none(), st.sampled_from([None, "not for this one"])),
    st.tuples(st.just("error"), st.none(), st.sampled_from([None, "timeout"])),
    st.tuples(st.just("unknown"), st.none(), st.none()),
)


@st.composite
def specs(draw: st.DrawFn) -> RewardSpec:
    components = []
    for index in range(draw(st.integers(1, 3))):
        component: dict[str, Any] = {
            "name": f"c{index}",
            "provider": "constant",
            "weight": draw(st.sampled_from([1.0, 0.5, -2.0, 3])),
        }
        if draw(st.booleans()):
            component.update(gate=True, threshold=draw(st.sampled_from([0.0, 0.5, 1.0])))
        components.append(component)
    data: dict[str, Any] = {
        "components": components,
        "onError": draw(st.sampled_from(["raise", "zero", "none"])),
        "floor": draw(st.sampled_from([0.0, -1.0])),
    }
    if draw(st.booleans()):
        data["clip"] = draw(st.sampled_from([[-1.0, 1.0], [0.0, 0.5]]))
    return RewardSpec.parse(data)


def outcome(result: list[Composition] | CompositionError) -> Any:
    if isinstance(result, CompositionError):
        return (type(result), str(result), getattr(result, "position", None), result.component)
    # repr tells -0.0 from 0.0, which == does not
    return repr([(c.total, c.gated, c.breakdown) for c in result])


def run(function: Any, spec: RewardSpec, argument: Any) -> list[Composition] | CompositionError:
    try:
        return function(spec, argument)
    except CompositionError as error:
        return error


@settings(max_examples=600, deadline=None)
@given(data=st.data(), spec=specs())
def test_columns_compose_as_rows_do(data: st.DataObject, spec: RewardSpec) -> None:
    count = data.draw(st.integers(0, 6))
    width = len(spec.components)
    columns = []
    for _ in range(width):
        # Some columns repeat a few outcome objects (as a yes/no rule's column does), others are
        # all fresh: compose_columns works a repeated outcome out once.
        pool = data.draw(st.lists(OUTCOMES, min_size=1, max_size=3))
        repeated = st.lists(st.sampled_from(pool), min_size=count, max_size=count)
        fresh = st.lists(OUTCOMES, min_size=count, max_size=count)
        columns.append(data.draw(st.one_of(repeated, fresh)))
    by_rows = run(compose_rows, spec, list(zip(*columns)))
    by_columns = run(compose_columns, spec, columns)
    assert outcome(by_columns) == outcome(by_rows)
    if not isinstance(by_columns, CompositionError):
        # Every candidate owns its breakdown: no entry is shared between two of them.
        entries = [entry for composition in by_columns for entry in composition.breakdown.values()]
        assert len({id(entry) for entry in entries}) == len(entries)


def test_a_failing_row_is_the_first_in_row_order() -> None:
    # Column by column, the error in component c1 of row 1 is seen after the one in c0 of row 2;
    # the batch must still fail at row 1, as it does row by row.
    spec = RewardSpec.parse(
        {"components": [{"name": "c0", "provider": "constant"}, {"name": "c1", "provider": "constant"}]}
    )
    columns = [
        [("scored", 1.0, None), ("scored", 1.0, None), ("error", None, "down")],
        [("scored", 1.0, None), ("error", None, "timeout"), ("scored", 1.0, None)],
    ]
    with pytest.raises(CompositionRowError) as caught:
        compose_columns(spec, columns)
    assert caught.value.position == 1
    assert caught.value.component == "c1"
    assert "timeout" in str(caught.value)


def test_columns_must_fit_the_spec() -> None:
    spec = RewardSpec.parse(
        {"components": [{"name": "c0", "provider": "constant"}, {"name": "c1", "provider": "constant"}]}
    )
    with pytest.raises(CompositionError, match="expected 2 component columns, got 1"):
        compose_columns(spec, [[("scored", 1.0, None)]])
    with pytest.raises(CompositionError, match=r"differ in length: \[1, 2\]"):
        compose_columns(spec, [[("scored", 1.0, None)], [("scored", 1.0, None)] * 2])


# Outcome validation is compose's (the batch paths hand over outcomes the binding has checked).
CASES = [
    case
    for case in load_reward_vectors()
    if ("expect" in case or "expect_error" in case) and "outcome-validation" not in case.get("rules", [])
]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_vectors_through_columns(case: dict[str, Any]) -> None:
    def one_column_each(spec_data: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
        spec = RewardSpec.parse(spec_data)
        outcomes = [components[component.name] for component in spec.components]
        columns = [[(o["status"], o.get("value"), o.get("reason"))] for o in outcomes]
        return compose_columns(spec, columns)[0].to_json()

    check_vector(case, one_column_each)
