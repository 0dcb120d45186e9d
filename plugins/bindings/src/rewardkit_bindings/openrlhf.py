"""OpenRLHF binding: ``reward_func(queries, prompts, labels)`` for ``--remote_rm_url /path/to/file.py``.

The response is the query with the prompt cut from its front only and trailing EOS markers stripped
(``rewardkit.plugin.response_of``: the Reward Service cuts OpenRLHF's queries the same way); the label
is the reference. A null total is an error: OpenRLHF has no "no reward" value. A reward
that needs token counts is refused when OpenRLHF loads this file unless the tokenizer and the
generation limit are set in the environment (docs/bindings.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from rewardkit.plugin import (
    CANDIDATE_NEEDS,
    BindingError,
    ObservedBatch,
    generated_part,
    strip_eos,
)
from rewardkit_bindings.loading import CONFIG_ENV, ConfigSource, config_source, monitor_for, reward_for
from rewardkit_bindings.sample_groups import FlatBatch, singleton_groups
from rewardkit_bindings.truncation import budget_finish_reason, refuse_missing

BINDING = "rewardkit_bindings.openrlhf"
TOKENIZER_ENV = "REWARDKIT_OPENRLHF_TOKENIZER"
MAX_NEW_TOKENS_ENV = "REWARDKIT_OPENRLHF_MAX_NEW_TOKENS"
# openrlhf 0.11.2 (utils/agent.py, SingleTurnAgentExecutor) imports the --remote_rm_url file as a
# module of this name and calls reward_func inside ``except Exception: logger.info(...)``.
OPENRLHF_MODULE_NAME = "reward_func"
# OpenRLHF's group_norm divides by (std + 1e-9); rl.advantage_eps overrides it.
ADVANTAGE_EPS = 1e-9
# The one monitor figure in extra_logs on every call (OpenRLHF averages each key over its batches);
# the signals are in the monitor's log (docs/monitor.md).
ALARM_KEY = "reward_monitor/alarm"


def _as_output(values: list[float]) -> Any:
    # OpenRLHF's own examples return tensors; torch is always there under OpenRLHF.
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.float32)


class GenerationLimit:
    """The tokenizer OpenRLHF generates with and its ``--rollout.max_new_tokens``."""

    # A plain class: OpenRLHF executes this file without registering it in sys.modules, where
    # dataclasses look up string annotations.
    def __init__(self, tokenizer: Any, max_new_tokens: int) -> None:
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens

    def measure(self, generated: str) -> tuple[int, str]:
        """Token count and finish reason of a response (the generated part of a query, EOS kept)."""
        count = len(self.tokenizer(generated, add_special_tokens=False)["input_ids"])
        eos = getattr(self.tokenizer, "eos_token", None)
        ends_with_eos = isinstance(eos, str) and bool(eos) and generated.rstrip().endswith(eos)
        return count, budget_finish_reason(count, self.max_new_tokens, ends_with_eos)


def limit_from_environment() -> GenerationLimit | None:
    """The limit ``REWARDKIT_OPENRLHF_TOKENIZER`` and ``REWARDKIT_OPENRLHF_MAX_NEW_TOKENS`` configure."""
    path = os.environ.get(TOKENIZER_ENV, "").strip()
    limit = os.environ.get(MAX_NEW_TOKENS_ENV, "").strip()
    if not path and not limit:
        return None
    if not path or not limit:
        missing = TOKENIZER_ENV if not path else MAX_NEW_TOKENS_ENV
        raise BindingError(
            f"{missing} is not set; token counts need both {TOKENIZER_ENV} and {MAX_NEW_TOKENS_ENV}"
        )
    if not limit.isdigit() or int(limit) < 1:
        raise BindingError(f"{MAX_NEW_TOKENS_ENV} must be a positive integer, got {limit!r}")
    from transformers import AutoTokenizer

    return GenerationLimit(AutoTokenizer.from_pretrained(path), int(limit))


_NO_FIELDS = "OpenRLHF's reward_func(queries, prompts, labels) carries no token counts or finish reasons"
_REMEDY = (
    f"Set {TOKENIZER_ENV} (the run's tokenizer) and {MAX_NEW_TOKENS_ENV} (--rollout.max_new_tokens) "
    "so the binding derives them, or configure a reward without them"
)


def _reward(source: ConfigSource, limit: GenerationLimit | None) -> Any:
    reward = reward_for(source, group_size=1, advantage_eps=ADVANTAGE_EPS)
    refuse_missing([reward], CANDIDATE_NEEDS if limit is not None else (), _NO_FIELDS, _REMEDY)
    return reward


def preflight(config: ConfigSource | None = None, *, limit: GenerationLimit | None = None) -> None:
    """Build ``reward_func``'s reward, refusing what OpenRLHF cannot give (``limit`` defaults to env's)."""
    _reward(config_source(config, BINDING), limit if limit is not None else _environment_limit())


def score(
    queries: Sequence[str],
    prompts: Sequence[str],
    labels: Sequence[Any] | None,
    *,
    config: ConfigSource | None = None,
    limit: GenerationLimit | None = None,
) -> tuple[list[float], dict[str, list[float]]]:
    """Totals and per-component values for OpenRLHF samples (plain lists; ``reward_func`` wraps them);
    ``limit`` (default: the environment's) gives token counts and finish reasons."""
    source = config_source(config, BINDING)
    count = len(queries)
    if len(prompts) != count or (labels is not None and len(labels) != count):
        raise BindingError(
            f"got {count} queries, {len(prompts)} prompts and "
            f"{len(labels) if labels is not None else 0} labels; OpenRLHF passes one of each per sample"
        )
    limit = limit if limit is not None else _environment_limit()
    reward = _reward(source, limit)
    observer = monitor_for(source)
    needs = {*reward.needs, *(observer.needs if observer is not None else ())}
    if "reference" in needs and labels is None:
        raise BindingError("the reward needs a reference; set OpenRLHF's --label_key so labels are passed")
    generated = [
        generated_part(query, prompt, index) for index, (query, prompt) in enumerate(zip(queries, prompts))
    ]
    measured = [limit.measure(text) for text in generated] if limit is not None else None
    batch = FlatBatch(
        completions=[strip_eos(text) for text in generated],
        prompts=list(prompts),
        references=list(labels) if labels is not None and "reference" in needs else None,
        token_counts=[count for count, _ in measured] if measured is not None else None,
        finish_reasons=[reason for _, reason in measured] if measured is not None else None,
    )
    groups = singleton_groups(batch, "openrlhf")
    scored = reward.score(groups)
    totals: list[float] = []
    components: dict[str, list[float]] = {name: [] for name in reward.spec.names}
    for index, (_, candidate) in enumerate(scored.candidates()):
        if candidate.final is None:
            raise BindingError(
                f"sample {index}: the reward is null (onError: none and a component errored); "
                "OpenRLHF needs a number. Use onError: raise to stop, or zero to score through errors"
            )
        totals.append(float(candidate.final))
        for name, entry in candidate.breakdown.items():
            components[name].append(float(entry["value"]) if entry["status"] == "scored" else math.nan)
    if observer is not None:
        monitored = observer.observe(ObservedBatch(groups, scored, "openrlhf", grouped=False))
        components[ALARM_KEY] = [monitored.get(f"train/{ALARM_KEY}", 0.0)] * count
    return totals, components


def reward_func(
    queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """OpenRLHF's custom reward function: ``{"rewards", "scores", "extra_logs"}`` (the configuration
    from ``config=`` when passed, else ``$REWARDKIT_CONFIG``)."""
    config, limit = kwargs.get("config"), kwargs.get("limit")
    totals, components = score(queries, prompts, labels, config=config, limit=limit)
    rewards = _as_output(totals)
    logs = {name: _as_output(values) for name, values in components.items()}
    return {"rewards": rewards, "scores": rewards, "extra_logs": logs}


_environment_limits: dict[tuple[str, str], GenerationLimit | None] = {}


def _environment_limit() -> GenerationLimit | None:
    # The tokenizer loads once per (path, limit), not on every sample.
    key = (os.environ.get(TOKENIZER_ENV, "").strip(), os.environ.get(MAX_NEW_TOKENS_ENV, "").strip())
    if key not in _environment_limits:
        _environment_limits[key] = limit_from_environment()
    return _environment_limits[key]


if __name__ == OPENRLHF_MODULE_NAME and os.environ.get(CONFIG_ENV, "").strip():
    # OpenRLHF is loading this file: refuse a reward it cannot score while a raise still stops the
    # run (OpenRLHF only logs reward_func's errors).
    preflight(limit=_environment_limit())
