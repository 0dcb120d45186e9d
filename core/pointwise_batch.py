"""One pass over a batch whose providers are all cheap pointwise scorers.

When every provider of a spec was built by ``map_candidates`` and declares itself ``cheap``, a
candidate's verdict depends only on the candidate and its group's common inputs. The batch is then
scored as flat columns, in the calling thread: each group is checked and its candidates built, each
scorer runs over them, each result is checked, and whole chunks are composed, annotated and
reported at once. What this leaves out is bookkeeping: the per-group request and result objects,
the provider and adapter call layers, and a second walk over every result to report it.

Nothing is checked less. The checks are the general path's own functions (``check_one_prompt``,
the bound adapter's candidate, common-input and result checks, ``compose_parts``), called in the
same order on the same values, so a bad batch raises the same error on either path and a good one
scores the same. ``tests/test_pointwise_batch.py`` holds the two paths to that on generated batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from operator import attrgetter, itemgetter
from typing import Any

from rewardkit import cancellation
from rewardkit.advantages import Scaling, StdKind, group_advantages
from rewardkit.batch_report import ComponentColumn, batch_report
from rewardkit.binding import NOTHING_CHECKED, BoundProvider
from rewardkit.composition import ComposedParts, CompositionRowError, RewardSpec, compose_parts
from rewardkit.contracts import (
    MetricContribution,
    RewardCandidate,
    RewardContext,
    RewardProviderResult,
    build_context,
)
from rewardkit.errors import RewardContractError
from rewardkit.groups import batch_parts, check_one_prompt, chunks, located
from rewardkit.pointwise import MappedProvider
from rewardkit.provenance import ProviderRecord
from rewardkit.scored import ScoredBatch, ScoredCandidate, ScoredGroup

Admission = Callable[[int], AbstractContextManager[Any]]
_new_tuple = tuple.__new__
_first = itemgetter(0)
_trajectory_id = attrgetter("trajectory_id")


def is_pointwise(bound: BoundProvider) -> bool:
    """Whether a bound provider can be scored here: a cheap ``map_candidates`` scorer with no media."""
    return bound.spec.cheap and type(bound.provider) is MappedProvider and "media" not in bound.spec.needs


class _Scorer:
    """One provider of the spec, as this pass calls it."""

    __slots__ = ("bound", "checked", "key", "needs", "params", "results", "scorer")

    def __init__(self, key: str, bound: BoundProvider) -> None:
        provider = bound.provider
        assert type(provider) is MappedProvider
        self.key = key
        self.bound = bound
        self.scorer = provider.scorer
        self.params = provider.params
        self.needs = ("prompt" in bound.spec.needs, "reference" in bound.spec.needs)
        self.results: list[RewardProviderResult] = []  # one per candidate of the batch, in order
        # check_provider_results's memo of results already found valid
        self.checked: tuple[object, object] = (NOTHING_CHECKED, NOTHING_CHECKED)


class PointwiseBatch:
    """Scores batches for a spec whose providers all pass ``is_pointwise``."""

    def __init__(
        self,
        spec: RewardSpec,
        providers: Mapping[str, BoundProvider],
        components: Sequence[tuple[str, str, str]],
        *,
        group_size: int | None,
        namespace: str,
        scaling: Scaling,
        advantage_std: StdKind,
        advantage_eps: float,
        records: tuple[ProviderRecord, ...],
    ) -> None:
        """``components`` gives each component's name, provider key and term, in the spec's order."""
        self.spec = spec
        self.providers = dict(providers)
        self.components = list(components)
        self.group_size = group_size
        self.namespace = namespace
        self.scaling = scaling
        self.advantage_std = advantage_std
        self.advantage_eps = advantage_eps
        self.records = records
        self._diagnosing = any(bound.spec.diagnostics for bound in self.providers.values())

    def score(
        self,
        groups: Sequence[Any],
        admit: Admission,
        max_chunk_weight: int | None,
        paused: Callable[[], AbstractContextManager[Any]],
    ) -> ScoredBatch:
        """Score, compose, annotate and report a batch; ``admit(weight)`` is entered around each
        chunk's scoring, and ``paused()`` around all work that allocates per rollout."""
        scorers = [_Scorer(key, bound) for key, bound in self.providers.items()]
        group_ids: list[str] = []
        sizes: list[int] = []
        candidates: list[RewardCandidate] = []
        composed = ComposedParts([], [], [])  # every candidate's total, gate flag and breakdown
        statuses: list[list[str]] = [[] for _ in self.components]
        values: list[list[float]] = [[] for _ in self.components]
        runs = list(chunks(batch_parts(groups), 1, max_chunk_weight))
        for number, (chunk, weight) in enumerate(runs, 1):
            start, first_group = len(candidates), len(group_ids)
            cancellation.current().raise_if_cancelled()
            # Cheap work: each chunk is scored and composed in one admission and one pause, and the
            # last also finishes the batch there.
            with admit(weight), paused():
                self._score_chunk(chunk, scorers, group_ids, sizes, candidates)
                try:
                    for column, part in zip(composed, self._compose(scorers, start, statuses, values)):
                        column.extend(part)
                except CompositionRowError as error:
                    chunk_groups = list(zip(group_ids[first_group:], sizes[first_group:]))
                    ids = [candidate.trajectory_id for candidate in candidates[start:]]
                    raise located(error, chunk_groups, ids) from error
                if number == len(runs):
                    ids = list(map(_trajectory_id, candidates))
                    scored = self._finish(scorers, group_ids, sizes, ids, composed, statuses, values)
                    # Freed while the collector is still paused, the batch's intermediate objects
                    # are never traversed by it: when it resumes it finds only the result.
                    del scorers, candidates, composed, statuses, values, ids, runs, chunk
                    return scored
        with paused():  # an empty batch
            return self._finish(scorers, group_ids, sizes, [], composed, statuses, values)

    def _score_chunk(
        self,
        chunk: list[tuple[str, Sequence[Mapping[str, Any]]]],
        scorers: list[_Scorer],
        group_ids: list[str],
        sizes: list[int],
        candidates_out: list[RewardCandidate],
    ) -> None:
        """Check every group of a chunk and score its candidates with every scorer, in the general
        path's order: per group, the prompt check, then per provider its inputs, scoring and checks."""
        scope = cancellation.current()
        group_size = self.group_size
        first = scorers[0].bound
        for group_id, rollouts in chunk:
            scope.raise_if_cancelled()  # a cancelled request's queued groups are dropped
            check_one_prompt(group_id, rollouts)
            candidates = first.candidates(group_id, rollouts, group_size)
            # Providers that need the same inputs share one context (and the first of them reports
            # a missing or inconsistent input, as it would on the general path).
            contexts: dict[tuple[bool, bool], RewardContext] = {}
            for scorer in scorers:
                bound = scorer.bound
                if bound is not first:  # the first checked its fields when it built the candidates
                    bound.check_fields(group_id, candidates)
                context = contexts.get(scorer.needs)
                if context is None:
                    inputs = bound.common_inputs(group_id, rollouts, candidates)
                    context = contexts[scorer.needs] = build_context(*inputs)
                function, params, results = scorer.scorer, scorer.params, []
                for candidate in candidates:
                    try:
                        # Without params, a plain call: `**{}` still builds a keyword dict per call.
                        if params:
                            result = function(candidate, context, **params)
                        else:
                            result = function(candidate, context)
                    except RewardContractError as error:
                        raise MappedProvider.located(error, group_id, candidate)  # noqa: B904 - it chains
                    except Exception as error:  # one candidate's crash is that candidate's error
                        result = RewardProviderResult.fail(f"{type(error).__name__}: {error}")
                    results.append(result)
                scorer.checked = bound.check_provider_results(group_id, candidates, results, scorer.checked)
                scorer.results.extend(results)
            group_ids.append(group_id)
            sizes.append(len(candidates))
            candidates_out.extend(candidates)

    def _compose(
        self,
        scorers: list[_Scorer],
        start: int,
        statuses: list[list[str]],
        values: list[list[float]],
    ) -> ComposedParts:
        """Compose the candidates from ``start`` on, and add what each component said to its columns."""
        columns = []
        for (_, key, term), column_statuses, column_values in zip(self.components, statuses, values):
            results = next(scorer.results for scorer in scorers if scorer.key == key)
            column: list[tuple[str, Any, str | None]] = []
            # A yes/no rule returns one of two shared (immutable) results: each is read once.
            last: object = NOTHING_CHECKED
            before: object = NOTHING_CHECKED
            last_outcome = before_outcome = None
            for result in results[start:]:
                if result is last:
                    outcome = last_outcome
                elif result is before:
                    outcome = before_outcome
                else:
                    status = result.status
                    if status == "scored":
                        value = result.terms[term]
                        outcome = (status, value if type(value) is float else float(value), result.reason)
                    else:
                        outcome = (status, None, result.reason)
                    before, before_outcome, last, last_outcome = last, last_outcome, result, outcome
                column.append(outcome)
            column_statuses.extend(map(_first, column))
            column_values.extend([value for status, value, _ in column if status == "scored"])
            columns.append(column)
        return compose_parts(self.spec, columns)

    def _finish(
        self,
        scorers: list[_Scorer],
        group_ids: list[str],
        sizes: list[int],
        ids: list[str],
        composed: ComposedParts,
        statuses: list[list[str]],
        values: list[list[float]],
    ) -> ScoredBatch:
        if all(size == 1 for size in sizes):  # groups of one (OpenRLHF's shape): nothing to be relative to
            flat_advantages = [0.0] * len(ids)
        else:
            totals: list[list[float | None]] = []
            position = 0
            for size in sizes:
                totals.append(composed.totals[position : position + size])
                position += size
            advantages = group_advantages(
                totals, self.scaling, std=self.advantage_std, eps=self.advantage_eps
            )
            flat_advantages = [advantage for group in advantages for advantage in group]
        report = batch_report(
            self.namespace,
            {scorer.key: scorer.bound.name for scorer in scorers},
            len(ids),
            self._diagnostics(scorers) if self._diagnosing else (),
            [
                ComponentColumn(name, column_statuses, column_values)
                for (name, _, _), column_statuses, column_values in zip(self.components, statuses, values)
            ],
            composed.totals,
            composed.gated,
            flat_advantages,
        )
        per_candidate = self._candidate_diagnostics(scorers, len(ids))
        scored = [
            _new_tuple(ScoredCandidate, (trajectory_id, total, gated, breakdown, advantage, diagnostics))
            for trajectory_id, total, gated, breakdown, advantage, diagnostics in zip(
                ids, *composed, flat_advantages, per_candidate
            )
        ]
        groups = []
        position = 0
        for group_id, size in zip(group_ids, sizes):
            groups.append(_new_tuple(ScoredGroup, (group_id, tuple(scored[position : position + size]))))
            position += size
        return ScoredBatch(tuple(groups), report.as_dict(), self.records, report.weights())

    @staticmethod
    def _diagnostics(scorers: list[_Scorer]) -> Iterator[tuple[str, Sequence[MetricContribution]]]:
        """``(provider key, contributions)`` per candidate, in the general path's order."""
        count = len(scorers[0].results)
        for index in range(count):
            for scorer in scorers:
                yield scorer.key, scorer.results[index].diagnostics

    def _candidate_diagnostics(self, scorers: list[_Scorer], count: int) -> list[dict[str, dict[str, float]]]:
        if not self._diagnosing:
            return [{} for _ in range(count)]
        out = []
        for index in range(count):
            found: dict[str, dict[str, float]] = {}
            for scorer in scorers:
                diagnostics = scorer.results[index].diagnostics
                if diagnostics:
                    found[scorer.bound.name] = {item.name: item.value for item in diagnostics}
            out.append(found)
        return out
