"""verl binding: ``compute_score`` for ``reward.custom_reward_function`` (and its batch form).

verl gathers every key of ``{"score": total, <component>: value, ...}`` across the batch, so every
response gets every component of every selection (NaN where it did not score). A null total is an
error, never 0: verl needs a number (docs/bindings.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rewardkit.plugin import (
    BindingError,
    ObservedBatch,
    RewardkitConfig,
    ScoredBatch,
    ScoredCandidate,
    merge_metrics,
    spec_of,
)
from rewardkit_bindings.loading import (
    ConfigSource,
    config_source,
    monitor_for,
    resolve_config,
    reward_for,
    selections,
)
from rewardkit_bindings.sample_groups import FlatBatch, rebuild_groups, singleton_groups
from rewardkit_bindings.truncation import refuse_missing

BINDING = "rewardkit_bindings.verl"
_NOT_PASSED = (
    "verl's reward managers pass compute_score no response length or EOS fact (data_source {source!r})"
)
MANAGER_HINT = (
    "Use rewardkit's reward manager, which passes both: reward.reward_manager.source=importlib "
    "reward.reward_manager.name=RewardkitRewardManager "
    "reward.reward_manager.module.path=<rewardkit_bindings.verl_manager.__file__>"
)
# verl's GRPO divides by (std + 1e-6); rl.advantage_eps overrides it.
ADVANTAGE_EPS = 1e-6
# The one monitor figure on every response: verl gathers each key across the batch, so a key must
# be on every response of every call; the signals are in the monitor's log (docs/monitor.md).
ALARM_KEY = "reward_monitor/alarm"


def component_names(config: RewardkitConfig) -> tuple[str, ...]:
    """Every component name of every selection, in order: the keys every response carries."""
    found = (name for selection in selections(config) for name in spec_of(selection).names)
    names = tuple(dict.fromkeys(found))
    if "score" in names:
        raise BindingError(
            "a component named 'score' would overwrite verl's reward key; rename the component"
        )
    return names


def _result(candidate: ScoredCandidate, where: str, names: Sequence[str]) -> dict[str, float]:
    if candidate.final is None:
        failed = {
            name: entry["reason"] for name, entry in candidate.breakdown.items() if entry["status"] == "error"
        }
        raise BindingError(
            f"{where}: the reward is null (onError: none and components errored: {failed}); verl needs a "
            "number for every response. Use onError: raise to stop, or zero to score through errors"
        )
    out = {"score": float(candidate.final)}
    for name in names:
        entry = candidate.breakdown.get(name)
        out[name] = float(entry["value"]) if entry is not None and entry["status"] == "scored" else math.nan
    return out


def _prompts(extra_infos: Sequence[Any] | None, key: str) -> list[Any] | None:
    if extra_infos is None:
        return None
    prompts = [info.get(key) if isinstance(info, dict) else None for info in extra_infos]
    return prompts if any(prompt is not None for prompt in prompts) else None


def _pick(values: Sequence[Any] | None, indices: Sequence[int]) -> list[Any] | None:
    return None if values is None else [values[index] for index in indices]


def preflight(config: ConfigSource | None = None, *, provided: Sequence[str] = ()) -> None:
    """Build every selection's reward as ``compute_score`` does, refusing a needed candidate field not in
    ``provided`` (rewardkit's manager calls it when verl builds it, before the first rollout)."""
    source = config_source(config, BINDING)
    resolved = resolve_config(source)
    for name in (None, *resolved.rl.reward.by_data_source):
        reward = reward_for(source, data_source=name, group_size=1, advantage_eps=ADVANTAGE_EPS)
        refuse_missing([reward], provided, _NOT_PASSED.format(source=name or "any"), MANAGER_HINT)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    config: ConfigSource | None = None,
    completion_token_count: int | None = None,
    finish_reason: str | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """Score one response for verl: ``{"score": total, <component>: value}``; ``config`` (from
    ``reward_kwargs``) defaults to ``$REWARDKIT_CONFIG``; other keyword arguments verl adds are ignored."""
    return compute_score_batch(
        [data_source],
        [solution_str],
        [ground_truth],
        [extra_info],
        config=config,
        group_size=1,
        completion_token_counts=None if completion_token_count is None else [completion_token_count],
        finish_reasons=None if finish_reason is None else [finish_reason],
    )[0]


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None] | None = None,
    *,
    config: ConfigSource | None = None,
    group_size: int | None = None,
    completion_token_counts: Sequence[int] | None = None,
    finish_reasons: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """One ``{"score": ..., ...}`` per response, for verl's batch reward manager: groups of ``group_size``
    (default ``rl.group_size``) consecutive responses share data source, ground truth and prompt. A
    reward needing ``completion_token_counts`` and ``finish_reasons`` is refused without them."""
    source = config_source(config, BINDING)
    resolved = resolve_config(source)
    size = group_size if group_size is not None else resolved.rl.group_size
    count = len(solution_strs)
    columns = {"data_sources": data_sources, "ground_truths": ground_truths, "extra_infos": extra_infos}
    columns |= {"completion_token_counts": completion_token_counts, "finish_reasons": finish_reasons}
    for name, values in columns.items():
        if values is not None and len(values) != count:
            raise BindingError(f"{name} has {len(values)} entries for {count} responses")
    given = {"completion_token_count": completion_token_counts, "finish_reason": finish_reasons}
    provided = [field for field, values in given.items() if values is not None]
    for index, text in enumerate(solution_strs):
        if not isinstance(text, str):
            kind = type(text).__name__
            raise BindingError(f"solution_str {index} is {kind}, not the decoded response text")
    if size is not None and size > 1 and count % size:
        raise BindingError(f"{count} responses do not divide into groups of {size} (group_size)")

    # Rows are routed by data source; a group never mixes sources, so route whole groups.
    step = size if size is not None and size > 1 else 1
    by_source: dict[str, list[int]] = {}
    for start in range(0, count, step):
        source_name = data_sources[start]
        for index in range(start, start + step):
            if data_sources[index] != source_name:
                raise BindingError(
                    f"response {index} has data_source {data_sources[index]!r} but its group (from response "
                    f"{start}) is {source_name!r}; a group comes from one prompt"
                )
        by_source.setdefault(str(source_name), []).extend(range(start, start + step))

    results: list[dict[str, float] | None] = [None] * count
    names = component_names(resolved)
    observer = monitor_for(source)
    needs = set(observer.needs) if observer is not None else set()
    scored_parts: list[tuple[list[dict[str, Any]], ScoredBatch]] = []
    prompt_key = resolved.rl.data.prompt_column
    for source_name, indices in by_source.items():
        reward = reward_for(source, data_source=source_name, group_size=step, advantage_eps=ADVANTAGE_EPS)
        refuse_missing([reward], provided, _NOT_PASSED.format(source=source_name), MANAGER_HINT)
        infos = _pick(extra_infos, indices)
        batch = FlatBatch(
            completions=[solution_strs[i] for i in indices],
            prompts=_prompts(infos, prompt_key) if "prompt" in {*reward.needs, *needs} else None,
            references=[ground_truths[i] for i in indices],
            token_counts=_pick(completion_token_counts, indices),
            finish_reasons=_pick(finish_reasons, indices),
        )
        if "prompt" in reward.needs and batch.prompts is None:
            raise BindingError(
                f"data_source {source_name!r}: the reward needs the prompt, which verl does not pass; put it "
                f"in extra_info[{prompt_key!r}] (rl.data.prompt_column) in the dataset"
            )
        prefix = f"verl-{source_name}"
        groups = rebuild_groups(batch, step, prefix) if step > 1 else singleton_groups(batch, prefix)
        scored = reward.score(groups)
        scored_parts.append((groups, scored))
        for index, (_, candidate) in zip(indices, scored.candidates()):
            results[index] = _result(candidate, f"response {index} (data_source {source_name!r})", names)
    scored_results = [result for result in results if result is not None]
    if observer is not None:
        alarm = observer.observe(_observed(scored_parts, grouped=step > 1)).get(f"train/{ALARM_KEY}", 0.0)
        for result in scored_results:
            result[ALARM_KEY] = alarm
    return scored_results


def _observed(parts: Sequence[tuple[list[dict[str, Any]], ScoredBatch]], *, grouped: bool) -> ObservedBatch:
    """One call's batch across its data sources, as the monitor sees it (verl gives no step)."""
    if len(parts) == 1:
        return ObservedBatch(parts[0][0], parts[0][1], "verl", grouped=grouped)
    metrics, weights = merge_metrics((scored.metrics, scored.metric_weights) for _, scored in parts)
    whole = ScoredBatch(
        tuple(group for _, scored in parts for group in scored.groups),
        metrics,
        tuple(record for _, scored in parts for record in scored.providers),
        weights,
    )
    return ObservedBatch([group for groups, _ in parts for group in groups], whole, "verl", grouped=grouped)
