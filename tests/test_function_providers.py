"""``@rewardkit.provider``: a plain function becomes a spec that behaves like any lifted scorer."""

from __future__ import annotations

import math
from typing import Any

import pytest

import rewardkit
from rewardkit import RegistrationError, RewardCandidate, RewardContext, RewardProviderResult
from rewardkit.contracts.identity import callables_behind, code_fingerprint
from rewardkit.scoring.bound_provider import BoundProvider
from rewardkit.seam.catalog import ProviderEntry
from rewardkit.seam.plugins import PluginInfo


@rewardkit.provider(name="exact", revision="3")
def exact(completion: str, reference: str, *, strip: bool = True) -> float:
    """1.0 when the completion equals the reference.

    More text that is not the description.
    """
    return float((completion.strip() if strip else completion) == reference)


def score(spec: rewardkit.RewardProviderSpec, completions: list[Any], **params: Any) -> list[Any]:
    bound = BoundProvider(spec, spec.factory(**params), params, "test")
    rows = [
        {"trajectory_id": f"t{k}", "completion": text, "prompt": "p", "reference": "42"}
        for k, text in enumerate(completions)
    ]
    return [item.result for item in bound.score_group("g", rows).items]


def test_the_spec_is_read_from_the_function():
    assert isinstance(exact, rewardkit.RewardProviderSpec)
    assert (exact.name, exact.revision, exact.needs, exact.terms) == (
        "exact",
        "3",
        ("reference",),
        ("score",),
    )
    assert exact.description == "1.0 when the completion equals the reference."
    entry = ProviderEntry(exact, PluginInfo("t", "t", "0", builtin=False))
    # inputs are bound by the framework; only the function's own params are configurable
    assert entry.describe()["params"] == {"strip": {"expects": "true or false", "default": True}}


def test_floats_are_the_term_and_params_reach_the_function():
    assert [result.terms["score"] for result in score(exact, [" 42 ", "41"])] == [1.0, 0.0]
    assert score(exact, [" 42 "], strip=False)[0].terms["score"] == 0.0
    with pytest.raises(TypeError, match=r"does not accept params \['strp'\].*it accepts \['strip'\]"):
        exact.factory(strp=False)


def test_return_values_map_to_statuses():
    @rewardkit.provider(name="returns", revision="1", terms=("a",))
    def returns(completion: str) -> Any:
        return {
            "none": None,
            "nan": math.nan,
            "bool": True,
            "result": RewardProviderResult.skip("mine"),
            "mapping": {"a": 0.5},
            "int": 2,
            "mapping-bool": {"a": True},
            "mapping-str": {"a": "0.5"},
            "mapping-nan": {"a": math.nan},
            "mapping-key": {1: 0.5},
        }[completion]

    texts = ("none", "nan", "bool", "result", "mapping", "int", "mapping-bool", "mapping-str", "mapping-nan")
    results = {text: score(returns, [text])[0] for text in (*texts, "mapping-key")}
    assert results["none"].status == "skipped" and "returned None" in results["none"].reason
    assert results["nan"].status == "error" and "returned nan" in results["nan"].reason
    assert results["bool"].status == "error" and "returned bool" in results["bool"].reason
    assert results["result"].reason == "mine"
    assert results["mapping"].terms["a"] == 0.5 and results["int"].terms["a"] == 2.0
    # a mapping's values are held to the rules of one number: that candidate's error, never a score
    assert (
        results["mapping-bool"].status == "error"
        and "bool True for term 'a'" in results["mapping-bool"].reason
    )
    assert results["mapping-str"].status == "error" and "str '0.5'" in results["mapping-str"].reason
    assert results["mapping-nan"].status == "error" and "nan for term 'a'" in results["mapping-nan"].reason
    assert results["mapping-key"].status == "error" and "term named 1" in results["mapping-key"].reason


def test_an_exception_is_that_candidates_error():
    @rewardkit.provider(name="crashes", revision="1")
    def crashes(completion: str) -> float:
        return 1 / len(completion)

    first, second = score(crashes, ["", "ab"])
    assert first.status == "error" and first.reason.startswith("ZeroDivisionError")
    assert second.terms["score"] == 0.5


def test_candidate_and_context_inputs_and_multiple_terms():
    @rewardkit.provider(name="both", revision="1", needs=("prompt",), terms=("length", "truncated"))
    def both(candidate: RewardCandidate, context: RewardContext) -> dict[str, float]:
        assert context.prompt == "p" and context.reference is None
        return {"length": float(len(candidate.completion)), "truncated": float(candidate.is_length_truncated)}

    assert both.needs == ("prompt",)
    assert dict(score(both, ["abc"])[0].terms) == {"length": 3.0, "truncated": 0.0}

    @rewardkit.provider(name="one-number", revision="1", terms=("a", "b"))
    def one_number(completion: str) -> float:
        return 1.0

    result = score(one_number, ["x"])[0]
    assert result.status == "error" and "declares terms ['a', 'b']" in result.reason


def test_needs_and_signature_mistakes_are_registration_errors():
    with pytest.raises(RegistrationError, match=r"takes \['reference'\] but needs=\(\) does not name them"):

        @rewardkit.provider(name="bad", revision="1", needs=())
        def bad(completion: str, reference: str) -> float:
            return 0.0

    with pytest.raises(RegistrationError, match="positional-only or \\*args"):

        @rewardkit.provider(name="bad", revision="1")
        def star(*completions: str) -> float:
            return 0.0

    with pytest.raises(RegistrationError, match="invalid provider name"):
        rewardkit.provider(name="Bad Name", revision="1")(lambda completion: 0.0)


def test_the_code_fingerprint_covers_the_functions_package():
    # the decorated function, not rewardkit's wrapper, decides which files are hashed
    files = {
        getattr(target, "__code__", None) and target.__code__.co_filename
        for target in callables_behind(exact.factory)
    }
    assert __file__ in files
    assert code_fingerprint(exact) != code_fingerprint(rewardkit.resolve_catalog().entry("nonempty").spec)
