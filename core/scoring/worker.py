"""``RewardWorker``: scores whole groups under a ``RewardSpec`` as one rollback-safe transaction.

It binds every component's provider at construction (preflight), refusing provider-name and
optimized-term collisions. ``_run`` picks one of two strategies: group by group through the bound
adapter (any provider, in threads or on reward actors), or one pass over columns when every provider
is a cheap pointwise scorer (``rewardkit.scoring.pointwise_batch``). Both end in the same ``ScoredColumns``,
finished alike (advantages from ``final`` only, report: ``rewardkit.scoring.scored_columns``).
``process`` also writes ``reward`` and ``advantage`` into the trajectories, restoring them all if any
stage fails, so a batch is either fully scored or exactly as it was.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from concurrent.futures import Executor, Future, wait
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any, NamedTuple, cast

from rewardkit.contracts import KNOWN_NEEDS, RewardGroupResult, RewardProviderResult
from rewardkit.contracts.errors import PreflightError, ProviderError, RequestCancelled, RewardkitError
from rewardkit.contracts.identity import canonical_json
from rewardkit.job import answer_journal
from rewardkit.job.provenance import record_of
from rewardkit.scoring import cancellation, shared_results
from rewardkit.scoring.advantages import EPSILON, SCALINGS, Scaling, StdKind
from rewardkit.scoring.batch_input import (
    GroupLike,
    Rollouts,
    as_batch,
    batch_parts,
    check_one_prompt,
    chunks,
    group_parts,
    located,
)
from rewardkit.scoring.bound_provider import BoundProvider
from rewardkit.scoring.collector import collector_paused
from rewardkit.scoring.composition import (
    ComponentSpec,
    ComposedParts,
    Composition,
    CompositionRowError,
    RewardSpec,
    compose_columns,
    read_outcomes,
)
from rewardkit.scoring.metrics import Report, metric_name
from rewardkit.scoring.pointwise_batch import Admission, PointwiseBatch, scorable_in_one_pass
from rewardkit.scoring.reproduction import batch_budget
from rewardkit.scoring.scored import ScoredBatch, ScoredCandidate, ScoredGroup
from rewardkit.scoring.scored_columns import BatchOutputs, ScoredColumns
from rewardkit.seam.catalog import Catalog

REWARD_FIELDS = ("reward", "advantage")
_ABSENT = object()
Said = RewardGroupResult | ProviderError  # what a provider returned for a group


class _Component(NamedTuple):
    name: str
    provider_key: str
    term: str


class StagedGroup(NamedTuple):
    """One group scored and composed by the general strategy, where its providers run."""

    group_id: str
    rollouts: Rollouts
    composed: list[tuple[str, Composition]]  # (trajectory id, composition) per candidate, in order
    results: Mapping[str, Said]  # provider key -> what it returned


# What ``finish`` and ``process_with`` take: a ``StagedGroup``, or the same four as a plain tuple
# (reward actors rebuild them from the wire).
Staged = tuple[str, Rollouts, Sequence[tuple[str, Composition]], Mapping[str, Said]]


def _no_admission(weight: int) -> AbstractContextManager[Any]:
    return nullcontext()


class _BatchFailed(RequestCancelled):
    """A chunk stopped because another chunk of its batch failed (never what the caller sees)."""


def _stopped_by_the_batch(error: BaseException) -> bool:
    """Whether ``error`` is only a chunk stopped because its batch had failed: a ``_BatchFailed``,
    or an error raised while handling or wrapping one (a provider error around it)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, _BatchFailed):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


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
        # Component name -> its params as the schema reads them (normalised once, by the catalog), for
        # the provider key, the binding's identity and the spec a run records.
        normalised: dict[str, dict[str, Any]] = {}
        for component in spec.components:

            def known(params: dict[str, Any], component: ComponentSpec = component) -> BoundProvider | None:
                # Keyed by the normalised params: 6 and 6.0 of a float param are one configuration.
                normalised[component.name] = params
                params_key = canonical_json(params)
                key = keys[component.name] = f"{component.provider}|{params_key}"
                seen = owners.setdefault(component.provider, (params_key, component.name))
                if seen[0] != params_key:
                    raise PreflightError(
                        f"provider-name collision: components {seen[1]!r} and {component.name!r} both use "
                        f"provider {component.provider!r} with different params ({seen[0]} vs "
                        f"{params_key}); their metrics would merge under reward_provider/"
                        f"{component.provider}/. Use one configuration per provider"
                    )
                return self.providers.get(key)

            # One visit to the catalog per component: it resolves the name and normalises the params
            # once, and asks ``known`` before constructing, so a configuration is bound once.
            bound = catalog.bind_component(
                component.provider, component.params, available_inputs, runtime, known
            )
            self.providers.setdefault(keys[component.name], bound)
        resolved = spec.with_terms(
            lambda name: next(b.spec.default_term for b in self.providers.values() if b.name == name)
        )
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
        self.cheap = all(bound.spec.cheap for bound in self.providers.values())
        self._diagnosing = any(bound.spec.diagnostics for bound in self.providers.values())
        detailed: list[tuple[str, str, str, bool]] = []  # see BatchOutputs.detailed
        for part in self._components:
            declared = self.providers[part.provider_key].spec
            several = len(declared.terms) > 1
            # A provider that is not cheap may reproduce a fault and note its evidence (the core's
            # own note, ``rewardkit.scoring.reproduction``); a cheap one scores in process, without faults.
            if several or declared.notes or not declared.cheap:
                detailed.append((part.name, part.provider_key, part.term, several))
        self._outputs = BatchOutputs(
            namespace,
            tuple(component.name for component in self._components),
            {key: bound.name for key, bound in self.providers.items()},
            scaling,
            advantage_std,
            advantage_eps,
            self.records,
            self._diagnosing,
            tuple(detailed),
        )
        self._pointwise: PointwiseBatch | None = None
        if all(scorable_in_one_pass(bound) for bound in self.providers.values()):
            self._pointwise = PointwiseBatch(
                resolved,
                self.providers,
                self._components,
                group_size=group_size,
                complete=self._complete,
            )
        normal = resolved.to_json()
        for component in normal["components"]:
            component["params"] = normalised[component["name"]]
        # What a run records and compares on resume: the spec with every component's params normalised.
        self.spec_identity: dict[str, Any] = normal

    def close(self) -> None:
        """Release every provider's resources (worker processes, sandboxes); idempotent. Every
        provider's ``close()`` is tried; the first failure is raised after all were."""
        first: BaseException | None = None
        for bound in self.providers.values():
            close = getattr(bound.provider, "close", None)
            try:
                if callable(close):
                    close()
            except Exception as error:
                first = first or error
        if first is not None:
            raise first

    @property
    def needs(self) -> tuple[str, ...]:
        wanted = {need for bound in self.providers.values() for need in bound.spec.needs}
        return tuple(need for need in KNOWN_NEEDS if need in wanted)

    # -- the general strategy: group by group, through the bound adapter -------------------------

    def _score_admitted(self, group_id: str, rollouts: Rollouts) -> dict[str, Said]:
        check_one_prompt(group_id, rollouts)
        results: dict[str, Said] = {}
        # In `rewardkit score`, slow providers' answers are journaled as each group finishes, and a
        # resumed chunk reads them back instead of asking (and maybe paying) again.
        answers = answer_journal.current()
        for key, bound in self.providers.items():
            kept = answers if answers is not None and not bound.spec.cheap else None
            if kept is not None:
                known = kept.get(key, group_id, rollouts)
                if known is not None:
                    results[key] = known
                    continue
            try:
                result = bound.score_group(group_id, rollouts, self.group_size)
            except ProviderError as error:
                if self.spec.on_error == "raise":
                    raise
                results[key] = error
                continue
            results[key] = result
            if kept is not None:
                kept.put(key, group_id, rollouts, result)
        return results

    def _compose_chunk(
        self, scored: Sequence[tuple[str, Rollouts, Mapping[str, Said]]]
    ) -> list[list[tuple[str, Composition]]]:
        """Compose every candidate of several scored groups in one ``compose_columns`` call (per-group
        setup would cost more than composing small groups); one list per group."""
        ids: list[str] = []
        said: list[list[RewardProviderResult]] = [[] for _ in self._components]
        components = list(zip(self._components, said))
        for _, rollouts, results in scored:
            # A provider's answer repeats these ids in order (check_result), and a failure has none.
            ids.extend([str(rollout.get("trajectory_id")) for rollout in rollouts])
            for component, column in components:
                result = results[component.provider_key]
                if isinstance(result, ProviderError):  # the provider failed the whole group
                    column.extend([RewardProviderResult.fail(str(result))] * len(rollouts))
                else:
                    column.extend([item.result for item in result.items])  # held to the spec by check_result
        columns = [read_outcomes(column, component.term) for component, column in components]
        try:
            compositions = compose_columns(self.spec, columns)
        except CompositionRowError as error:
            sizes = [(group_id, len(rollouts)) for group_id, rollouts, _ in scored]
            raise located(error, sizes, ids) from error
        pairs = zip(ids, compositions)
        return [[next(pairs) for _ in range(len(rollouts))] for _, rollouts, _ in scored]

    def _stage_chunk(
        self, chunk: list[tuple[str, Rollouts]], weight: int, admit: Admission
    ) -> list[StagedGroup]:
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
                StagedGroup(group_id, rollouts, composed, results)
                for (group_id, rollouts, results), composed in zip(scored, self._compose_chunk(scored))
            ]

    def _stage(
        self,
        groups: Sequence[GroupLike],
        executor: Executor | None,
        admit: Admission,
        max_chunk_weight: int | None = None,
    ) -> list[StagedGroup]:
        """Score and compose every group, in batch order, in chunks (of at most ``max_chunk_weight``
        rollouts): one admission, and with an executor one hand-off to a thread, per chunk. ``cheap``
        providers are scored in the calling thread: a thread hop costs more than their scoring, and the
        GIL would serialise them anyway."""
        parts = batch_parts(groups)
        if executor is None or self.cheap or len(parts) < 2:
            pieces = chunks(parts, 1, max_chunk_weight)
            return [group for chunk, weight in pieces for group in self._stage_chunk(chunk, weight, admit)]
        # The chunks run in a scope of this batch: cancelled with the request's, and by the first
        # chunk that fails, so the others stop (their sandboxes and judge calls too) instead of
        # scoring the rest of a batch that has already failed.
        outer = cancellation.current()
        batch_scope = cancellation.CancelScope()
        unlink = outer.add_callback(
            lambda: batch_scope.cancel(outer.error or RequestCancelled("the request was cancelled"))
        )

        # What the caller sees is the root failure: the first chunk to fail, noted before it stops
        # the others. A chunk it stopped fails too, often as a provider error wrapping _BatchFailed,
        # and may finish first; in batch order that consequence used to hide the cause.
        root: list[Exception] = []
        noting = threading.Lock()

        def note(error: BaseException) -> None:
            with noting:
                if not root and isinstance(error, Exception) and not _stopped_by_the_batch(error):
                    root.append(error)

        def stop_the_others(future: Future[list[StagedGroup]]) -> None:
            if not future.cancelled() and future.exception() is not None:
                note(cast(BaseException, future.exception()))
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
            except BaseException as stopped:
                # A chunk's failure reaches this thread before its done callback may have run.
                note(stopped)
                batch_scope.cancel(_BatchFailed("the batch failed"))
                for future in futures:
                    future.cancel()
                wait(futures)  # nothing of this batch runs on once it has failed
                if isinstance(stopped, Exception) and root:
                    raise root[0] from None
                raise  # a KeyboardInterrupt stays one: the job ends with its resume line
        finally:
            unlink()

    def _columns(self, staged: Sequence[Staged]) -> ScoredColumns:
        """Staged groups as the columns both strategies finish from."""
        pairs = [pair for entry in staged for pair in entry[2]]
        composed = ComposedParts.of([composition for _, composition in pairs])
        statuses: list[list[str]] = []
        values: list[list[float]] = []
        for component in self._components:
            entries = [breakdown[component.name] for breakdown in composed.breakdowns]
            statuses.append([entry["status"] for entry in entries])
            values.append([entry["value"] for entry in entries if entry["status"] == "scored"])
        said: dict[str, list[RewardProviderResult | None]] = {}
        if self._outputs.reads_results:
            for key in self.providers:
                column: list[RewardProviderResult | None] = []
                for entry in staged:
                    result = entry[3][key]
                    if isinstance(result, RewardGroupResult):
                        column.extend([item.result for item in result.items])
                    else:
                        column.extend([None] * len(entry[2]))
                said[key] = column
        group_ids, sizes = [entry[0] for entry in staged], [len(entry[2]) for entry in staged]
        ids = [trajectory_id for trajectory_id, _ in pairs]
        return ScoredColumns(group_ids, sizes, ids, composed, statuses, values, said)

    # -- finishing, shared by both strategies --------------------------------------------------

    def _annotate(self, columns: ScoredColumns) -> list[float]:
        return self._outputs.advantages(columns)

    def _report(self, columns: ScoredColumns, advantages: list[float]) -> Report:
        return self._outputs.report(columns, advantages)

    def _complete(
        self, columns: ScoredColumns, trajectories: Sequence[MutableMapping[str, Any]] | None = None
    ) -> ScoredBatch:
        """Annotate and report a scored batch; with ``trajectories`` (one per candidate, in batch
        order), also write each one's reward, then its advantage, as it is worked out."""
        if trajectories is not None:
            for trajectory, total, gated, breakdown in zip(trajectories, *columns.composed, strict=True):
                self._write_reward(trajectory, total, gated, breakdown)
        advantages = self._annotate(columns)
        if trajectories is not None:
            for trajectory, advantage in zip(trajectories, advantages, strict=True):
                self._write_advantage(trajectory, advantage)
        return self._outputs.result(columns, advantages, self._report(columns, advantages))

    # -- entry points --------------------------------------------------------------------------

    def _collector_paused(self) -> AbstractContextManager[Any]:
        return collector_paused() if self.cheap else nullcontext()

    def _run(
        self,
        batch: Sequence[GroupLike],
        executor: Executor | None,
        admit: Admission,
        max_chunk_weight: int | None,
        complete: Callable[[ScoredColumns], ScoredBatch],
    ) -> ScoredBatch:
        """Score a batch with the strategy its providers allow (chosen only here) and ``complete`` it,
        with one rerun budget for the batch (``rewardkit.scoring.reproduction``)."""
        with batch_budget(self.spec.reruns.per_batch), shared_results.batch_scope():
            if self._pointwise is not None:
                return self._pointwise.score(batch, admit, max_chunk_weight, self._collector_paused, complete)
            staged = self._stage(batch, executor, admit, max_chunk_weight)
        with self._collector_paused():
            return complete(self._columns(staged))

    def evaluate(
        self,
        groups: Sequence[GroupLike],
        executor: Executor | None = None,
        admit: Admission = _no_admission,
        max_chunk_weight: int | None = None,
    ) -> ScoredBatch:
        """Score, compose, annotate and report a batch without modifying the inputs; ``admit(weight)``
        is entered around each chunk (waiting for capacity), of at most ``max_chunk_weight`` rollouts."""
        return self._run(as_batch(groups), executor, admit, max_chunk_weight, self._complete)

    # Distributed execution (reward actors) splits the batch: each group is staged where the
    # providers run (``stage_group``), and the driver that holds the whole batch calls ``finish``.

    def stage_group(
        self, group_id: str, rollouts: Rollouts
    ) -> tuple[list[tuple[str, Composition]], dict[str, Said]]:
        """Score and compose one group: its per-candidate compositions and the raw provider results
        (a group staged alone, on a reward actor, has a rerun budget of its own)."""
        with batch_budget(self.spec.reruns.per_batch), shared_results.batch_scope():
            results = self._score_admitted(group_id, rollouts)
        return self._compose_chunk([(group_id, rollouts, results)])[0], results

    def finish(self, staged: Sequence[Staged]) -> ScoredBatch:
        """Annotate and report staged groups ``(group_id, rollouts, compositions, results)``."""
        return self._complete(self._columns(staged))

    def process(
        self,
        groups: Sequence[GroupLike],
        executor: Executor | None = None,
        admit: Admission = _no_admission,
        max_chunk_weight: int | None = None,
    ) -> ScoredBatch:
        """Like ``evaluate``, and write ``reward`` and ``advantage`` into each trajectory mapping, as
        one transaction: if any stage fails, every trajectory gets back exactly the reward-stage
        fields it had before, and the error propagates."""
        batch = as_batch(groups)

        def run(trajectories: list[MutableMapping[str, Any]]) -> ScoredBatch:
            complete = partial(self._complete, trajectories=trajectories)
            return self._run(batch, executor, admit, max_chunk_weight, complete)

        return self._transaction(batch, run)

    def process_with(self, groups: Sequence[GroupLike], stage: Callable[[], Sequence[Staged]]) -> ScoredBatch:
        """``process`` with the scoring stage supplied by the caller (reward actors): ``stage()``
        returns the staged groups of ``groups`` (an ``as_batch`` batch) in order, as ``_stage`` does."""

        def run(trajectories: list[MutableMapping[str, Any]]) -> ScoredBatch:
            staged = stage()
            with self._collector_paused():
                return self._complete(self._columns(staged), trajectories)

        return self._transaction(groups, run)

    def _transaction(
        self, groups: Sequence[GroupLike], run: Callable[[list[MutableMapping[str, Any]]], ScoredBatch]
    ) -> ScoredBatch:
        """``run(trajectories)``, every trajectory of ``groups`` restored if it fails."""
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
            return run(trajectories)
        except BaseException:
            for trajectory, fields in zip(trajectories, before):
                for field, value in fields.items():
                    if value is _ABSENT:
                        trajectory.pop(field, None)
                    else:
                        trajectory[field] = value
            raise

    @staticmethod
    def _write_reward(
        trajectory: MutableMapping[str, Any],
        total: float | None,
        gated: bool,
        breakdown: dict[str, dict[str, Any]],
    ) -> None:
        trajectory["reward"] = {"final": total, "gated": gated, "breakdown": breakdown}

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
