"""The one-pass strategy: a batch whose providers are all cheap pointwise scorers, scored as columns.

When every provider was built by ``map_candidates`` and is ``cheap``, a verdict depends only on the
candidate and its group's common inputs, so the batch is scored as flat columns in the calling thread,
without per-group request and result objects or the provider and adapter call layers. Nothing is
checked less or decided here: the checks are the general strategy's own (``check_one_prompt``, the
bound adapter's candidate, common-input and result checks), in the same order on the same values, and
scoring, composing and finishing go through the same ``score_candidates``, ``read_outcomes``,
``compose_parts`` and worker, so either strategy raises the same error and scores the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from operator import attrgetter, itemgetter
from typing import Any

from rewardkit.contracts import RewardCandidate, RewardContext, RewardProviderResult, build_context
from rewardkit.scoring import cancellation
from rewardkit.scoring.batch_input import GroupLike, batch_parts, check_one_prompt, chunks, located
from rewardkit.scoring.bound_provider import BoundProvider
from rewardkit.scoring.composition import (
    ComposedParts,
    CompositionRowError,
    RewardSpec,
    compose_parts,
    read_outcomes,
)
from rewardkit.scoring.pointwise import MappedProvider, score_candidates
from rewardkit.scoring.recent import LastTwo
from rewardkit.scoring.scored import ScoredBatch
from rewardkit.scoring.scored_columns import ScoredColumns

Admission = Callable[[int], AbstractContextManager[Any]]
Completion = Callable[[ScoredColumns], ScoredBatch]
_first = itemgetter(0)
_trajectory_id = attrgetter("trajectory_id")


def scorable_in_one_pass(bound: BoundProvider) -> bool:
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
        self.checked: LastTwo[object, bool] = bound.results_memo()  # for the whole batch


class PointwiseBatch:
    """Scores batches for a spec whose providers all pass ``scorable_in_one_pass``."""

    def __init__(
        self,
        spec: RewardSpec,
        providers: Mapping[str, BoundProvider],
        components: Sequence[tuple[str, str, str]],
        *,
        group_size: int | None,
        complete: Completion,
    ) -> None:
        """``components``: each component's name, provider key and term, in the spec's order;
        ``complete`` is the worker's."""
        self.spec = spec
        self.providers = dict(providers)
        self.components = list(components)
        self.group_size = group_size
        self.complete = complete

    def score(
        self,
        groups: Sequence[GroupLike],
        admit: Admission,
        max_chunk_weight: int | None,
        paused: Callable[[], AbstractContextManager[Any]],
        complete: Completion | None = None,
    ) -> ScoredBatch:
        """Score, compose and ``complete`` a batch (the constructor's by default), entering
        ``admit(weight)`` around each chunk and ``paused()`` around all work that allocates per rollout."""
        finish = complete or self.complete
        scorers = [_Scorer(key, bound) for key, bound in self.providers.items()]
        group_ids: list[str] = []
        sizes: list[int] = []
        candidates: list[RewardCandidate] = []
        composed = ComposedParts([], [], [])  # every candidate's total, gate flag and breakdown
        statuses: list[list[str]] = [[] for _ in self.components]
        values: list[list[float]] = [[] for _ in self.components]

        def columns() -> ScoredColumns:
            ids = list(map(_trajectory_id, candidates))
            said = {scorer.key: scorer.results for scorer in scorers}
            return ScoredColumns(group_ids, sizes, ids, composed, statuses, values, said)

        runs = list(chunks(batch_parts(groups), 1, max_chunk_weight))
        for number, (chunk, weight) in enumerate(runs, 1):
            start, first_group = len(candidates), len(group_ids)
            cancellation.current().raise_if_cancelled()
            # Cheap work: each chunk is scored and composed in one admission and one pause, and the
            # last also finishes the batch there.
            with admit(weight), paused():
                self._score_chunk(chunk, scorers, group_ids, sizes, candidates)
                try:
                    part = self._compose(scorers, start, statuses, values)
                    composed.totals.extend(part.totals)
                    composed.gated.extend(part.gated)
                    composed.breakdowns.extend(part.breakdowns)
                except CompositionRowError as error:
                    chunk_groups = list(zip(group_ids[first_group:], sizes[first_group:]))
                    ids = [candidate.trajectory_id for candidate in candidates[start:]]
                    raise located(error, chunk_groups, ids) from error
                if number == len(runs):
                    scored = finish(columns())
                    # Freed while the collector is still paused, the batch's intermediate objects
                    # are never traversed by it: when it resumes it finds only the result.
                    del scorers, candidates, composed, statuses, values, runs, chunk
                    return scored
        with paused():  # an empty batch
            return finish(columns())

    def _score_chunk(
        self,
        chunk: list[tuple[str, Sequence[Mapping[str, Any]]]],
        scorers: list[_Scorer],
        group_ids: list[str],
        sizes: list[int],
        candidates_out: list[RewardCandidate],
    ) -> None:
        """Check and score every group of a chunk in the general strategy's order: per group the
        prompt check, then per provider its inputs, scoring and checks."""
        scope = cancellation.current()
        group_size = self.group_size
        first = scorers[0].bound
        for group_id, rollouts in chunk:
            scope.raise_if_cancelled()  # a cancelled request's queued groups are dropped
            check_one_prompt(group_id, rollouts)
            candidates = first.candidates(group_id, rollouts, group_size)
            # Providers that need the same inputs share one context (and the first of them reports
            # a missing or inconsistent input, as it would on the general strategy).
            contexts: dict[tuple[bool, bool], RewardContext] = {}
            for scorer in scorers:
                bound = scorer.bound
                if bound is not first:  # the first checked its fields when it built the candidates
                    bound.check_fields(group_id, candidates)
                context = contexts.get(scorer.needs)
                if context is None:
                    inputs = bound.common_inputs(group_id, rollouts, candidates)
                    context = contexts[scorer.needs] = build_context(*inputs)
                results = score_candidates(scorer.scorer, scorer.params, group_id, candidates, context)
                bound.check_provider_results(group_id, candidates, results, scorer.checked)
                scorer.results.extend(results)
            group_ids.append(group_id)
            sizes.append(len(candidates))
            candidates_out.extend(candidates)

    def _compose(
        self, scorers: list[_Scorer], start: int, statuses: list[list[str]], values: list[list[float]]
    ) -> ComposedParts:
        """Compose the candidates from ``start`` on, and add what each component said to its columns."""
        columns = []
        for (_, key, term), column_statuses, column_values in zip(self.components, statuses, values):
            results = next(scorer.results for scorer in scorers if scorer.key == key)
            column = read_outcomes(results[start:], term)
            column_statuses.extend(map(_first, column))
            column_values.extend([value for status, value, _ in column if status == "scored"])
            columns.append(column)
        return compose_parts(self.spec, columns)
