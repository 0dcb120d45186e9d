"""TRL binding: rewardkit as ``GRPOTrainer`` reward functions.

``reward_funcs(config)`` returns ``(funcs, weights)``::

    funcs, weights = reward_funcs("reward.yaml")
    trainer = GRPOTrainer(model=..., reward_funcs=funcs,
                          args=GRPOConfig(reward_weights=weights, num_generations=4, ...), ...)

``funcs[0]`` returns the composed total (``final``) at weight 1; each further function returns one
component's value at weight 0, so TRL logs ``rewards/<component>/mean`` without it counting twice.
All of them share one scoring pass per batch: the first function called scores the whole batch and
the others read that result. TRL passes ``num_generations`` consecutive completions per prompt; they
are rebuilt into rewardkit groups and checked (same prompt, same reference in every group).

``None`` means "no number" to TRL (it becomes NaN and the sample is left out of means and
baselines). A null total (``onError: none``) gives ``None`` from *every* function for that sample,
so TRL marks it unscorable; if the components still reported numbers, TRL would add them as
``0 * value`` and train on a reward of 0, which is exactly what ``onError`` exists to prevent. A
component that was skipped or errored gives ``None`` for itself only. Under ``onError: raise`` an
error fails the training step. Provider diagnostics and the batch report go to TRL's
``log_metric`` when TRL passes it. ``async_reward_funcs`` is the same as coroutine functions.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from rewardkit.bindings.groups import BindingError, FlatBatch, rebuild_groups
from rewardkit.bindings.loading import ConfigSource, config_source, resolve_config
from rewardkit.reward import Reward
from rewardkit.worker import ScoredBatch

TOTAL_NAME = "rewardkit"
_IGNORED_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})

RewardFunc = Callable[..., list[float | None]]


class _BatchScores:
    """What the functions of one call share: the scored batch, and each sample's total and components."""

    def __init__(self, scored: ScoredBatch, names: Sequence[str]) -> None:
        self.scored = scored
        self.totals: list[float | None] = []
        self.components: dict[str, list[float | None]] = {name: [] for name in names}
        for _, candidate in scored.candidates():
            self.totals.append(candidate.final)
            for name in names:
                entry = candidate.breakdown[name]
                value = entry["value"] if entry["status"] == "scored" else None
                # A null total makes the whole row unscorable for TRL (see the module docstring).
                self.components[name].append(None if candidate.final is None else value)


class TRLRewardBinding:
    """The state behind one ``reward_funcs`` call: the reward, the group size and the last batch scored."""

    def __init__(
        self,
        reward: Reward,
        *,
        num_generations: int,
        reference_column: str | None,
        total_name: str = TOTAL_NAME,
    ) -> None:
        self.reward = reward
        self.num_generations = num_generations
        self.reference_column = reference_column
        self.total_name = total_name
        self.component_names = tuple(reward.spec.names)
        if total_name in self.component_names:
            raise BindingError(
                f"the total's function name {total_name!r} is also a component name; TRL logs both under "
                f"rewards/{total_name}/mean. Pass total_name= to pick another"
            )
        self._lock = threading.Lock()
        self._last: tuple[list[Any], list[Any], _BatchScores] | None = None
        self._pending: tuple[list[Any], list[Any], asyncio.Future[_BatchScores]] | None = None
        self._calls = itertools.count()

    # -- one scoring pass per batch ---------------------------------------------------------------

    def _flat(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]) -> FlatBatch:
        references = None
        if self.reference_column is not None:
            if self.reference_column not in kwargs:
                columns = sorted(
                    key for key in kwargs if key not in _IGNORED_KWARGS and key != "completion_ids"
                )
                raise BindingError(
                    f"the reward needs the reference column {self.reference_column!r} "
                    f"(rl.data.response_column), but the dataset passed only {columns}"
                )
            references = kwargs[self.reference_column]
        completion_ids = kwargs.get("completion_ids")
        counts = [len(ids) for ids in completion_ids] if completion_ids is not None else None
        return FlatBatch(completions, prompts, references, counts)

    def _groups(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]) -> list:
        return rebuild_groups(
            self._flat(prompts, completions, kwargs), self.num_generations, f"trl{next(self._calls)}"
        )

    def _publish(self, scores: _BatchScores, kwargs: dict[str, Any]) -> None:
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            prefix = f"{self.reward.worker.namespace}/"
            for name, value in scores.scored.metrics.items():
                # TRL keeps train and eval metrics apart itself; the namespace would only repeat it.
                log_metric(f"rewardkit/{name.removeprefix(prefix)}", value)

    @staticmethod
    def _same_batch(last: tuple[list[Any], list[Any], Any] | None, prompts: Any, completions: Any) -> bool:
        # TRL hands every reward function the same list objects within one call; identity (with the
        # lists kept alive, so ids cannot be reused) plus equal contents rules out a stale hit.
        return (
            last is not None
            and last[1] is completions
            and last[0] is prompts
            and list(last[1]) == list(completions)
        )

    def scores(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> _BatchScores:
        with self._lock:
            if self._same_batch(self._last, prompts, completions):
                assert self._last is not None
                return self._last[2]
            scored = self.reward.score(self._groups(prompts, completions, kwargs))
            result = _BatchScores(scored, self.component_names)
            self._last = (prompts, completions, result)
        self._publish(result, kwargs)
        return result

    async def ascores(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> _BatchScores:
        pending = self._pending
        if pending is not None and self._same_batch(pending, prompts, completions):
            return await asyncio.shield(pending[2])
        future: asyncio.Future[_BatchScores] = asyncio.get_running_loop().create_future()
        self._pending = (prompts, completions, future)
        try:
            scored = await self.reward.ascore(self._groups(prompts, completions, kwargs))
            result = _BatchScores(scored, self.component_names)
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: the other functions of this batch re-raise it, or none wait
            raise
        future.set_result(result)
        self._publish(result, kwargs)
        return result

    # -- the functions TRL calls ------------------------------------------------------------------

    def _check(self, prompts: Sequence[Any], completions: Sequence[Any]) -> None:
        if len(prompts) != len(completions):
            raise BindingError(f"TRL passed {len(prompts)} prompts for {len(completions)} completions")

    def functions(self) -> list[RewardFunc]:
        def total(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
            self._check(prompts, completions)
            return list(self.scores(prompts, completions, kwargs).totals)

        funcs: list[RewardFunc] = [_named(total, self.total_name)]
        for name in self.component_names:

            def component(
                prompts: list[Any], completions: list[Any], _name: str = name, **kwargs: Any
            ) -> list[float | None]:
                self._check(prompts, completions)
                return list(self.scores(prompts, completions, kwargs).components[_name])

            funcs.append(_named(component, name))
        return funcs

    def async_functions(self) -> list[Callable[..., Any]]:
        async def total(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
            self._check(prompts, completions)
            return list((await self.ascores(prompts, completions, kwargs)).totals)

        funcs: list[Callable[..., Any]] = [_named(total, self.total_name)]
        for name in self.component_names:

            async def component(
                prompts: list[Any], completions: list[Any], _name: str = name, **kwargs: Any
            ) -> list[float | None]:
                self._check(prompts, completions)
                return list((await self.ascores(prompts, completions, kwargs)).components[_name])

            funcs.append(_named(component, name))
        return funcs

    def weights(self) -> list[float]:
        return [1.0] + [0.0] * len(self.component_names)


def _named(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    # TRL names each function's metrics after __name__ (rewards/<name>/mean).
    function.__name__ = name
    function.__qualname__ = name
    return function


def binding(
    config: ConfigSource | None = None,
    *,
    num_generations: int | None = None,
    reference_column: str | None = None,
    total_name: str = TOTAL_NAME,
) -> TRLRewardBinding:
    """Build the shared state behind ``reward_funcs`` / ``async_reward_funcs``.

    ``num_generations`` defaults to ``rl.group_size``; when both are given they must agree.
    ``reference_column`` defaults to ``rl.data.response_column`` and is only read when a selected
    provider needs a reference.
    """
    resolved = resolve_config(config_source(config, "rewardkit.bindings.trl"))
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
    reward = Reward(resolved, group_size=num_generations)
    column = reference_column if reference_column is not None else resolved.rl.data.response_column
    if "reference" in reward.needs and column is None:
        raise BindingError(
            "the selected reward needs a reference; set rl.data.response_column (or pass reference_column=) "
            "to the dataset column that holds it"
        )
    return TRLRewardBinding(
        reward,
        num_generations=num_generations,
        reference_column=column if "reference" in reward.needs else None,
        total_name=total_name,
    )


def reward_funcs(
    config: ConfigSource | None = None,
    *,
    num_generations: int | None = None,
    reference_column: str | None = None,
    total_name: str = TOTAL_NAME,
) -> tuple[list[RewardFunc], list[float]]:
    """TRL ``reward_funcs`` and matching ``reward_weights``: the total at 1, one function per component at 0.

    ``config`` is a YAML/TOML path, a mapping or a ``RewardkitConfig`` (default: ``$REWARDKIT_CONFIG``).
    """
    bound = binding(
        config, num_generations=num_generations, reference_column=reference_column, total_name=total_name
    )
    return bound.functions(), bound.weights()


def async_reward_funcs(
    config: ConfigSource | None = None,
    *,
    num_generations: int | None = None,
    reference_column: str | None = None,
    total_name: str = TOTAL_NAME,
) -> tuple[list[Callable[..., Any]], list[float]]:
    """``reward_funcs`` as coroutine functions (TRL runs them concurrently on its own event loop)."""
    bound = binding(
        config, num_generations=num_generations, reference_column=reference_column, total_name=total_name
    )
    return bound.async_functions(), bound.weights()
