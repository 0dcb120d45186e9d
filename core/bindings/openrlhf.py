"""OpenRLHF binding: ``reward_func(queries, prompts, labels)`` for ``--remote_rm_url /path/to/file.py``.

Use it as (details in docs/bindings.md)::

    export REWARDKIT_CONFIG=/path/to/reward.yaml
    --remote_rm_url "$(python -c 'import rewardkit.bindings.openrlhf as m; print(m.__file__)')"

The response is the query with the prompt cut from its front only (a model that repeats the prompt
keeps its answer) and trailing EOS markers stripped; the label is the reference. Samples are scored
one by one; a null total is an error, since OpenRLHF has no "no reward" value.

A reward needing token counts or finish reasons (``overlong``) is refused when OpenRLHF loads this
file (OpenRLHF only logs what ``reward_func`` raises, and trains on), unless
``REWARDKIT_OPENRLHF_TOKENIZER`` (the run's tokenizer) and ``REWARDKIT_OPENRLHF_MAX_NEW_TOKENS``
(``--rollout.max_new_tokens``) are set: the response is then re-encoded (EOS included, as vLLM
counts it) and ``"length"`` when it reached the limit without ending in EOS.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from rewardkit.bindings.loading import CONFIG_ENV, ConfigSource, config_source, reward_for
from rewardkit.bindings.sample_groups import BindingError, FlatBatch, singleton_groups
from rewardkit.bindings.truncation import budget_finish_reason, refuse_missing
from rewardkit.contracts import CANDIDATE_NEEDS

BINDING = "rewardkit.bindings.openrlhf"
TOKENIZER_ENV = "REWARDKIT_OPENRLHF_TOKENIZER"
MAX_NEW_TOKENS_ENV = "REWARDKIT_OPENRLHF_MAX_NEW_TOKENS"
# openrlhf 0.11.2 (utils/agent.py, SingleTurnAgentExecutor) imports the --remote_rm_url file as a
# module of this name and calls reward_func inside ``except Exception: logger.info(...)``.
OPENRLHF_MODULE_NAME = "reward_func"
# OpenRLHF's group_norm divides by (std + 1e-9); rl.advantage_eps overrides it.
ADVANTAGE_EPS = 1e-9
# End-of-sequence markers of common chat templates; OpenRLHF decodes with special tokens kept.
EOS_MARKERS: tuple[str, ...] = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "</s>",
    "<eos>",
)
# BOS markers a decoded query may start with before the prompt text (special tokens are kept).
BOS_MARKERS: tuple[str, ...] = ("<|begin_of_text|>", "<|startoftext|>", "<s>", "<bos>")


def _prefix_end(query: str, prompt: str) -> int | None:
    """Where ``prompt`` ends in ``query`` when the query starts with it, whitespace aside; else None.

    The query is the prompt's token ids decoded, then the response's: the prompt comes back as the
    tokenizer writes it, where runs of whitespace may differ (``clean_up_tokenization_spaces``
    removes the space before punctuation) but every other character is the prompt's own."""
    if query.startswith(prompt):  # the usual case, without a Python loop over every character
        at = len(prompt)
    else:
        at = 0
        for char in prompt:
            if char.isspace():
                continue
            while at < len(query) and query[at].isspace():
                at += 1
            if at >= len(query) or query[at] != char:
                return None
            at += 1
    if prompt[-1:].isspace():  # a prompt that ends in whitespace owns the query's whitespace there
        while at < len(query) and query[at].isspace():
            at += 1
    return at


def response_of(query: str, prompt: str, index: int, eos_markers: Sequence[str] = EOS_MARKERS) -> str:
    """The response part of a decoded query: after the prompt (cut only from the front, after BOS
    markers, whitespace compared loosely), without trailing EOS markers; a query that does not
    start with its prompt is refused: a guess could score the wrong text."""
    return strip_eos(generated_part(query, prompt, index), eos_markers)


def generated_part(query: str, prompt: str, index: int) -> str:
    """What follows the prompt in a decoded query, EOS markers kept (see ``response_of``)."""
    if not isinstance(query, str) or not isinstance(prompt, str):
        raise BindingError(
            f"sample {index}: query and prompt must be text, got {type(query).__name__} and "
            f"{type(prompt).__name__}"
        )
    start = 0
    stripped = True
    while stripped:
        stripped = False
        for marker in BOS_MARKERS:
            if query.startswith(marker, start) and not prompt.startswith(marker):
                start += len(marker)
                stripped = True
    end = _prefix_end(query[start:], prompt)
    if end is None:
        raise BindingError(
            f"sample {index}: the query does not start with its prompt, so the response cannot be separated "
            f"(prompt starts {prompt[:60]!r}, query starts {query[:60]!r}). OpenRLHF sends the decoded "
            "prompt followed by the response; a prompt longer than the prompt budget is cut from the left "
            "(raise --prompt_max_len / --max_len), and a tokenizer that rewrites more than whitespace "
            "(unknown tokens, normalisers) cannot be matched"
        )
    return query[start + end :]


def strip_eos(response: str, eos_markers: Sequence[str] = EOS_MARKERS) -> str:
    """``response`` without its trailing end-of-sequence markers."""
    stripped = True
    while stripped:
        stripped = False
        for marker in eos_markers:
            if marker and response.endswith(marker):
                response = response[: -len(marker)]
                stripped = True
    return response


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
    """Build the reward ``reward_func`` scores with and refuse what OpenRLHF cannot give it
    (``limit`` defaults to the environment's)."""
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
    if "reference" in reward.needs and labels is None:
        raise BindingError("the reward needs a reference; set OpenRLHF's --label_key so labels are passed")
    generated = [
        generated_part(query, prompt, index) for index, (query, prompt) in enumerate(zip(queries, prompts))
    ]
    measured = [limit.measure(text) for text in generated] if limit is not None else None
    batch = FlatBatch(
        completions=[strip_eos(text) for text in generated],
        prompts=list(prompts),
        references=list(labels) if labels is not None and "reference" in reward.needs else None,
        token_counts=[count for count, _ in measured] if measured is not None else None,
        finish_reasons=[reason for _, reason in measured] if measured is not None else None,
    )
    scored = reward.score(singleton_groups(batch, "openrlhf"))
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
    return totals, components


def reward_func(
    queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """OpenRLHF's custom reward function: ``{"rewards", "scores", "extra_logs"}`` (the configuration
    from ``config=`` when passed, else ``$REWARDKIT_CONFIG``)."""
    totals, components = score(
        queries, prompts, labels, config=kwargs.get("config"), limit=kwargs.get("limit")
    )
    rewards = _as_output(totals)
    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {name: _as_output(values) for name, values in components.items()},
    }


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
