"""OpenRLHF binding: ``reward_func(queries, prompts, labels)`` for ``--remote_rm_url /path/to/file.py``.

OpenRLHF loads ``reward_func`` from a ``.py`` path given as the remote RM URL and calls it with
the decoded query (prompt + response, special tokens kept), the prompt text and the label, then
reads ``{"rewards": ..., "scores": ..., "extra_logs": {...}}``. Use it as::

    export REWARDKIT_CONFIG=/path/to/reward.yaml
    --remote_rm_url "$(python -c 'import rewardkit.bindings.openrlhf as m; print(m.__file__)')"

The response is the query with the prompt removed from its front (never from later on: a model that
repeats the prompt keeps its answer) and trailing end-of-sequence markers stripped; a query that
does not start with its prompt is an error. The label is the reference; the prompt is the prompt.
OpenRLHF calls with one sample at a time, so samples are scored one by one (groups of one). A null
total (``onError: none``) is refused with an error: OpenRLHF has no "no reward" value and must not
train on 0.
``extra_logs`` holds each component's value (NaN when it did not score).

For a Reward Service, point ``--remote_rm_url`` at its ``/get_reward`` endpoint instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rewardkit.bindings.groups import BindingError, FlatBatch, singleton_groups
from rewardkit.bindings.loading import ConfigSource, config_source, reward_for

BINDING = "rewardkit.bindings.openrlhf"
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


# Markers a decoded query may start with before the prompt text (a tokenizer's BOS, kept by decoding
# with special tokens when the chat template or the dataset put it into the prompt's token ids).
BOS_MARKERS: tuple[str, ...] = ("<|begin_of_text|>", "<|startoftext|>", "<s>", "<bos>")


def _prefix_end(query: str, prompt: str) -> int | None:
    """Where ``prompt`` ends in ``query`` when the query starts with it, whitespace aside; else None.

    OpenRLHF builds the query by decoding the prompt's token ids followed by the response's, so the
    prompt comes back as the tokenizer writes it: runs of whitespace may differ (word-level and
    byte-level decoders, ``clean_up_tokenization_spaces`` removing the space before punctuation),
    every other character is the prompt's own. The match is anchored at the start: text that repeats
    the prompt later in the query belongs to the response.
    """
    if query.startswith(prompt):  # the usual case, without a Python loop over every character
        at = len(prompt)
        if prompt[-1:].isspace():
            while at < len(query) and query[at].isspace():
                at += 1
        return at
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
    """The response part of a decoded query: after the prompt, without trailing EOS markers and padding.

    The prompt is cut only from the front of the query (after leading BOS markers, with whitespace
    compared loosely, see ``_prefix_end``); a query that does not start with its prompt is refused,
    since guessing where the response starts could score the wrong text.
    """
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
    response = query[start + end :]
    stripped = True
    while stripped:
        stripped = False
        for marker in eos_markers:
            if marker and response.endswith(marker):
                response = response[: -len(marker)]
                stripped = True
    return response


def _as_output(values: list[float]) -> Any:
    # OpenRLHF's own examples return tensors and it wraps values with torch.tensor; give it one when
    # torch is there (it always is under OpenRLHF), and a list otherwise.
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.float32)


def score(
    queries: Sequence[str],
    prompts: Sequence[str],
    labels: Sequence[Any] | None,
    *,
    config: ConfigSource | None = None,
) -> tuple[list[float], dict[str, list[float]]]:
    """Totals and per-component values for OpenRLHF samples (plain lists; ``reward_func`` wraps them)."""
    source = config_source(config, BINDING)
    count = len(queries)
    if len(prompts) != count or (labels is not None and len(labels) != count):
        raise BindingError(
            f"got {count} queries, {len(prompts)} prompts and "
            f"{len(labels) if labels is not None else 0} labels; OpenRLHF passes one of each per sample"
        )
    reward = reward_for(source, group_size=1, advantage_eps=ADVANTAGE_EPS)
    if "reference" in reward.needs and labels is None:
        raise BindingError("the reward needs a reference; set OpenRLHF's --label_key so labels are passed")
    batch = FlatBatch(
        completions=[
            response_of(query, prompt, index) for index, (query, prompt) in enumerate(zip(queries, prompts))
        ],
        prompts=list(prompts),
        references=list(labels) if labels is not None and "reference" in reward.needs else None,
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
    queries: Sequence[str],
    prompts: Sequence[str],
    labels: Sequence[Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """OpenRLHF's custom reward function: ``{"rewards", "scores", "extra_logs"}``.

    The configuration comes from ``config=`` when a caller passes it, else ``$REWARDKIT_CONFIG``.
    """
    totals, components = score(queries, prompts, labels, config=kwargs.get("config"))
    rewards = _as_output(totals)
    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {name: _as_output(values) for name, values in components.items()},
    }
