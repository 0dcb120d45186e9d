"""Property tests: malformed groups always raise RewardContractError and never reach the provider."""

from __future__ import annotations

from typing import Any

from helpers import bind_spec
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardkit import (
    RewardCandidateResult,
    RewardContractError,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    RewardProviderSpec,
)


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        self.calls += 1
        return RewardGroupResult(
            request.group_id,
            tuple(
                RewardCandidateResult(c.trajectory_id, RewardProviderResult({"task": 1.0}))
                for c in request.candidates
            ),
        )


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)
anything = st.one_of(
    json_values, st.binary(max_size=4), st.just(float("nan")), st.just(object()), st.tuples(st.integers())
)


def valid_row(index: int) -> dict[str, Any]:
    return {
        "group_id": "g",
        "trajectory_id": f"t{index}",
        "completion": "x",
        "reference": {"gold": [1, 2]},
        "prompt": "p",
        "completion_token_count": 3,
        "finish_reason": "stop",
    }


FIELDS = ["group_id", "trajectory_id", "completion", "reference", "completion_token_count", "finish_reason"]


@st.composite
def malformed_groups(draw: st.DrawFn) -> tuple[Any, Any, int | None]:
    size = draw(st.integers(min_value=1, max_value=5))
    rows: list[Any] = [valid_row(index) for index in range(size)]
    kind = draw(
        st.sampled_from(["field", "drop", "size", "duplicate", "not-mapping", "group-id", "container"])
    )
    expected: int | None = None
    group_id: Any = "g"
    target = draw(st.integers(min_value=0, max_value=size - 1))
    if kind == "field":
        field = draw(st.sampled_from(FIELDS))
        value = draw(anything)
        valid = {
            "group_id": lambda v: v == "g",
            # any other non-empty string is a valid id as long as it is unique in the group
            "trajectory_id": lambda v: (
                type(v) is str and v != "" and v not in {f"t{i}" for i in range(size)} - {f"t{target}"}
            ),
            "completion": lambda v: type(v) is str,
            "reference": lambda v: v == {"gold": [1, 2]} and isinstance(v, dict),
            "completion_token_count": lambda v: v is None or (type(v) is int and v >= 0),
            "finish_reason": lambda v: v is None or type(v) is str,
        }[field]
        if field == "reference" and size == 1:
            # A lone candidate's reference is consistent with itself; make it unusable instead.
            value = draw(
                st.one_of(st.none(), st.just(float("nan")), st.just(object()), st.binary(max_size=2))
            )
        try:
            is_valid = valid(value)
        except Exception:
            is_valid = False
        if field == "reference" and size > 1 and target == 0:
            # Compare against the first row from another row so inequality is what is tested.
            target = 1
        if is_valid and field != "reference":
            value = None if field in ("group_id",) else 1.5
            if field == "finish_reason":
                value = 3
        if field == "group_id" and value is None:
            value = "other"
        rows[target][field] = value
        if field == "reference" and is_valid:
            rows[target][field] = [1, 2]
    elif kind == "drop":
        field = draw(st.sampled_from(["trajectory_id", "completion", "reference"]))
        if field == "reference" and size == 1:
            field = "completion"
        del rows[target][field]
    elif kind == "size":
        expected = size + draw(st.integers(min_value=1, max_value=3))
    elif kind == "duplicate":
        if size == 1:
            rows.append(valid_row(0))
        else:
            rows[target]["trajectory_id"] = rows[(target + 1) % size]["trajectory_id"]
    elif kind == "not-mapping":
        rows[target] = draw(
            st.one_of(st.text(max_size=3), st.integers(), st.lists(st.integers(), max_size=2))
        )
    elif kind == "group-id":
        group_id = draw(st.one_of(st.just(""), st.integers(), st.none(), st.binary(max_size=2)))
    else:
        rows = draw(st.one_of(st.text(max_size=3), st.integers(), st.none(), st.just({}), st.just([])))
    return group_id, rows, expected


@settings(max_examples=400, deadline=None)
@given(malformed_groups())
def test_malformed_groups_raise_contract_error_and_never_call_the_provider(case: tuple[Any, Any, int | None]):
    group_id, rows, expected = case
    provider = Counting()
    spec = RewardProviderSpec("counting", lambda: provider, ("reference",), "1", ("task",))
    bound = bind_spec(spec)
    try:
        bound.score_group(group_id, rows, expected)
    except RewardContractError:
        pass
    else:
        raise AssertionError(f"accepted a malformed group: {group_id!r} {rows!r} expected={expected}")
    assert provider.calls == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=4))
def test_valid_groups_with_any_json_reference_reach_the_provider(references: list[Any]):
    provider = Counting()
    spec = RewardProviderSpec("counting", lambda: provider, ("reference",), "1", ("task",))
    reference = references[0]
    rows = [
        {"trajectory_id": f"t{i}", "completion": "x", "reference": reference} for i in range(len(references))
    ]
    if reference is None:
        return
    bind_spec(spec).score_group("g", rows)
    assert provider.calls == 1
