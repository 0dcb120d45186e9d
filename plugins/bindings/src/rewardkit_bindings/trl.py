"""TRL binding: rewardkit as ``GRPOTrainer`` reward functions (docs/bindings.md).

``reward_funcs(config)`` returns ``(funcs, weights)``: the total at weight 1, then one function per
component at weight 0, sharing one scoring pass per batch. A null total (``onError: none``) gives
``None`` from *every* function for that sample: were the components still numbers, TRL would add
them as ``0 * value`` and train on a reward of 0. On several processes two collectives per call
gather every rank's samples and exchange each rank's scored share (or its failure).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rewardkit.plugin import (
    BatchObserver,
    BindingError,
    MappedProvider,
    ObservedBatch,
    Ranks,
    Reward,
    RewardLike,
    ScoredBatch,
    ScoredCandidate,
    astream_of,
    build_reward,
    finish_split_batch,
    metric_name,
)
from rewardkit_bindings.loading import ConfigSource, config_source, monitor_for, resolve_config, reward_for
from rewardkit_bindings.ranks import current_ranks
from rewardkit_bindings.sample_groups import FlatBatch, rebuild_groups
from rewardkit_bindings.truncation import needed_candidate_fields, stop_token_ids, trl_finish_reason

TOTAL_NAME = "rewardkit"
# TRL 1.13-1.16 divides GRPO advantages by (std + 1e-4); rl.advantage_eps overrides it.
ADVANTAGE_EPS = 1e-4
_IGNORED_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})
_AUTO: Any = object()

RewardFunc = Callable[..., list[float | None]]
Row = tuple[float | None, dict[str, float | None]]


class RankFailure(BindingError):
    """Scoring failed on one rank of a multi-process run; every rank raises this same error."""

    def __init__(self, message: str, *, rank: int) -> None:
        super().__init__(message)
        self.rank = rank


def _row(candidate: ScoredCandidate, names: Sequence[str]) -> Row:
    entries = [candidate.breakdown[name] for name in names]
    values = [entry["value"] if entry["status"] == "scored" else None for entry in entries]
    # A null total makes the whole row unscorable for TRL (see the module docstring).
    return candidate.final, dict(zip(names, values if candidate.final is not None else [None] * len(values)))


class _BatchScores:
    """What the functions of one call share: each sample's total and components, and the batch report."""

    def __init__(
        self,
        candidates: Sequence[ScoredCandidate],
        names: Sequence[str],
        metrics: Mapping[str, float],
        whole: tuple[Sequence[Mapping[str, Any]], ScoredBatch] | None = None,
    ) -> None:
        self.metrics = dict(metrics)
        self.whole = whole  # the global batch's groups and scores, for an observer (rank 0 only)
        rows = [_row(candidate, names) for candidate in candidates]
        self.totals: list[float | None] = [total for total, _ in rows]
        self.components = {name: [values[name] for _, values in rows] for name in names}

    @classmethod
    def of(
        cls, groups: Sequence[Mapping[str, Any]], scored: ScoredBatch, names: Sequence[str]
    ) -> _BatchScores:
        candidates = [candidate for _, candidate in scored.candidates()]
        return cls(candidates, names, scored.metrics, (groups, scored))

    def column(self, name: str | None) -> list[float | None]:
        """A new list of the totals (``name`` None) or of one component's values."""
        return list(self.totals if name is None else self.components[name])


def _failure(rank: int, stage: str, error: BaseException) -> tuple[str, Any]:
    return ("error", (rank, stage, type(error).__name__, str(error)))


def _raise_failures(gathered: Sequence[tuple[str, Any]], world: int, local: BaseException | None) -> None:
    failures = [payload for status, payload in gathered if status == "error"]
    if not failures:
        return
    rank, stage, kind, message = failures[0]
    others = f"; {len(failures) - 1} other rank(s) failed as well" if len(failures) > 1 else ""
    raise RankFailure(
        f"rank {rank} of {world} failed while {stage}: {kind}: {message}{others}. Every rank stops with "
        "this error",
        rank=rank,
    ) from local


def ranks_score_own_slices(reward: Any) -> bool:
    """Whether a rank may score its own slice: in-process, every provider built by ``map_candidates``."""
    if type(reward) is not Reward:  # a Reward Service or Ray actors score whole groups
        return False
    return all(isinstance(bound.provider, MappedProvider) for bound in reward.worker.providers.values())


class TRLRewardBinding:
    """The state behind one ``reward_funcs`` call: the reward, the group size and the last batch scored."""

    def __init__(
        self,
        reward: RewardLike,
        *,
        num_generations: int,
        reference_column: str | None,
        total_name: str = TOTAL_NAME,
        ranks: Ranks | None = _AUTO,
        tokenizer: Any = None,
        observer: BatchObserver | None = None,
    ) -> None:
        self.reward = reward
        self.observer = observer
        self.num_generations = num_generations
        self.reference_column = reference_column
        self.total_name = total_name
        self.ranks = ranks  # found on each call unless given (tests give them)
        self.component_names = tuple(reward.spec.names)
        if total_name in self.component_names:
            raise BindingError(
                f"the total's function name {total_name!r} is also a component name; TRL logs both under "
                f"rewards/{total_name}/mean. Pass total_name= to pick another"
            )
        self.slices_per_rank = ranks_score_own_slices(reward)
        # TRL logs ``rewards/<function>/mean`` (and ``/std``) for each reward function from the values
        # they return: the total's mean and each component's mean are those, so they are not logged
        # again under ``rewardkit/``.
        namespace = reward.namespace
        self._logged_by_trl = frozenset(
            {
                metric_name(namespace, "reward", "mean"),
                *(metric_name(namespace, "reward_component", name, "mean") for name in self.component_names),
            }
        )
        self._stop_ids = stop_token_ids(tokenizer) if tokenizer is not None else None
        self._needs_finish_reason = "finish_reason" in needed_candidate_fields(reward)
        self._slice_reward: RewardLike | None = None
        self._lock = threading.Lock()
        self._last: tuple[Sequence[Any], Sequence[Any], _BatchScores] | None = None
        self._pending: tuple[Sequence[Any], Sequence[Any], asyncio.Future[_BatchScores]] | None = None
        self._calls = itertools.count()

    def _flat(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]) -> FlatBatch:
        references = None
        if self.reference_column is not None:
            if self.reference_column not in kwargs:
                columns = sorted(set(kwargs) - _IGNORED_KWARGS - {"completion_ids"})
                raise BindingError(
                    f"the reward needs the reference column {self.reference_column!r} "
                    f"(rl.data.response_column), but the dataset passed only {columns}"
                )
            references = kwargs[self.reference_column]
        completion_ids = kwargs.get("completion_ids")
        if completion_ids is None:
            return FlatBatch(completions, prompts, references)
        counts = [len(ids) for ids in completion_ids]
        stop_ids = self._stop_ids if self._stop_ids is not None else _trainer_stop_ids(kwargs)
        if stop_ids is None:
            if self._needs_finish_reason:
                raise BindingError(
                    "the reward needs 'finish_reason', which the binding derives from TRL's completion ids "
                    "and the tokenizer's EOS and pad ids; pass tokenizer= to reward_funcs (no trainer "
                    "tokenizer was found through TRL's log_metric)"
                )
            return FlatBatch(completions, prompts, references, counts)
        reasons = [trl_finish_reason(ids, stop_ids) for ids in completion_ids]
        return FlatBatch(completions, prompts, references, counts, reasons)

    def _groups(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]) -> list:
        return rebuild_groups(
            self._flat(prompts, completions, kwargs), self.num_generations, f"trl{next(self._calls)}"
        )

    def _observe(self, scores: _BatchScores, kwargs: dict[str, Any]) -> dict[str, float]:
        trainer = getattr(kwargs.get("log_metric"), "__self__", None)
        model = getattr(trainer, "model", None)
        if self.observer is None or scores.whole is None or (model is not None and not model.training):
            return {}
        # TRL's latest logged kl and entropy (of the last logged step: logging_steps=1 for every step).
        history = getattr(getattr(trainer, "state", None), "log_history", None) or [{}]
        last = history[-1]
        scalars = {
            name: float(last[name]) for name in ("kl", "entropy") if isinstance(last.get(name), (int, float))
        }
        step = getattr(kwargs.get("trainer_state"), "global_step", None)
        groups, scored = scores.whole
        return self.observer.observe(ObservedBatch(groups, scored, "trl", step=step, scalars=scalars))

    def _publish(self, scores: _BatchScores, kwargs: dict[str, Any]) -> None:
        log_metric = kwargs.get("log_metric")
        monitored = self._observe(scores, kwargs)
        if callable(log_metric):
            prefix = f"{self.reward.namespace}/"
            for name, value in {**scores.metrics, **monitored}.items():
                if name in self._logged_by_trl:
                    continue
                # TRL keeps train and eval metrics apart itself; the namespace would only repeat it.
                log_metric(f"rewardkit/{name.removeprefix(prefix)}", value)

    def _current_ranks(self) -> Ranks | None:
        return current_ranks() if self.ranks is _AUTO else self.ranks

    def _slice_scorer(self) -> RewardLike:
        # A rank's slice holds pieces of groups, so the pointwise reward checks no group size.
        if self._slice_reward is None:
            config = self.reward.config
            config = config.model_copy(update={"rl": config.rl.model_copy(update={"group_size": None})})
            self._slice_reward = build_reward(config, self.reward.selection, group_size=None)
        return self._slice_reward

    def _gather_batch(
        self, ranks: Ranks, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], int]:
        """Collective 1: every rank's samples, checked into the global batch's groups."""
        local: BaseException | None = None
        try:
            flat = self._flat(prompts, completions, kwargs)
            columns = {name: None if values is None else list(values) for name, values in vars(flat).items()}
            sent: tuple[str, Any] = ("ok", columns)
        except Exception as error:
            local, sent = error, _failure(ranks.rank, "reading its batch", error)
        gathered = ranks.gather(sent)
        _raise_failures(gathered, ranks.world, local)
        parts = [payload for _, payload in gathered]
        sizes = [len(part["completions"]) for part in parts]
        if len(set(sizes)) != 1:
            raise BindingError(
                f"the ranks hold {sizes} samples; TRL gives every rank the same number "
                "(per_device_train_batch_size), so the global batch cannot be put back together"
            )
        size = sizes[0]
        joined: dict[str, Any] = {
            name: None if first is None else [item for part in parts for item in part[name]]
            for name, first in parts[0].items()
        }
        whole = FlatBatch(**joined)
        try:
            groups = rebuild_groups(whole, self.num_generations, f"trl{next(self._calls)}")
        except BindingError as error:
            raise BindingError(
                f"{error} (samples are numbered across the {ranks.world} ranks in rank order, {size} per "
                f"rank: sample i is sample i % {size} of rank i // {size}; "
                f"num_generations={self.num_generations}, global batch {size * ranks.world})"
            ) from None
        return groups, size

    def _score_share(self, ranks: Ranks, groups: list[dict[str, Any]], size: int) -> tuple[str, Any]:
        """Score this rank's share; returns what collective 2 carries (its scored part, or a failure)."""
        if self.slices_per_rank:
            first = ranks.rank * size
            samples = [(group["group_id"], item) for group in groups for item in group["rollouts"]]
            runs = itertools.groupby(samples[first : first + size], lambda pair: pair[0])
            pieces = [{"group_id": group_id, "rollouts": [item for _, item in run]} for group_id, run in runs]
            return ("ok", self._slice_scorer().score(pieces))
        mine = groups[ranks.rank :: ranks.world]
        return ("ok", self.reward.score(mine) if mine else ScoredBatch((), {}, ()))

    def _score_across(
        self, ranks: Ranks, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> _BatchScores:
        groups, size = self._gather_batch(ranks, prompts, completions, kwargs)
        local: BaseException | None = None
        try:
            sent = self._score_share(ranks, groups, size)
        except Exception as error:
            local, sent = error, _failure(ranks.rank, "scoring its share", error)
        gathered = ranks.gather(sent)  # collective 2, on every rank whatever happened above
        _raise_failures(gathered, ranks.world, local)
        # Whole groups dealt round-robin, or slices that split groups: the finisher puts them back.
        whole = finish_split_batch(
            [part for _, part in gathered],
            self.reward.config.rl,
            group_order=[group["group_id"] for group in groups],
        )
        candidates = [candidate for _, candidate in whole.candidates()]
        if len(candidates) != size * ranks.world:
            raise BindingError(
                f"the ranks scored {len(candidates)} samples of a global batch of {size * ranks.world}"
            )
        mine = candidates[ranks.rank * size : (ranks.rank + 1) * size]
        observed = (groups, whole) if ranks.rank == 0 else None
        return _BatchScores(mine, self.component_names, whole.metrics, observed)

    @staticmethod
    def _same_batch(
        last: tuple[Sequence[Any], Sequence[Any], Any] | None, prompts: Any, completions: Any
    ) -> bool:
        # TRL hands every reward function the same list objects within one call; identity (with the
        # lists kept alive, so ids cannot be reused) plus equal contents rules out a stale hit.
        if last is None or last[0] is not prompts or last[1] is not completions:
            return False
        return list(last[1]) == list(completions)

    def scores(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> _BatchScores:
        if len(prompts) != len(completions):
            raise BindingError(f"TRL passed {len(prompts)} prompts for {len(completions)} completions")
        with self._lock:
            if self._same_batch(self._last, prompts, completions):
                assert self._last is not None
                return self._last[2]
            ranks = self._current_ranks()
            if ranks is not None and ranks.world > 1:
                result = self._score_across(ranks, prompts, completions, kwargs)
            else:
                groups = self._groups(prompts, completions, kwargs)
                result = _BatchScores.of(groups, self.reward.score(groups), self.component_names)
            self._last = (prompts, completions, result)
        self._publish(result, kwargs)
        return result

    async def ascores(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> _BatchScores:
        if len(prompts) != len(completions):
            raise BindingError(f"TRL passed {len(prompts)} prompts for {len(completions)} completions")
        pending = self._pending
        if pending is not None and self._same_batch(pending, prompts, completions):
            return await asyncio.shield(pending[2])
        future: asyncio.Future[_BatchScores] = asyncio.get_running_loop().create_future()
        self._pending = (prompts, completions, future)
        try:
            ranks = self._current_ranks()
            if ranks is not None and ranks.world > 1:
                result = await asyncio.to_thread(self._score_across, ranks, prompts, completions, kwargs)
            else:
                groups = self._groups(prompts, completions, kwargs)
                result = _BatchScores.of(groups, await self._ascore_streaming(groups), self.component_names)
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: the other functions of this batch re-raise it, or none wait
            raise
        future.set_result(result)
        self._publish(result, kwargs)
        return result

    async def _ascore_streaming(self, groups: Sequence[Any]) -> ScoredBatch:
        """The batch scored through a stream, each group submitted as soon as it is read (under
        ``batch`` scaling, where a stream cannot give advantages, in one ``ascore``). GRPOTrainer hands
        over whole batches, so this overlaps groups with each other, not with generation;
        AsyncGRPOTrainer calls once per group as generation finishes it (docs/bindings.md)."""
        stream = astream_of(self.reward)
        if stream is None:
            return await self.reward.ascore(groups)
        async with stream as scoring:
            for group in groups:
                await scoring.submit(group)
            return await scoring.close()

    def functions(self) -> list[RewardFunc]:
        """The total's function (``name`` None below), then one per component."""

        def make(name: str | None) -> RewardFunc:
            def function(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
                return self.scores(prompts, completions, kwargs).column(name)

            return _named(function, name or self.total_name)

        return [make(None), *map(make, self.component_names)]

    def async_functions(self) -> list[Callable[..., Any]]:
        def make(name: str | None) -> Callable[..., Any]:
            async def function(
                prompts: list[Any], completions: list[Any], **kwargs: Any
            ) -> list[float | None]:
                return (await self.ascores(prompts, completions, kwargs)).column(name)

            return _named(function, name or self.total_name)

        return [make(None), *map(make, self.component_names)]

    def weights(self) -> list[float]:
        return [1.0] + [0.0] * len(self.component_names)


def _trainer_stop_ids(kwargs: Mapping[str, Any]) -> frozenset[int] | None:
    """The EOS and pad ids of the calling trainer: TRL 1.13 passes ``log_metric=self._log_metric``
    (``GRPOTrainer._calculate_rewards``), whose trainer's ``processing_class`` holds them."""
    trainer = getattr(kwargs.get("log_metric"), "__self__", None)
    tokenizer = getattr(trainer, "processing_class", None)
    return stop_token_ids(tokenizer) if tokenizer is not None else None


def _named(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    # TRL names each function's metrics after __name__ (rewards/<name>/mean).
    function.__name__ = function.__qualname__ = name
    return function


def binding(
    config: ConfigSource | None = None,
    *,
    num_generations: int | None = None,
    reference_column: str | None = None,
    total_name: str = TOTAL_NAME,
    tokenizer: Any = None,
) -> TRLRewardBinding:
    """The state behind ``reward_funcs``: ``num_generations`` defaults to ``rl.group_size`` (both given:
    they must agree), ``reference_column`` to ``rl.data.response_column`` (read only when a provider
    needs a reference); ``tokenizer`` gives the EOS and pad ids (default: the trainer's)."""
    source = config_source(config, "rewardkit_bindings.trl")
    resolved = resolve_config(source)
    size = resolved.rl.group_size
    if num_generations is None:
        if size is None:
            raise BindingError(
                "TRL groups are num_generations consecutive completions; set rl.group_size in the config "
                "or pass num_generations= (the same value as GRPOConfig.num_generations)"
            )
        num_generations = size
    elif size is not None and size != num_generations:
        raise BindingError(
            f"num_generations={num_generations} but rl.group_size is {size}; they must be the same "
            "(GRPOConfig.num_generations)"
        )
    reward = reward_for(source, group_size=num_generations, advantage_eps=ADVANTAGE_EPS)
    observer = monitor_for(source)
    needs = {*reward.needs, *(observer.needs if observer is not None else ())}
    column = reference_column if reference_column is not None else resolved.rl.data.response_column
    if "reference" in needs and column is None:
        raise BindingError(
            "the selected reward (or rl.monitor.reference) needs a reference; set rl.data.response_column "
            "(or pass reference_column=) to the dataset column that holds it"
        )
    return TRLRewardBinding(
        reward,
        num_generations=num_generations,
        reference_column=column if "reference" in needs else None,
        total_name=total_name,
        tokenizer=tokenizer,
        observer=observer,
    )


def reward_funcs(
    config: ConfigSource | None = None,
    *,
    num_generations: int | None = None,
    reference_column: str | None = None,
    total_name: str = TOTAL_NAME,
    tokenizer: Any = None,
) -> tuple[list[RewardFunc], list[float]]:
    """TRL ``reward_funcs`` and matching ``reward_weights``: the total at 1, one function per component
    at 0. ``config`` is a YAML/TOML path, a mapping or a ``RewardkitConfig`` (``$REWARDKIT_CONFIG``)."""
    bound = binding(
        config,
        num_generations=num_generations,
        reference_column=reference_column,
        total_name=total_name,
        tokenizer=tokenizer,
    )
    return bound.functions(), bound.weights()


def async_reward_funcs(
    config: ConfigSource | None = None,
    *,
    num_generations: int | None = None,
    reference_column: str | None = None,
    total_name: str = TOTAL_NAME,
    tokenizer: Any = None,
) -> tuple[list[Callable[..., Any]], list[float]]:
    """``reward_funcs`` as coroutine functions (TRL runs them concurrently on its own event loop)."""
    bound = binding(
        config,
        num_generations=num_generations,
        reference_column=reference_column,
        total_name=total_name,
        tokenizer=tokenizer,
    )
    return bound.async_functions(), bound.weights()
