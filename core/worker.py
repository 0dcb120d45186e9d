"""``RewardWorker``: scores whole groups under a ``RewardSpec`` as one rollback-safe transaction.

The worker binds every component's provider at construction (preflight), refuses provider-name
and optimized-term collisions, then for a batch: scores every group through the bound adapter,
composes each candidate, computes group-relative advantages from ``final`` only, and builds the
report. ``evaluate`` does all of that without touching its inputs; ``process`` also writes
``reward`` and ``advantage`` into the trainer's trajectory mappings, and restores every one of them
if any stage fails, so a batch is either fully scored or exactly as it was.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from concurrent.futures import Executor, Future, wait
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from rewardkit import cancellation
from rewardkit.advantages import EPSILON, SCALINGS, Scaling, StdKind, group_advantages
from rewardkit.batch_report import ComponentColumn, batch_report
from rewardkit.binding import BoundProvider
from rewardkit.catalog import Catalog
from rewardkit.charges import voided_charges
from rewardkit.collector import collector_paused
from rewardkit.composition import Composition, CompositionRowError, RewardSpec, compose_columns
from rewardkit.contracts import KNOWN_NEEDS, MetricContribution, RewardGroupResult
from rewardkit.errors import (
    PreflightError,
    ProviderError,
    RequestCancelled,
    RewardkitError,
)
from rewardkit.groups import (
    GroupLike,
    as_batch,
    batch_parts,
    check_one_prompt,
    chunks,
    group_parts,
    located,
)
from rewardkit.identity import canonical_json
from rewardkit.metrics import Report, metric_name
from rewardkit.pointwise_batch import PointwiseBatch, is_pointwise
from rewardkit.provenance import record_of
from rewardkit.scored import ScoredBatch, ScoredCandidate, ScoredGroup

REWARD_FIELDS = ("reward", "advantage")
_ABSENT = object()
_new_tuple = tuple.__new__


@dataclass(frozen=True)
class _Component:
    name: str
    provider_key: str
    term: str


# Called with a group's rollout count before it is scored; waits for capacity (back-pressure).
Admission = Callable[[int], AbstractContextManager[Any]]


def _no_admission(weight: int) -> AbstractContextManager[Any]:
    return nullcontext()


class _BatchFailed(RequestCancelled):
    """A chunk stopped because another chunk of its batch failed (never what the caller sees)."""


# Chunks a batch is cut into for worker threads: enough to keep every thread busy when groups take
# uneven time (a sandbox that runs to its timeout), few enough that hand-offs cost nothing.
CHUNKS_PER_BATCH = 64


class RewardWorker:
    """Scores batches of complete groups with one ``RewardSpec``."""

    def __init__(
        self,
        spec: RewardSpec,
        catalog: Catalog,
        *,
        group_size: int | None,
        namespace: str = "train",
        scaling: Scaling = "group",
        advantage_std: StdKind = "sample",
        advantage_eps: float = EPSILON,
        available_inputs: Sequence[str] = KNOWN_NEEDS,
        runtime: Mapping[str, Any] | None = None,
    ) -> None:
        metric_name(namespace)  # validates the namespace
        if scaling not in SCALINGS:
            raise PreflightError(f"advantage scaling must be one of {SCALINGS}, got {scaling!r}")
        if group_size is not None and (type(group_size) is not int or group_size < 1):
            raise PreflightError(f"group size must be a positive integer or None, got {group_size!r}")
        self.namespace = namespace
        self.scaling = scaling
        self.advantage_std = advantage_std
        self.advantage_eps = advantage_eps
        self.group_size = group_size
        self.catalog = catalog
        self.providers: dict[str, BoundProvider] = {}
        owners: dict[str, tuple[str, str]] = {}  # provider name -> (params key, first component)
        keys: dict[str, str] = {}  # component name -> provider key
        for component in spec.components:
            # Keyed by the normalised params: 6 and 6.0 of a float param are one configuration.
            params_key = canonical_json(catalog.normalise(component.provider, component.params))
            key = f"{component.provider}|{params_key}"
            keys[component.name] = key
            seen = owners.get(component.provider)
            if seen is not None and seen[0] != params_key:
                raise PreflightError(
                    f"provider-name collision: components {seen[1]!r} and {component.name!r} both use "
                    f"provider {component.provider!r} with different params ({seen[0]} vs {params_key}); "
                    f"their metrics would merge under reward_provider/{component.provider}/. Use one "
                    "configuration per provider"
                )
            owners.setdefault(component.provider, (params_key, component.name))
            if key not in self.providers:
                self.providers[key] = catalog.bind(
                    component.provider, component.params, available_inputs, runtime=runtime
                )
        resolved = spec.with_terms(lambda name: self._provider_named(name).spec.default_term)
        self.spec = resolved
        read: dict[tuple[str, str], str] = {}
        self._components: list[_Component] = []
        for component in resolved.components:
            key = keys[component.name]
            bound = self.providers[key]
            if component.term not in bound.spec.terms:
                raise PreflightError(
                    f"component {component.name!r} reads term {component.term!r}, which provider "
                    f"{component.provider!r} does not declare; it declares {list(bound.spec.terms)}"
                )
            pair = (key, component.term)
            if pair in read:
                raise PreflightError(
                    f"optimized-term collision: components {read[pair]!r} and {component.name!r} both "
                    f"optimise term {component.term!r} of provider {component.provider!r}; it would be "
                    "counted twice"
                )
            read[pair] = component.name
            self._components.append(_Component(component.name, key, component.term))
        self.records = tuple(record_of(bound, catalog.ref) for bound in self.providers.values())
        # Every provider cheap: the whole batch is scored in the calling thread.
        self.cheap = all(bound.spec.cheap for bound in self.providers.values())
        self._diagnosing = any(bound.spec.diagnostics for bound in self.providers.values())
        # Every provider a cheap pointwise scorer: batches are scored in one pass over columns.
        self._pointwise: PointwiseBatch | None = None
        if all(is_pointwise(bound) for bound in self.providers.values()):
            self._pointwise = PointwiseBatch(
                resolved,
                self.providers,
                [(component.name, component.provider_key, component.term) for component in self._components],
                group_size=group_size,
                namespace=namespace,
                scaling=scaling,
                advantage_std=advantage_std,
                advantage_eps=advantage_eps,
                records=self.records,
            )
        normal = resolved.to_json()
        for component in normal["components"]:
            component["params"] = catalog.normalise(component["provider"], component["params"])
        # What a run records and compares on resume: the spec with every component's params normalised.
        self.spec_identity: dict[str, Any] = normal

    def close(self) -> None:
        """Release every provider's resources (worker processes, sandboxes); idempotent.

        Each provider with a ``close()`` is closed once, even when one of them fails; the first
        failure is raised after all were tried.
        """
        first: BaseException | None = None
        for bound in self.providers.values():
            close = getattr(bound.provider, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception as error:
                first = first or error
        if first is not None:
            raise first

    def _provider_named(self, name: str) -> BoundProvider:
        return next(bound for bound in self.providers.values() if bound.name == name)

    @property
    def needs(self) -> tuple[str, ...]:
        wanted = {need for bound in self.providers.values() for need in bound.spec.needs}
        return tuple(need for need in KNOWN_NEEDS if need in wanted)

    # -- stage 1: scoring ----------------------------------------------------------------------

    def _score_admitted(
        self, group_id: str, rollouts: Sequence[Mapping[str, Any]]
    ) -> dict[str, RewardGroupResult | ProviderError]:
        check_one_prompt(group_id, rollouts)
        results: dict[str, RewardGroupResult | ProviderError] = {}
        for key, bound in self.providers.items():
            try:
                results[key] = bound.score_group(group_id, rollouts, self.group_size)
            except ProviderError as error:
                if self.spec.on_error == "raise":
                    raise
                results[key] = error
        return results

    def _compose_group(
        self,
        group_id: str,
        rollouts: Sequence[Mapping[str, Any]],
        results: Mapping[str, RewardGroupResult | ProviderError],
    ) -> list[tuple[str, Composition]]:
        return self._compose_chunk([(group_id, rollouts, results)])[0]

    def _compose_chunk(
        self,
        scored: list[
            tuple[str, Sequence[Mapping[str, Any]], Mapping[str, RewardGroupResult | ProviderError]]
        ],
    ) -> list[list[tuple[str, Composition]]]:
        """Compose every candidate of several scored groups in one pass; one list per group.

        One ``compose_columns`` call for the whole chunk: per-group setup would cost more than the
        composing itself for small groups.
        """
        ids: list[str] = []
        columns: list[list[tuple[str, Any, str | None]]] = [[] for _ in self._components]
        components = list(zip(self._components, columns))
        for _, rollouts, results in scored:
            first = True
            for component, column in components:
                result = results[component.provider_key]
                if isinstance(result, ProviderError):  # the provider failed the whole group
                    column.extend([("error", None, str(result))] * len(rollouts))
                    continue
                term = component.term
                # check_result has held every item to the spec: declared terms, finite values, a
                # known status, a string reason.
                for item in result.items:
                    said = item.result
                    status = said.status
                    column.append((status, said.terms[term] if status == "scored" else None, said.reason))
                    if first:
                        ids.append(item.trajectory_id)
                first = False
            if first:  # every provider failed this group
                ids.extend([str(rollout.get("trajectory_id")) for rollout in rollouts])
        try:
            compositions = compose_columns(self.spec, columns)
        except CompositionRowError as error:
            sizes = [(group_id, len(rollouts)) for group_id, rollouts, _ in scored]
            raise located(error, sizes, ids) from error
        pairs = zip(ids, compositions)
        return [[next(pairs) for _ in range(len(rollouts))] for _, rollouts, _ in scored]

    def _stage_chunk(
        self, chunk: list[tuple[str, Sequence[Mapping[str, Any]]]], weight: int, admit: Admission
    ) -> list:
        scope = cancellation.current()
        scope.raise_if_cancelled()
        scored = []
        # The collector is paused (cheap rewards) while scoring, never while waiting for capacity.
        with admit(weight), self._collector_paused():
            for group_id, rollouts in chunk:
                scope.raise_if_cancelled()  # a cancelled request's queued groups are dropped
                scored.append((group_id, rollouts, self._score_admitted(group_id, rollouts)))
        with self._collector_paused():
            return [
                (group_id, rollouts, composed, results)
                for (group_id, rollouts, results), composed in zip(scored, self._compose_chunk(scored))
            ]

    def _stage(
        self,
        groups: Sequence[GroupLike],
        executor: Executor | None,
        admit: Admission,
        max_chunk_weight: int | None = None,
    ) -> list[tuple[str, Sequence[Mapping[str, Any]], list[tuple[str, Composition]], dict]]:
        """Score and compose every group, in batch order.

        Groups travel in chunks: one admission, and with an executor one hand-off to a thread, per
        chunk rather than per group. Providers that all declare themselves ``cheap`` are scored in
        the calling thread, since a thread hop costs more than their scoring and the GIL would
        serialise them anyway. ``max_chunk_weight`` caps a chunk's rollouts (the in-flight limit).
        """
        parts = batch_parts(groups)
        if executor is None or self.cheap or len(parts) < 2:
            staged: list = []
            for chunk, weight in chunks(parts, 1, max_chunk_weight):
                staged.extend(self._stage_chunk(chunk, weight, admit))
            return staged
        # The chunks run in a scope of this batch: cancelled with the request's, and by the first
        # chunk that fails, so the others stop (their sandboxes and judge calls too) instead of
        # scoring the rest of a batch that has already failed.
        outer = cancellation.current()
        batch_scope = cancellation.CancelScope()
        unlink = outer.add_callback(
            lambda: batch_scope.cancel(outer.error or RequestCancelled("the request was cancelled"))
        )

        def stop_the_others(future: Future[list]) -> None:
            if not future.cancelled() and future.exception() is not None:
                batch_scope.cancel(_BatchFailed("another chunk of the batch failed"))

        try:
            with cancellation.entered(batch_scope):
                futures = [
                    executor.submit(contextvars.copy_context().run, self._stage_chunk, chunk, weight, admit)
                    for chunk, weight in chunks(parts, CHUNKS_PER_BATCH, max_chunk_weight)
                ]
            for future in futures:
                future.add_done_callback(stop_the_others)
            try:
                return [group for future in futures for group in future.result()]
            except BaseException:
                batch_scope.cancel(_BatchFailed("the batch failed"))
                for future in futures:
                    future.cancel()
                wait(futures)  # nothing of this batch runs on once it has failed
                for future in futures:  # the failure itself, not a chunk it stopped
                    error = None if future.cancelled() else future.exception()
                    if error is not None and not isinstance(error, _BatchFailed):
                        raise error from None
                raise
        finally:
            unlink()

    # -- stages 2-4: annotate, report ------------------------------------------------------------

    def _annotate(self, staged: list) -> list[list[float]]:
        totals = [[composition.total for _, composition in composed] for _, _, composed, _ in staged]
        return group_advantages(totals, self.scaling, std=self.advantage_std, eps=self.advantage_eps)

    def _report(self, staged: list, advantages: list[list[float]]) -> Report:
        columns = [ComponentColumn(component.name, [], []) for component in self._components]
        compositions: list[Composition] = []
        for _, _, composed, _ in staged:
            for _, composition in composed:
                compositions.append(composition)
                breakdown = composition.breakdown
                for column in columns:
                    entry = breakdown[column.name]
                    column.statuses.append(entry["status"])  # type: ignore[attr-defined]
                    if entry["status"] == "scored":
                        column.values.append(entry["value"])  # type: ignore[attr-defined]
        return batch_report(
            self.namespace,
            {key: bound.name for key, bound in self.providers.items()},
            len(compositions),
            self._staged_diagnostics(staged) if self._diagnosing else (),
            columns,
            [composition.total for composition in compositions],
            [composition.gated for composition in compositions],
            [advantage for group in advantages for advantage in group],
        )

    @staticmethod
    def _staged_diagnostics(staged: list) -> Iterator[tuple[str, Sequence[MetricContribution]]]:
        for _, _, _, results in staged:
            for key, result in results.items():
                if isinstance(result, RewardGroupResult):
                    for item in result.items:
                        yield key, item.result.diagnostics

    def _diagnostics(
        self, results: Mapping[str, RewardGroupResult | ProviderError], position: int
    ) -> dict[str, dict[str, float]]:
        """Each provider's diagnostics for the candidate at ``position`` (providers with none left out)."""
        found: dict[str, dict[str, float]] = {}
        for key, result in results.items():
            if isinstance(result, RewardGroupResult):
                diagnostics = result.items[position].result.diagnostics
                if diagnostics:
                    found[self.providers[key].name] = {item.name: item.value for item in diagnostics}
        return found

    def _result(self, staged: list, advantages: list[list[float]], report: Report) -> ScoredBatch:
        diagnosing = self._diagnosing
        groups = []
        for (group_id, _, composed, results), group_advantages_ in zip(staged, advantages):
            candidates = []
            for position, ((trajectory_id, c), advantage) in enumerate(zip(composed, group_advantages_)):
                diagnostics = self._diagnostics(results, position) if diagnosing else {}
                candidates.append(
                    _new_tuple(
                        ScoredCandidate,
                        (trajectory_id, c.total, c.gated, c.breakdown, advantage, diagnostics),
                    )
                )
            groups.append(_new_tuple(ScoredGroup, (group_id, tuple(candidates))))
        return ScoredBatch(tuple(groups), report.as_dict(), self.records, report.weights())

    # -- entry points --------------------------------------------------------------------------

    def _collector_paused(self) -> AbstractContextManager[Any]:
        return collector_paused() if self.cheap else nullcontext()

    def evaluate(
        self,
        groups: Sequence[GroupLike],
        executor: Executor | None = None,
        admit: Admission = _no_admission,
        max_chunk_weight: int | None = None,
    ) -> ScoredBatch:
        """Score, compose, annotate and report a batch without modifying the inputs.

        ``admit(weight)`` is entered around each chunk of groups (waiting for in-flight capacity);
        ``max_chunk_weight`` keeps a chunk within that capacity.
        """
        if self._pointwise is not None:
            return self._pointwise.score(as_batch(groups), admit, max_chunk_weight, self._collector_paused)
        staged = self._stage(as_batch(groups), executor, admit, max_chunk_weight)
        with self._collector_paused():
            return self.finish(staged)

    # Distributed execution (reward actors) splits the batch: each group is staged where the
    # providers run (``stage_group``), and the driver that holds the whole batch calls ``finish``.

    def stage_group(
        self, group_id: str, rollouts: Sequence[Mapping[str, Any]]
    ) -> tuple[list[tuple[str, Composition]], dict[str, RewardGroupResult | ProviderError]]:
        """Score and compose one group: its per-candidate compositions and the raw provider results."""
        results = self._score_admitted(group_id, rollouts)
        return self._compose_group(group_id, rollouts, results), results

    def _breaker(self, staged: list) -> list:
        """The staged groups with the charges ``rewardkit.charges`` voids made errors, recomposed."""
        results = [entry[3] for entry in staged]
        names = {key: bound.name for key, bound in self.providers.items()}
        breaker = self.spec.breaker
        voided = voided_charges(results, names, breaker.min, breaker.share)
        changed = [index for index, (before, after) in enumerate(zip(results, voided)) if before is not after]
        if not changed:
            return staged
        scored = [(staged[index][0], staged[index][1], voided[index]) for index in changed]
        out = list(staged)
        for index, composed in zip(changed, self._compose_chunk(scored)):
            group_id, rollouts, _, _ = staged[index]
            out[index] = (group_id, rollouts, composed, voided[index])
        return out

    def finish(self, staged: list) -> ScoredBatch:
        """Annotate and report staged groups ``(group_id, rollouts, compositions, results)``."""
        staged = self._breaker(staged)
        advantages = self._annotate(staged)
        return self._result(staged, advantages, self._report(staged, advantages))

    def process(
        self,
        groups: Sequence[GroupLike],
        executor: Executor | None = None,
        admit: Admission = _no_admission,
        max_chunk_weight: int | None = None,
    ) -> ScoredBatch:
        """Like ``evaluate``, and write ``reward`` and ``advantage`` into each trajectory mapping.

        One transaction: if scoring, a reward write, the annotation or the report fails, every
        trajectory gets back exactly the reward-stage fields it had before, and the error propagates.
        """
        batch = as_batch(groups)
        return self.process_with(batch, lambda: self._stage(batch, executor, admit, max_chunk_weight))

    def process_with(self, groups: Sequence[GroupLike], stage: Callable[[], list]) -> ScoredBatch:
        """``process`` with the scoring stage supplied by the caller (e.g. reward actors).

        ``stage()`` returns the staged groups in batch order, as ``_stage`` does; ``groups`` must
        be the batch it stages (``as_batch`` of what the caller was given).
        """
        trajectories: list[MutableMapping[str, Any]] = []
        for group in groups:
            for rollout in group_parts(group)[1]:
                if not isinstance(rollout, MutableMapping):
                    raise RewardkitError(
                        f"process() writes rewards into trajectories, so each must be a mutable mapping; "
                        f"got {type(rollout).__name__}"
                    )
                trajectories.append(rollout)
        before = [
            {field: trajectory.get(field, _ABSENT) for field in REWARD_FIELDS} for trajectory in trajectories
        ]
        try:
            staged = stage()
            with self._collector_paused():
                return self._publish(staged, trajectories)
        except BaseException:
            for trajectory, fields in zip(trajectories, before):
                for field, value in fields.items():
                    if value is _ABSENT:
                        trajectory.pop(field, None)
                    else:
                        trajectory[field] = value
            raise

    def _publish(self, staged: list, trajectories: list[MutableMapping[str, Any]]) -> ScoredBatch:
        """Write every reward and advantage into its trajectory, then report (``process_with``'s
        second half; its caller restores the trajectories if this fails)."""
        staged = self._breaker(staged)
        position = 0
        for _, _, composed, _ in staged:
            for _, composition in composed:
                self._write_reward(trajectories[position], composition)
                position += 1
        advantages = self._annotate(staged)
        position = 0
        for group_advantages_ in advantages:
            for advantage in group_advantages_:
                self._write_advantage(trajectories[position], advantage)
                position += 1
        report = self._report(staged, advantages)
        return self._result(staged, advantages, report)

    @staticmethod
    def _write_reward(trajectory: MutableMapping[str, Any], composition: Composition) -> None:
        trajectory["reward"] = {
            "final": composition.total,
            "gated": composition.gated,
            "breakdown": composition.breakdown,
        }

    @staticmethod
    def _write_advantage(trajectory: MutableMapping[str, Any], advantage: float) -> None:
        trajectory["advantage"] = advantage


# Scored results and group reading live in their own modules; they stay importable from here.
__all__ = [
    "CHUNKS_PER_BATCH",
    "REWARD_FIELDS",
    "GroupLike",
    "RewardWorker",
    "ScoredBatch",
    "ScoredCandidate",
    "ScoredGroup",
    "as_batch",
    "batch_parts",
    "check_one_prompt",
    "group_parts",
]
