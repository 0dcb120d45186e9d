"""The bound adapter: every validation rule before and after the provider, with a violating case."""

from __future__ import annotations

import math
from functools import partial
from types import MappingProxyType
from typing import Any

import pytest
from helpers import bind_spec, bound, rollouts

from rewardkit import (
    MetricContribution,
    ProviderError,
    RewardCandidateResult,
    RewardContractError,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    RewardProviderSpec,
    map_candidates,
)
from rewardkit.contracts import RewardCandidate, RewardContext


class Recording:
    """A provider that records calls and returns what ``respond`` builds."""

    def __init__(self, respond: Any = None) -> None:
        self.calls: list[RewardGroupRequest] = []
        self.respond = respond or self.default

    @staticmethod
    def default(request: RewardGroupRequest) -> RewardGroupResult:
        return RewardGroupResult(
            request.group_id,
            tuple(
                RewardCandidateResult(c.trajectory_id, RewardProviderResult(terms={"task": 1.0}))
                for c in request.candidates
            ),
        )

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        self.calls.append(request)
        return self.respond(request)


def recording_spec(
    provider: Recording, needs: tuple[str, ...] = ("reference",), **extra: Any
) -> RewardProviderSpec:
    return RewardProviderSpec(
        name="recording",
        factory=lambda: provider,
        needs=needs,
        revision="1",
        terms=extra.get("terms", ("task",)),
        diagnostics=extra.get("diagnostics", ("seen",)),
    )


def expect_rule(
    rule: str, provider: Recording, rows: Any, group_id: Any = "g", expected_size: int | None = None
) -> str:
    bp = bind_spec(recording_spec(provider))
    with pytest.raises(RewardContractError) as caught:
        bp.score_group(group_id, rows, expected_size)
    assert caught.value.rule == rule, str(caught.value)
    assert provider.calls == [], "the provider must not be called on a malformed group"
    return str(caught.value)


# -- before the provider -----------------------------------------------------------------------


def test_a_valid_group_reaches_the_provider_frozen_and_in_order():
    provider = Recording()
    rows = rollouts(3, reference={"answer": [1, 2]}, prompt="p")
    result = bind_spec(recording_spec(provider)).score_group("g", rows, 3)
    (request,) = provider.calls
    assert [c.trajectory_id for c in request.candidates] == ["t0", "t1", "t2"]
    assert isinstance(request.context.reference, MappingProxyType)
    assert request.context.reference["answer"] == (1, 2)
    assert request.context.prompt is None, "prompt was not declared, so it is not passed"
    assert [item.trajectory_id for item in result.items] == ["t0", "t1", "t2"]


def test_common_inputs_are_detached_from_the_callers_objects():
    provider = Recording()
    reference = {"answer": [1, 2]}
    rows = rollouts(2, reference=reference)
    bind_spec(recording_spec(provider)).score_group("g", rows)
    reference["answer"].append(3)
    assert provider.calls[0].context.reference["answer"] == (1, 2)
    with pytest.raises(TypeError):
        provider.calls[0].context.reference["answer"] = 5  # type: ignore[index]


def test_incomplete_group_is_rejected():
    message = expect_rule("incomplete-group", Recording(), rollouts(3, reference="x"), expected_size=4)
    assert "3 candidates, expected 4" in message and "group 'g'" in message


def test_empty_group_is_rejected():
    expect_rule("incomplete-group", Recording(), [])


def test_duplicate_trajectory_id_is_rejected():
    rows = rollouts(3, reference="x")
    rows[2]["trajectory_id"] = "t0"
    message = expect_rule("duplicate-trajectory-id", Recording(), rows)
    assert "candidate 't0'" in message


@pytest.mark.parametrize("bad", [None, "", 7])
def test_missing_trajectory_id_is_rejected(bad: Any):
    rows = rollouts(2, reference="x")
    rows[1]["trajectory_id"] = bad
    assert "position 1" in expect_rule("missing-trajectory-id", Recording(), rows)


@pytest.mark.parametrize("bad", [None, b"bytes", 3])
def test_missing_completion_is_rejected(bad: Any):
    rows = rollouts(2, reference="x")
    rows[1]["completion"] = bad
    assert "candidate 't1'" in expect_rule("missing-completion", Recording(), rows)


def test_completion_key_absent_is_rejected():
    rows = rollouts(2, reference="x")
    del rows[0]["completion"]
    expect_rule("missing-completion", Recording(), rows)


def test_group_id_disagreement_is_rejected():
    rows = rollouts(2, reference="x")
    rows[1]["group_id"] = "other"
    assert "'other'" in expect_rule("group-id-disagreement", Recording(), rows)


@pytest.mark.parametrize(
    "first,second", [(1, 1.0), (1, True), (1.0, True), ([1], [1.0]), ({"a": 0}, {"a": False})]
)
def test_common_inputs_compare_type_strictly(first: Any, second: Any):
    rows = rollouts(2)
    rows[0]["reference"], rows[1]["reference"] = first, second
    assert "1, 1.0 and true differ" in expect_rule("inconsistent-common-input", Recording(), rows)


def test_inconsistent_structure_is_rejected():
    rows = rollouts(2)
    rows[0]["reference"], rows[1]["reference"] = {"a": [1, 2]}, {"a": [1, 2], "b": None}
    expect_rule("inconsistent-common-input", Recording(), rows)


def test_missing_needed_input_is_rejected():
    rows = rollouts(2, reference="x")
    rows[1]["reference"] = None
    assert "needs 'reference'" in expect_rule("missing-input", Recording(), rows)


@pytest.mark.parametrize("bad", [math.nan, math.inf, {1: "int key"}, {"a": object()}, b"bytes"])
def test_non_json_common_input_is_rejected(bad: Any):
    expect_rule("json-input", Recording(), rollouts(2, reference=bad))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bad_token_count_is_rejected(bad: Any):
    rows = rollouts(1, reference="x", completion_token_count=bad)
    expect_rule("token-count", Recording(), rows)


def test_bad_finish_reason_is_rejected():
    expect_rule("finish-reason", Recording(), rollouts(1, reference="x", finish_reason=1))


@pytest.mark.parametrize("rows", ["text", {"a": 1}, 5, None])
def test_rollouts_must_be_a_sequence(rows: Any):
    expect_rule("group-shape", Recording(), rows)


def test_rollout_must_be_a_mapping():
    expect_rule("rollout-type", Recording(), [("t0", "x")])


@pytest.mark.parametrize("group_id", ["", None, 3])
def test_group_id_must_be_a_string(group_id: Any):
    expect_rule("group-id", Recording(), rollouts(1, reference="x"), group_id=group_id)


def test_is_length_truncated_answers_exactly_length():
    assert RewardCandidate("t", "x", finish_reason="length").is_length_truncated
    for verdict in (None, "stop", "LENGTH", "length ", "max_tokens"):
        assert not RewardCandidate("t", "x", finish_reason=verdict).is_length_truncated


# -- after the provider ------------------------------------------------------------------------


def respond_with(build: Any) -> Recording:
    return Recording(build)


def items_for(request: RewardGroupRequest, result: RewardProviderResult) -> tuple[RewardCandidateResult, ...]:
    return tuple(RewardCandidateResult(c.trajectory_id, result) for c in request.candidates)


def expect_result_rule(rule: str, respond: Any, **spec_extra: Any) -> str:
    bp = bind_spec(recording_spec(Recording(respond), **spec_extra))
    with pytest.raises(RewardContractError) as caught:
        bp.score_group("g", rollouts(2, reference="x"))
    assert caught.value.rule == rule, str(caught.value)
    return str(caught.value)


def test_result_must_be_a_group_result():
    expect_result_rule("result-type", lambda request: {"task": 1.0})


def test_result_must_answer_the_same_group():
    expect_result_rule(
        "result-group-id",
        lambda request: RewardGroupResult("other", items_for(request, RewardProviderResult({"task": 1.0}))),
    )


def test_result_must_have_one_item_per_candidate():
    message = expect_result_rule(
        "result-cardinality",
        lambda request: RewardGroupResult(
            request.group_id, items_for(request, RewardProviderResult({"task": 1.0}))[:1]
        ),
    )
    assert "1 items for 2 candidates" in message


def test_result_must_repeat_ids_in_order():
    def reversed_items(request: RewardGroupRequest) -> RewardGroupResult:
        items = items_for(request, RewardProviderResult({"task": 1.0}))
        return RewardGroupResult(request.group_id, tuple(reversed(items)))

    assert "candidate 't0'" in expect_result_rule("result-order", reversed_items)


@pytest.mark.parametrize(
    "terms,needle",
    [
        ({}, "missing ['task']"),
        ({"task": 1.0, "bonus": 1.0}, "undeclared ['bonus']"),
        ({"other": 1.0}, "missing"),
    ],
)
def test_scored_result_carries_exactly_the_declared_terms(terms: dict, needle: str):
    message = expect_result_rule(
        "declared-terms",
        lambda request: RewardGroupResult(request.group_id, items_for(request, RewardProviderResult(terms))),
    )
    assert needle in message


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "1", None, True])
def test_terms_must_be_finite_numbers(value: Any):
    expect_result_rule(
        "finite-terms",
        lambda request: RewardGroupResult(
            request.group_id, items_for(request, RewardProviderResult({"task": value}))
        ),
    )


def test_skipped_result_must_not_carry_terms():
    expect_result_rule(
        "declared-terms",
        lambda request: RewardGroupResult(
            request.group_id, items_for(request, RewardProviderResult({"task": 1.0}, status="skipped"))
        ),
    )


def test_unknown_status_is_rejected():
    expect_result_rule(
        "result-status",
        lambda request: RewardGroupResult(
            request.group_id, items_for(request, RewardProviderResult({}, status="maybe"))
        ),  # type: ignore[arg-type]
    )


def test_undeclared_diagnostic_is_rejected():
    result = RewardProviderResult({"task": 1.0}, diagnostics=(MetricContribution("secret_sauce", 1.0),))
    message = expect_result_rule(
        "declared-diagnostics",
        lambda request: RewardGroupResult(request.group_id, items_for(request, result)),
    )
    assert "secret_sauce" in message


def test_non_finite_diagnostic_is_rejected():
    result = RewardProviderResult({"task": 1.0}, diagnostics=(MetricContribution("seen", math.nan),))
    expect_result_rule(
        "finite-diagnostics", lambda request: RewardGroupResult(request.group_id, items_for(request, result))
    )


def test_item_must_be_a_provider_result():
    expect_result_rule(
        "result-type",
        lambda request: RewardGroupResult(
            request.group_id,
            tuple(RewardCandidateResult(c.trajectory_id, 1.0) for c in request.candidates),  # type: ignore[arg-type]
        ),
    )


def test_skip_and_error_results_pass_with_reasons():
    def mixed(request: RewardGroupRequest) -> RewardGroupResult:
        first, second = request.candidates
        return RewardGroupResult(
            request.group_id,
            (
                RewardCandidateResult(first.trajectory_id, RewardProviderResult.skip("gold unparseable")),
                RewardCandidateResult(second.trajectory_id, RewardProviderResult.fail("timeout")),
            ),
        )

    result = bind_spec(recording_spec(Recording(mixed))).score_group("g", rollouts(2, reference="x"))
    assert [item.result.status for item in result.items] == ["skipped", "error"]
    assert result.items[1].result.reason == "timeout"


def test_provider_exception_is_wrapped_with_the_group():
    def boom(request: RewardGroupRequest) -> RewardGroupResult:
        raise ConnectionError("judge unreachable")

    bp = bind_spec(recording_spec(Recording(boom)))
    with pytest.raises(ProviderError, match=r"\[group 'g'\].*ConnectionError: judge unreachable") as caught:
        bp.score_group("g", rollouts(2, reference="x"))
    assert isinstance(caught.value.__cause__, ConnectionError)


# -- map_candidates ----------------------------------------------------------------------------


def test_map_candidates_scores_in_order_and_binds_params():
    def scorer(
        candidate: RewardCandidate, context: RewardContext, *, bonus: float = 0.0
    ) -> RewardProviderResult:
        return RewardProviderResult({"task": len(candidate.completion) + bonus})

    spec = RewardProviderSpec("lengthy", partial(map_candidates, scorer), (), "1", ("task",))
    result = bind_spec(spec, bonus=0.5).score_group("g", rollouts(2))
    assert [item.result.terms["task"] for item in result.items] == [8.5, 8.5]


def test_map_candidates_rejects_unknown_params_naming_them():
    def scorer(
        candidate: RewardCandidate, context: RewardContext, *, bonus: float = 0.0
    ) -> RewardProviderResult:
        return RewardProviderResult({"task": 0.0})

    with pytest.raises(TypeError, match=r"does not accept params \['bonsu'\].*accepts \['bonus'\]"):
        map_candidates(scorer, bonsu=1)


def test_map_candidates_turns_one_candidates_crash_into_its_error():
    def scorer(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
        if candidate.trajectory_id == "t1":
            raise ValueError("cannot parse")
        return RewardProviderResult({"task": 1.0})

    spec = RewardProviderSpec("fragile", partial(map_candidates, scorer), (), "1", ("task",))
    items = bind_spec(spec).score_group("g", rollouts(3)).items
    assert [item.result.status for item in items] == ["scored", "error", "scored"]
    assert items[1].result.reason == "ValueError: cannot parse"


def test_a_contract_error_inside_a_scorer_names_group_and_candidate():
    with pytest.raises(
        RewardContractError, match=r"\[group 'g', candidate 't0'\] exact-match needs a string reference"
    ):
        bound("exact-match").score_group("g", rollouts(2, reference=[1]))


def test_exact_match_options():
    rows = rollouts(1, reference="The  Answer")
    rows[0]["completion"] = " the answer "
    assert bound("exact-match").score_group("g", rows).items[0].result.terms["task"] == 1.0
    assert (
        bound("exact-match", case_sensitive=True).score_group("g", rows).items[0].result.terms["task"] == 0.0
    )
    assert (
        bound("exact-match", collapse_whitespace=False).score_group("g", rows).items[0].result.terms["task"]
        == 0.0
    )


def test_nonempty_and_constant():
    rows = rollouts(2)
    rows[1]["completion"] = " \n\t"
    assert [i.result.terms["task"] for i in bound("nonempty").score_group("g", rows).items] == [1.0, 0.0]
    assert [i.result.terms["task"] for i in bound("constant", value=0.25).score_group("g", rows).items] == [
        0.25,
        0.25,
    ]


# -- review findings: each was a hole before ---------------------------------------------------


def test_reserved_and_non_json_spec_fields_are_refused_at_registration():
    from rewardkit import CredentialRef, RegistrationError

    with pytest.raises(RegistrationError, match=r"\['sample_count'\] are reserved"):
        RewardProviderSpec("p", lambda: None, (), "1", ("task",), ("sample_count",))
    with pytest.raises(RegistrationError, match="semantic_identity is not JSON"):
        RewardProviderSpec(
            "p", lambda: None, (), "1", ("task",), semantic_identity={"key": CredentialRef("K")}
        )


def test_an_int_too_large_for_a_float_is_a_contract_error():
    expect_result_rule(
        "finite-terms",
        lambda request: RewardGroupResult(
            request.group_id, items_for(request, RewardProviderResult({"task": 10**400}))
        ),
    )


def test_negative_diagnostic_weight_is_refused():
    result = RewardProviderResult({"task": 1.0}, diagnostics=(MetricContribution("seen", 1.0, -1.0),))
    expect_result_rule(
        "finite-diagnostics", lambda request: RewardGroupResult(request.group_id, items_for(request, result))
    )


def test_reason_must_be_text():
    expect_result_rule(
        "result-reason",
        lambda request: RewardGroupResult(
            request.group_id, items_for(request, RewardProviderResult.skip(42))
        ),  # type: ignore[arg-type]
    )


def test_equal_non_json_inputs_are_reported_as_non_json():
    rows = rollouts(2)
    rows[0]["reference"], rows[1]["reference"] = {1, 2}, {1, 2}
    expect_rule("json-input", Recording(), rows)


def test_scorer_contract_errors_keep_their_rule():
    with pytest.raises(RewardContractError) as caught:
        bound("exact-match").score_group("g", rollouts(1, reference=[1]))
    assert caught.value.rule == "reference-type"
    assert str(caught.value).count("[group") == 1


def test_a_result_never_changes_after_it_is_built():
    # A read-only view of a dict the provider keeps is still the provider's to change: the result
    # takes a copy, so a result checked once stays what was checked.
    terms = {"task": 1.0}
    result = RewardProviderResult(MappingProxyType(terms))
    terms["task"] = "1.5"
    assert dict(result.terms) == {"task": 1.0}
    with pytest.raises(TypeError):
        result.terms["task"] = 2.0  # type: ignore[index]
