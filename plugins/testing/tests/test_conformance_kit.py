"""The conformance kit fails providers that break the contract, and passes one that keeps it.

Each test writes a provider package's test module (its providers in a run-bound catalog, its kit
classes) and runs pytest on it in process; the outcome of every kit test is then checked by name.
"""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

PROVIDERS = """
import itertools

from rewardkit import RewardGroupResult, RewardCandidateResult, RewardProviderResult, provider
from rewardkit.contracts import RewardProviderSpec
from rewardkit_testing import Case, RewardProviderTests, Sample


@provider(name="good", revision="1")
def good(completion: str, reference: str) -> float:
    return float(completion.strip() == reference)


@provider(name="divides-by-zero", revision="1")
def divides_by_zero(completion: str, reference: str) -> float:
    return float(completion == reference) / 0


_calls = itertools.count()


@provider(name="drifts", revision="1")
def drifts(completion: str) -> float:
    return float(next(_calls) % 2)


class _ByPosition:
    def evaluate(self, request):
        items = [
            RewardCandidateResult(c.trajectory_id, RewardProviderResult({"score": float(k == 0)}))
            for k, c in enumerate(request.candidates)
        ]
        return RewardGroupResult(request.group_id, tuple(items))


class _Mutating:
    def evaluate(self, request):
        object.__setattr__(request.context, "reference", "changed")
        items = [RewardCandidateResult(c.trajectory_id, RewardProviderResult({"score": 1.0}))
                 for c in request.candidates]
        return RewardGroupResult(request.group_id, tuple(items))


def catalog():
    return [
        good,
        divides_by_zero,
        drifts,
        RewardProviderSpec("by-position", _ByPosition, (), "1", ("score",)),
        RewardProviderSpec("mutating", _Mutating, ("reference",), "1", ("score",)),
    ]


def answers():
    return [Case(reference="42", samples=[Sample("42", value=1.0), Sample("41", value=0.0), Sample("4")])]
"""

KIT_TESTS = (
    "test_spec_declares_what_it_returns",
    "test_construction_is_deterministic_and_side_effect_free",
    "test_cases_expect_scores",
    "test_scores_each_case_as_expected",
    "test_scores_a_group_in_order",
    "test_scoring_is_repeatable",
    "test_group_order_does_not_matter",
    "test_inputs_are_not_mutated",
    "test_malformed_group_never_reaches_the_provider",
)


def run_kit(pytester: pytest.Pytester, module: str, classes: str) -> dict[str, dict[str, str]]:
    """Run the kit classes of ``classes`` on the providers above; outcome by class, then test."""
    source = PROVIDERS + textwrap.dedent(classes).replace("CATALOG", f"{module}:catalog")
    pytester.makepyfile(**{module: source})
    recorded = pytester.inline_run("-p", "no:cacheprovider")
    outcomes: dict[str, dict[str, str]] = {}
    for report in recorded.getreports("pytest_runtest_logreport"):
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            _, cls, test = report.nodeid.split("::")
            outcomes.setdefault(cls, {})[test] = report.outcome
    return outcomes


def failing(outcomes: dict[str, str]) -> set[str]:
    assert set(outcomes) == set(KIT_TESTS), outcomes
    return {test for test, outcome in outcomes.items() if outcome == "failed"}


def test_the_kit_fails_a_provider_that_errors_on_every_candidate(pytester: pytest.Pytester) -> None:
    outcomes = run_kit(
        pytester,
        "test_kit_zero_division",
        """
        class TestDividesByZero(RewardProviderTests):
            provider_name = "divides-by-zero"
            catalog = "CATALOG"

            def cases(self):
                return answers()


        class TestDividesByZeroOnDefaultCases(RewardProviderTests):
            provider_name = "divides-by-zero"
            catalog = "CATALOG"
        """,
    )
    assert failing(outcomes["TestDividesByZero"]) == {"test_scores_each_case_as_expected"}
    assert failing(outcomes["TestDividesByZeroOnDefaultCases"]) == {"test_scores_each_case_as_expected"}


def test_the_failure_names_the_candidate_and_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_kit_message=PROVIDERS
        + textwrap.dedent(
            """
            class TestDividesByZero(RewardProviderTests):
                provider_name = "divides-by-zero"
                catalog = "test_kit_message:catalog"

                def cases(self):
                    return answers()
            """
        )
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-k", "each_case")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*case 0, c0-0 ('42'): expected scored, got error: ZeroDivisionError: float division by zero*"]
    )


def test_the_kit_fails_wrong_values_drift_position_and_mutation(pytester: pytest.Pytester) -> None:
    outcomes = run_kit(
        pytester,
        "test_kit_broken",
        """
        class TestWrongValue(RewardProviderTests):
            provider_name = "good"
            catalog = "CATALOG"

            def cases(self):
                return [Case(reference="42", samples=[Sample("42", value=0.0), Sample("41")])]


        class TestNothingExpectedToScore(RewardProviderTests):
            provider_name = "divides-by-zero"
            catalog = "CATALOG"

            def cases(self):
                return [Case(reference="42", samples=[Sample("42", status="error")])]


        class TestDrifts(RewardProviderTests):
            provider_name = "drifts"
            catalog = "CATALOG"

            def cases(self):
                return [Case(samples=[Sample("a"), Sample("b"), Sample("c")])]


        class TestByPosition(RewardProviderTests):
            provider_name = "by-position"
            catalog = "CATALOG"

            def cases(self):
                first, rest = Sample("a", value=1.0), [Sample("b", value=0.0), Sample("c", value=0.0)]
                return [Case(samples=[first, *rest])]


        class TestMutating(RewardProviderTests):
            provider_name = "mutating"
            catalog = "CATALOG"

            def cases(self):
                return [Case(reference="42", samples=[Sample("42"), Sample("41")])]
        """,
    )
    assert failing(outcomes["TestWrongValue"]) == {"test_scores_each_case_as_expected"}
    # the 1/0 provider passes only when nothing is expected to score, and the kit refuses that
    assert failing(outcomes["TestNothingExpectedToScore"]) == {"test_cases_expect_scores"}
    assert {"test_scoring_is_repeatable", "test_group_order_does_not_matter"} <= failing(
        outcomes["TestDrifts"]
    )
    assert failing(outcomes["TestByPosition"]) == {"test_group_order_does_not_matter"}
    assert failing(outcomes["TestMutating"]) == {"test_inputs_are_not_mutated"}


def test_the_kit_passes_a_provider_that_keeps_the_contract(pytester: pytest.Pytester) -> None:
    outcomes = run_kit(
        pytester,
        "test_kit_good",
        """
        class TestGood(RewardProviderTests):
            provider_name = "good"
            catalog = "CATALOG"

            def cases(self):
                return answers()


        class TestGoodSampling(TestGood):
            deterministic = False
        """,
    )
    assert outcomes["TestGood"] == dict.fromkeys(KIT_TESTS, "passed")
    sampling = outcomes["TestGoodSampling"]
    assert sampling["test_scoring_is_repeatable"] == sampling["test_group_order_does_not_matter"] == "skipped"
    assert failing(sampling) == set()
