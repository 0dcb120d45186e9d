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
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from concurrent.futures import Executor, Future, wait
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from rewardkit import cancellation
from rewardkit.advantages import EPSILON, SCALINGS, Scaling, StdKind, group_advantages
from rewardkit.binding import BoundProvider
from rewardkit.catalog import Catalog
from rewardkit.collector import collector_paused
from rewardkit.composition import Composition, CompositionError, CompositionRowError, RewardSpec, compose_rows
from rewardkit.contracts import KNOWN_NEEDS, RewardGroupResult
from rewardkit.errors import (
    PreflightError,
    ProviderError,
    RequestCancelled,
    RewardContractError,
    RewardkitError,
)
from rewardkit.frozen import strictly_equal
from rewardkit.identity import canonical_json
from rewardkit.metrics import Report, WeightedMean, metric_name
from rewardkit.provenance import ProviderRecord, record_of

REWARD_FIELDS = ("reward", "advantage")
_ABSENT = object()


class ScoredCandidate(NamedTuple):
    """One candidate's reward: ``final``, whether a gate floored it, the per-component breakdown,
    its advantage, and each provider's diagnostics. A named tuple: one is built per rollout."""

    trajectory_id: str
    final: float | None
    gated: bool
    breakdown: dict[str, dict[str, Any]]
    advantage: float
    # provider name -> {diagnostic: value}: why a candidate scored what it did (timeout, extracted, ...).
    # Reporting only, like the batch means in the metrics; never part of final or the advantage.
    diagnostics: dict[str, dict[str, float]]

    def to_json(self, group_id: str) -> dict[str, Any]:
        return {
            "group_id": group_id,
            "trajectory_id": self.trajectory_id,
            "final": self.final,
            "gated": self.gated,
            "advantage": self.advantage,
            "breakdown": self.breakdown,
            "diagnostics": self.diagnostics,
        }


_new_tuple = tuple.__new__


class ScoredGroup(NamedTuple):
    """A scored group: its id and its candidates in order."""

    group_id: str
    candidates: tuple[ScoredCandidate, ...]


@dataclass(frozen=True)
class ScoredBatch:
    """A scored batch: per-candidate results, the batch report and the providers' provenance."""

    groups: tuple[ScoredGroup, ...]
    metrics: dict[str, float]
    providers: tuple[ProviderRecord, ...]
    # The weight of each mean in ``metrics`` (scored values, summed diagnostic weights).
    metric_weights: dict[str, float] = field(default_factory=dict, compare=False)

    def candidates(self) -> Iterable[tuple[str, ScoredCandidate]]:
        for group in self.groups:
            for candidate in group.candidates:
                yield group.group_id, candidate

    def to_jsonl_rows(self) -> list[dict[str, Any]]:
        return [candidate.to_json(group_id) for group_id, candidate in self.candidates()]


@dataclass(frozen=True)
class _Component:
    name: str
    provider_key: str
    term: str


GroupLike = Any  # RolloutGroup, (group_id, rollouts) or {"group_id": ..., "rollouts": [...]}
# Called with a group's rollout count before it is scored; waits for capacity (back-pressure).
Admission = Callable[[int], AbstractContextManager[Any]]


def _no_admission(weight: int) -> AbstractContextManager[Any]:
    return nullcontext()


def group_parts(group: GroupLike) -> tuple[str, Sequence[Mapping[str, Any]]]:
    """The group id and rollouts of any accepted group shape."""
    if type(group) is tuple and len(group) == 2:  # the usual shape, before the slower checks
        return group[0], group[1]
    if isinstance(group, Mapping):
        try:
            return group["group_id"], group["rollouts"]
        except KeyError as error:
            raise RewardkitError(
                f"a group mapping needs 'group_id' and 'rollouts'; missing {error}"
            ) from None
    if isinstance(group, tuple) and len(group) == 2:
        return group[0], group[1]
    if hasattr(group, "group_id") and hasattr(group, "rollouts"):
        return group.group_id, group.rollouts
    raise RewardkitError(
        f"cannot read a group from {type(group).__name__}; pass RolloutGroup, (group_id, rollouts) "
        "or {'group_id': ..., 'rollouts': [...]}"
    )


def as_batch(groups: Iterable[GroupLike]) -> Sequence[GroupLike]:
    """A batch read once into a list: any iterable of groups (a list, a generator, an iterator).

    A group whose rollouts are a one-shot iterable becomes ``(group_id, [rollouts...])`` holding
    the same rollout objects, so every later pass over the batch sees them all.
    """
    if isinstance(groups, (str, bytes, Mapping)) or not isinstance(groups, Iterable):
        raise RewardkitError(
            f"a batch is an iterable of groups (RolloutGroup, (group_id, rollouts) or "
            f"{{'group_id': ..., 'rollouts': [...]}}), not {type(groups).__name__}"
        )
    batch = groups if isinstance(groups, (list, tuple)) else list(groups)
    fixed: list[GroupLike] | None = None
    for index, group in enumerate(batch):
        group_id, rollouts = group_parts(group)
        if (
            type(rollouts) is list
            or isinstance(rollouts, (list, tuple, str, bytes, Mapping, Sequence))
            or not isinstance(rollouts, Iterable)
        ):
            continue  # a sequence is read as it is; a bad shape is reported by the adapter
        if fixed is None:
            fixed = list(batch)
        fixed[index] = (group_id, list(rollouts))
    return batch if fixed is None else fixed


def batch_parts(groups: Sequence[GroupLike]) -> list[tuple[str, Sequence[Mapping[str, Any]]]]:
    """Every group's id and rollouts; a group id may appear once per batch."""
    parts = [group_parts(group) for group in groups]
    seen: set[str] = set()
    for group_id, _ in parts:
        if group_id in seen:
            raise RewardkitError(
                f"group {group_id!r} appears twice in the batch; a group must be complete in one place"
            )
        seen.add(group_id)
    return parts


def check_one_prompt(group_id: str, rollouts: Sequence[Mapping[str, Any]]) -> None:
    """A group is one prompt: a rollout may carry no ``prompt``, but two that carry one must carry
    the same (type-strictly), whatever the providers need; mixed prompts corrupt the advantages."""
    if type(rollouts) is list:
        if len(rollouts) < 2:
            return  # one rollout has no other prompt to differ from
    elif isinstance(rollouts, (str, bytes)) or not isinstance(rollouts, Sequence):
        return  # the shape is the adapter's to report
    prompt: Any = None
    for position, rollout in enumerate(rollouts):
        if type(rollout) is not dict and not isinstance(rollout, Mapping):
            return
        other = rollout.get("prompt")
        if other is None or other is prompt:
            continue
        if prompt is None:
            prompt, first = other, position
            continue
        if type(other) is str and type(prompt) is str:  # the usual case, without a call
            if other == prompt:
                continue
        elif strictly_equal(other, prompt):
            continue
        where = f" (line {rollout['row']})" if isinstance(rollout.get("row"), int) else ""
        raise RewardContractError(
            f"the rollout at position {position}{where} has a prompt different from the one at "
            f"position {first}; a group is the completions of one prompt (types count: 1, 1.0 and "
            "true differ)",
            group_id=str(group_id),
            trajectory_id=str(rollout.get("trajectory_id")),
            rule="mixed-prompts",
        )


class _BatchFailed(RequestCancelled):
    """A chunk stopped because another chunk of its batch failed (never what the caller sees)."""


# Chunks a batch is cut into for worker threads: enough to keep every thread busy when groups take
# uneven time (a sandbox that runs to its timeout), few enough that hand-offs cost nothing.
CHUNKS_PER_BATCH = 64


def _weight(rollouts: object) -> int:
    return len(rollouts) if hasattr(rollouts, "__len__") else 1  # type: ignore[arg-type]


def _chunks(
    parts: list[tuple[str, Sequence[Mapping[str, Any]]]], count: int, max_weight: int | None
) -> Iterator[tuple[list[tuple[str, Sequence[Mapping[str, Any]]]], int]]:
    """Consecutive runs of about ``len(parts) / count`` groups, each with its rollout count, cut
    earlier where the next group would take a run past ``max_weight`` rollouts."""
    size = max(1, -(-len(parts) // count))
    chunk: list[tuple[str, Sequence[Mapping[str, Any]]]] = []
    weight = 0
    for part in parts:
        part_weight = _weight(part[1])
        if chunk and (len(chunk) >= size or (max_weight is not None and weight + part_weight > max_weight)):
            yield chunk, weight
            chunk, weight = [], 0
        chunk.append(part)
        weight += part_weight
    if chunk:
        yield chunk, weight


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

        One ``compose_rows`` call for the whole chunk: per-group setup would cost more than the
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
            compositions = compose_rows(self.spec, zip(*columns))
        except CompositionRowError as error:
            group_id, passed = scored[0][0], 0
            for group_id, rollouts, _ in scored:  # noqa: B007 - the group the failing row is in
                if error.position < passed + len(rollouts):
                    break
                passed += len(rollouts)
            raise CompositionError(
                f"[group {group_id!r}, candidate {ids[error.position]!r}] {error}",
                component=error.component,
                breakdown=error.breakdown,
            ) from error
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
            for chunk, weight in _chunks(parts, 1, max_chunk_weight):
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
                    for chunk, weight in _chunks(parts, CHUNKS_PER_BATCH, max_chunk_weight)
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
        # Names are built (and validated) once per batch, not per candidate: this runs in the hot path.
        ns = self.namespace
        report = Report(ns)
        sample_names = {
            key: metric_name(ns, "reward_provider", bound.name, "sample_count")
            for key, bound in self.providers.items()
        }
        status_names = {
            component.name: {
                status: metric_name(ns, "reward_component", component.name, f"{status}_count")
                for status in ("scored", "skipped", "error")
            }
            for component in self._components
        }
        sums = {component.name: [0.0, 0] for component in self._components}
        statuses = {
            component.name: dict.fromkeys(("scored", "skipped", "error"), 0) for component in self._components
        }
        samples = dict.fromkeys(self.providers, 0)
        diagnosing = self._diagnosing
        diagnostic_means: dict[tuple[str, str], WeightedMean] = {}
        total_sum, total_count, nulls, gated = 0.0, 0, 0, 0
        for _, rollouts, composed, results in staged:
            count = len(rollouts)
            for key, result in results.items():
                samples[key] += count
                if diagnosing and isinstance(result, RewardGroupResult):
                    for item in result.items:
                        for contribution in item.result.diagnostics:
                            # WeightedMean.add, inline: one name lookup per provider and diagnostic
                            # per batch instead of building and validating it per candidate
                            mean = diagnostic_means.get((key, contribution.name))
                            if mean is None:
                                name = metric_name(
                                    ns, "reward_provider", self.providers[key].name, contribution.name
                                )
                                mean = diagnostic_means[key, contribution.name] = report.means.setdefault(
                                    name, WeightedMean()
                                )
                            mean.total += contribution.value * contribution.weight
                            mean.weight += contribution.weight
            for _, composition in composed:
                total = composition.total
                if total is None:
                    nulls += 1
                else:
                    total_sum += total
                    total_count += 1
                if composition.gated:
                    gated += 1
                for component, entry in composition.breakdown.items():
                    status = entry["status"]
                    statuses[component][status] += 1
                    if status == "scored":
                        accumulator = sums[component]
                        accumulator[0] += entry["value"]
                        accumulator[1] += 1
        for key, count in samples.items():
            if count:
                report.count(sample_names[key], count)
        for component, counts in statuses.items():
            for status, count in counts.items():
                if count:
                    report.count(status_names[component][status], count)
            value_sum, value_count = sums[component]
            if value_count:
                report.mean(
                    metric_name(ns, "reward_component", component, "mean"),
                    value_sum / value_count,
                    value_count,
                )
        if total_count:
            report.mean(metric_name(ns, "reward", "mean"), total_sum / total_count, total_count)
        if nulls:
            report.count(metric_name(ns, "reward", "null_count"), nulls)
        report.count(metric_name(ns, "reward", "gated_count"), gated)
        flat = [a for group in advantages for a in group]
        if flat:
            report.mean(
                metric_name(ns, "advantage", "abs_mean"), sum(abs(a) for a in flat) / len(flat), len(flat)
            )
        return report

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

    def finish(self, staged: list) -> ScoredBatch:
        """Annotate and report staged groups ``(group_id, rollouts, compositions, results)``."""
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
