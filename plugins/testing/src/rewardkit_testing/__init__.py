"""Conformance kit for reward providers, a pytest plugin (``pip install rewardkit-testing``; from a checkout,
``pip install ./plugins/testing``).

Subclass ``RewardProviderTests``, set ``provider_name`` and return sample groups from ``cases()``
(example: docs/writing_providers.md, "Testing with the conformance kit"). The kit fails when a
sample gets another status or value than expected (an ``error`` where a score was expected fails
whatever its reason), when scoring is not repeatable or depends on a candidate's position in its
group, when it changes the rollouts it was given, or when malformed groups reach the provider.
Override ``params`` and ``catalog`` to configure the provider; ``deterministic = False`` for one that samples.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from rewardkit import (
    BoundProvider,
    ProviderEntry,
    RewardContractError,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    resolve_catalog,
)
from rewardkit.plugin import Status, moved_attribute

__all__ = ["Case", "RewardProviderTests", "Sample"]

# This package's path in the core before 0.2: an alias of it until 0.3 (``rewardkit.seam.moved``)
_OLD_PATH = "rewardkit.testing"


@dataclass(frozen=True)
class Sample:
    """One completion and what the provider must return for it: ``status``; ``value`` of its first term and
    ``terms`` by term name, both checked only when given, within ``RewardProviderTests.tolerance`` (which also
    bounds how much repeated and permuted scoring may differ: batched floating point may move)."""

    completion: str
    status: Status = "scored"
    value: float | None = None
    terms: Mapping[str, float] = field(default_factory=dict)
    finish_reason: str | None = "stop"
    completion_token_count: int | None = None


@dataclass(frozen=True)
class Case:
    """One group: its candidates' shared inputs, passed as a trainer would (lists and dicts as such; ``None``
    leaves one out), and its samples, scored together."""

    samples: Sequence[Sample]
    prompt: Any = None
    reference: Any = None
    name: str = ""


# What a candidate's result is compared on across runs: diagnostics and reasons may carry timings.
_Outcome = tuple[str, tuple[tuple[str, float], ...]]


def _outcome(result: RewardProviderResult) -> _Outcome:
    return result.status, tuple(sorted(result.terms.items()))


def _close(bound: BoundProvider) -> None:
    close = getattr(bound.provider, "close", None)
    if callable(close):  # worker processes and sandboxes must not outlive the test
        close()


class _Recorder:
    """Wraps a provider: counts calls and remembers each request as it looked before and after."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.changed: list[str] = []

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        self.calls += 1
        before = repr(request)
        result = self.inner.evaluate(request)
        if repr(request) != before:
            self.changed.append(f"before: {before}\nafter:  {request!r}")
        return result


class RewardProviderTests:
    """Contract checks for one provider of the catalog. Subclass, set ``provider_name``, give ``cases()``."""

    provider_name: ClassVar[str] = ""
    params: ClassVar[dict[str, Any]] = {}
    catalog: ClassVar[str | None] = None
    deterministic: ClassVar[bool] = True
    tolerance: ClassVar[float] = 1e-6

    def cases(self) -> Sequence[Case]:
        """Sample groups with expected results; override with inputs your provider understands. The default,
        four plain answers to "What is 1 + 1?" (reference ``"2"``) expected to score, suits only providers
        scoring any text."""
        return [
            Case(
                prompt="What is 1 + 1?",
                reference="2",
                samples=[Sample(f"The answer is {index}.", completion_token_count=5) for index in range(4)],
            )
        ]

    def _cases(self) -> list[Case]:
        cases = list(self.cases())
        if not cases or not all(case.samples for case in cases):
            pytest.fail(f"{type(self).__name__}.cases() must return at least one Case with samples")
        return cases

    @staticmethod
    def rollouts(case: Case, index: int = 0) -> list[dict[str, Any]]:
        """The rollouts a trainer would send for ``case``: fresh, mutable, ids ``c<index>-<k>``."""
        rows = []
        for position, sample in enumerate(case.samples):
            given: dict[str, Any] = {
                "prompt": copy.deepcopy(case.prompt),
                "reference": copy.deepcopy(case.reference),
                "finish_reason": sample.finish_reason,
                "completion_token_count": sample.completion_token_count,
            }
            row: dict[str, Any] = {"trajectory_id": f"c{index}-{position}", "completion": sample.completion}
            rows.append(row | {key: value for key, value in given.items() if value is not None})
        return rows

    def _outcomes(self, bound: BoundProvider, rows: list[dict[str, Any]]) -> dict[str, _Outcome]:
        result = bound.score_group("conformance", rows)
        return {item.trajectory_id: _outcome(item.result) for item in result.items}

    def _differing(self, expected: dict[str, _Outcome], got: dict[str, _Outcome]) -> list[str]:
        """Candidates whose status, term names or values (beyond ``tolerance``) differ."""

        def same(left: _Outcome, right: _Outcome) -> bool:
            return (
                left[0] == right[0]
                and [name for name, _ in left[1]] == [name for name, _ in right[1]]
                and all(
                    math.isclose(a, b, rel_tol=0.0, abs_tol=self.tolerance)
                    for (_, a), (_, b) in zip(left[1], right[1])
                )
            )

        return [f"{key}: {was} then {got[key]}" for key, was in expected.items() if not same(was, got[key])]

    @staticmethod
    def _label(case: Case, index: int) -> str:
        return f"case {index}" + (f" ({case.name})" if case.name else "")

    @pytest.fixture
    def entry(self) -> ProviderEntry:
        if not self.provider_name:
            pytest.fail(f"{type(self).__name__} must set provider_name")
        return resolve_catalog(self.catalog).entry(self.provider_name)

    @pytest.fixture
    def bound(self) -> Iterator[BoundProvider]:
        provider = self.bind()
        yield provider
        _close(provider)

    def bind(self) -> BoundProvider:
        """A new instance of the provider with ``params``; close it with its ``close()``, if any."""
        return resolve_catalog(self.catalog).bind(self.provider_name, self.params)

    def test_spec_declares_what_it_returns(self, entry: ProviderEntry) -> None:
        spec = entry.spec
        assert spec.terms, "a provider declares at least one term"
        assert spec.revision.strip(), "a provider declares a revision"
        assert len(entry.identity) == 64 and int(entry.identity, 16) >= 0

    def test_construction_is_deterministic_and_side_effect_free(self) -> None:
        threads_before = threading.active_count()
        first, second = self.bind(), self.bind()
        threads_after = threading.active_count()
        _close(first)
        _close(second)
        assert first.identity == second.identity
        assert threads_after == threads_before, "a factory must not start threads"

    def test_cases_expect_scores(self, entry: ProviderEntry) -> None:
        """Without a sample expected to score, an always-failing provider would pass the kit."""
        cases = self._cases()
        expected = [sample.status for case in cases for sample in case.samples]
        assert "scored" in expected, "cases() must include at least one sample expected to be scored"
        for index, case in enumerate(cases):
            for sample in case.samples:
                unknown = sorted(set(sample.terms) - set(entry.spec.terms))
                assert not unknown, f"{self._label(case, index)} expects undeclared terms {unknown}"
                if sample.status != "scored":
                    assert sample.value is None and not sample.terms, (
                        f"{self._label(case, index)}: a {sample.status} sample has no values to expect"
                    )

    def test_scores_each_case_as_expected(self, bound: BoundProvider) -> None:
        problems: list[str] = []
        term = bound.spec.default_term
        for index, case in enumerate(self._cases()):
            rows = self.rollouts(case, index)
            result = bound.score_group("conformance", rows, len(rows))
            for sample, row, item in zip(case.samples, rows, result.items):
                got = item.result
                where = f"{self._label(case, index)}, {row['trajectory_id']} ({sample.completion[:60]!r})"
                if got.status != sample.status:
                    reason = f": {got.reason}" if got.reason else ""
                    problems.append(f"{where}: expected {sample.status}, got {got.status}{reason}")
                    continue
                wanted = dict(sample.terms)
                if sample.value is not None:
                    wanted[term] = sample.value
                for name, value in wanted.items():
                    actual = got.terms.get(name)
                    if actual is None or not math.isclose(actual, value, rel_tol=0.0, abs_tol=self.tolerance):
                        problems.append(f"{where}: expected {name} = {value}, got {actual}")
        assert not problems, "the provider's results differ from the cases:\n" + "\n".join(problems)

    def test_scores_a_group_in_order(self, bound: BoundProvider) -> None:
        rollouts = self.rollouts(self._cases()[0])
        result = bound.score_group("conformance", rollouts, len(rollouts))
        assert [item.trajectory_id for item in result.items] == [row["trajectory_id"] for row in rollouts]
        for item in result.items:
            assert item.result.status in ("scored", "skipped", "error")

    def test_scoring_is_repeatable(self, bound: BoundProvider) -> None:
        if not self.deterministic:
            pytest.skip(f"{type(self).__name__} declares the provider non-deterministic")
        fresh = self.bind()
        try:
            for index, case in enumerate(self._cases()):
                first = self._outcomes(bound, self.rollouts(case, index))
                again = self._outcomes(bound, self.rollouts(case, index))
                other = self._outcomes(fresh, self.rollouts(case, index))
                label = self._label(case, index)
                changed = self._differing(first, again)
                assert not changed, f"{label}: scoring the same group twice gave different results: {changed}"
                changed = self._differing(first, other)
                assert not changed, f"{label}: another instance of the provider scored differently: {changed}"
        finally:
            _close(fresh)

    def test_group_order_does_not_matter(self, bound: BoundProvider) -> None:
        """Permuting a group permutes its results: no candidate's reward depends on its position."""
        if not self.deterministic:
            pytest.skip(f"{type(self).__name__} declares the provider non-deterministic")
        for index, case in enumerate(self._cases()):
            rows = self.rollouts(case, index)
            if len(rows) < 2:
                continue
            expected = self._outcomes(bound, rows)
            for order in (rows[::-1], rows[1:] + rows[:1]):
                permuted = self._outcomes(bound, [dict(row) for row in order])
                moved = self._differing(expected, permuted)
                assert not moved, f"{self._label(case, index)}: permuting the group changed results: {moved}"

    def test_inputs_are_not_mutated(self, bound: BoundProvider) -> None:
        recorder = _Recorder(bound.provider)
        watched = BoundProvider(bound.spec, recorder, bound.params, bound.identity)
        for index, case in enumerate(self._cases()):
            rows = self.rollouts(case, index)
            pristine = copy.deepcopy(rows)
            watched.score_group("conformance", rows)
            assert rows == pristine, f"{self._label(case, index)}: scoring changed the rollouts it was given"
        assert not recorder.changed, "the provider changed the request it was given:\n" + recorder.changed[0]

    def test_malformed_group_never_reaches_the_provider(self, bound: BoundProvider) -> None:
        recorder = _Recorder(bound.provider)
        guarded = BoundProvider(bound.spec, recorder, bound.params, bound.identity)
        rollouts = self.rollouts(self._cases()[0])
        with pytest.raises(RewardContractError):
            guarded.score_group("conformance", [*rollouts, dict(rollouts[0])])  # a duplicate id
        with pytest.raises(RewardContractError):
            guarded.score_group("conformance", rollouts, len(rollouts) + 1)  # an incomplete group
        assert recorder.calls == 0


def __getattr__(name: str) -> Any:
    # ``assert_attacks_hold``, which the kit held at its old path, moved to the audit distribution: the
    # core's table of moved names hands it out with its warning, or names the install line, until 0.3.
    try:
        return moved_attribute(_OLD_PATH, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
