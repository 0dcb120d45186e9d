"""OpenRLHF binding: ``reward_func(queries, prompts, labels)`` for ``--remote_rm_url /path/to/file.py``.

OpenRLHF loads ``reward_func`` from a ``.py`` path given as the remote RM URL and calls it with
the decoded query (prompt + response, special tokens kept), the prompt text and the label, then
reads ``{"rewards": ..., "scores": ..., "extra_logs": {...}}``. Use it as::

    export REWARDKIT_CONFIG=/path/to/reward.yaml
    --remote_rm_url "$(python -c 'import rewardkit.bindings.openrlhf as m; print(m.__file__)')"

The response is the query with the prompt removed from its front and trailing end-of-sequence
markers stripped. The label is the reference; the prompt is the prompt. OpenRLHF calls with one
sample at a time, so samples are scored one by one (groups of one). A null total (``onError:
none``) is refused with an error: OpenRLHF has no "no reward" value and must not train on 0.
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
# End-of-sequence markers of common chat templates; OpenRLHF decodes with special tokens kept.
EOS_MARKERS: tuple[str, ...] = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "</s>",
    "<eos>",
)


def response_of(query: str, prompt: str, index: int, eos_markers: Sequence[str] = EOS_MARKERS) -> str:
    """The response part of a decoded query: after the prompt, without trailing EOS markers and padding."""
    if not isinstance(query, str) or not isinstance(prompt, str):
        raise BindingError(
            f"sample {index}: query and prompt must be text, got {type(query).__name__} and "
            f"{type(prompt).__name__}"
        )
    at = query.rfind(prompt) if prompt else 0
    if at < 0:
        raise BindingError(
            f"sample {index}: the prompt does not occur in the query, so the response cannot be separated "
            f"(prompt starts {prompt[:60]!r}, query starts {query[:60]!r})"
        )
    response = query[at + len(prompt) :]
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
    reward = reward_for(source, group_size=1)
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
