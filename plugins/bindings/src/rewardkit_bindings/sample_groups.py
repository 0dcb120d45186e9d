"""Rebuilding rollout groups from the flat per-sample lists that trainers hand to reward functions;
a slice that is not one whole group (same prompt and reference) is refused, since scoring a half
group as a whole one would give the wrong group-relative signal."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.plugin import BindingError, NotJSONError, freeze, strictly_equal


@dataclass(frozen=True)
class FlatBatch:
    """One call's worth of samples, as parallel lists (``references`` may be ``None``: not needed)."""

    completions: Sequence[str]
    prompts: Sequence[Any] | None = None
    references: Sequence[Any] | None = None
    token_counts: Sequence[int | None] | None = None
    finish_reasons: Sequence[str | None] | None = None


def completion_text(completion: object, index: int) -> str:
    """The text of one completion: a string, or (TRL's conversational form) the assistant messages'
    contents joined by newlines, since tool turns are not the model's answer."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and not isinstance(completion, (bytes, bytearray)):
        parts = []
        for position, message in enumerate(completion):
            if not isinstance(message, Mapping) or "content" not in message:
                raise BindingError(
                    f"completion {index}: message {position} is {type(message).__name__}, not a "
                    "{'role': ..., 'content': ...} mapping"
                )
            if message.get("role", "assistant") != "assistant":
                continue
            content = message["content"]
            if isinstance(content, list):  # multimodal content blocks: keep the text ones
                content = "".join(block.get("text", "") for block in content if isinstance(block, Mapping))
            if not isinstance(content, str):
                raise BindingError(
                    f"completion {index}: message {position} content is {type(content).__name__}, not text"
                )
            parts.append(content)
        return "\n".join(parts)
    raise BindingError(
        f"completion {index} is {type(completion).__name__}; expected text or a list of chat messages"
    )


def _same(left: Any, right: Any) -> bool:
    try:
        return strictly_equal(freeze(left), freeze(right))
    except NotJSONError:
        return left == right


def _check_lengths(batch: FlatBatch) -> int:
    count = len(batch.completions)
    for name in ("prompts", "references", "token_counts", "finish_reasons"):
        values = getattr(batch, name)
        if values is not None and len(values) != count:
            raise BindingError(
                f"{name} has {len(values)} entries but there are {count} completions; "
                "a trainer passes one entry per completion"
            )
    return count


def _clean_reference(value: Any) -> Any:
    # pandas/numpy columns turn a missing value into NaN; treat it as missing rather than a number.
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()  # numpy arrays and scalars (verl keeps ground truths in numpy objects)
    return value


def rollout(batch: FlatBatch, index: int, group_id: str, position: int) -> dict[str, Any]:
    """The rollout mapping the worker scores, for sample ``index`` at ``position`` in its group."""
    item: dict[str, Any] = {
        "trajectory_id": f"{group_id}/{position}",
        "group_id": group_id,
        "completion": completion_text(batch.completions[index], index),
    }
    if batch.prompts is not None:
        item["prompt"] = batch.prompts[index]
    if batch.references is not None:
        item["reference"] = _clean_reference(batch.references[index])
    if batch.token_counts is not None:
        item["completion_token_count"] = batch.token_counts[index]
    if batch.finish_reasons is not None:
        item["finish_reason"] = batch.finish_reasons[index]
    return item


def rebuild_groups(batch: FlatBatch, group_size: int, prefix: str) -> list[dict[str, Any]]:
    """Slice a flat batch into ``{"group_id": ..., "rollouts": [...]}`` groups of ``group_size``
    consecutive samples; ``BindingError`` for a partial group, or one split on prompt or reference."""
    if not isinstance(group_size, int) or isinstance(group_size, bool) or group_size < 1:
        raise BindingError(f"group size must be a positive integer, got {group_size!r}")
    count = _check_lengths(batch)
    if count == 0:
        raise BindingError("the trainer passed no completions to score")
    if count % group_size:
        raise BindingError(
            f"{count} completions do not divide into groups of {group_size}; the trainer must pass whole "
            "groups (num_generations consecutive completions per prompt). If groups are split across "
            "processes, score them where they are whole"
        )
    groups = []
    for start in range(0, count, group_size):
        group_id = f"{prefix}-g{start // group_size}"
        rollouts = [rollout(batch, start + offset, group_id, offset) for offset in range(group_size)]
        for field in ("prompt", "reference"):
            first = rollouts[0].get(field)
            for offset, item in enumerate(rollouts[1:], start=1):
                if not _same(item.get(field), first):
                    raise BindingError(
                        f"sample {start + offset} has a different {field} from sample {start}, the first "
                        f"of its group ({group_id!r}, samples {start}..{start + group_size - 1}); "
                        f"completions of one prompt must be consecutive, {group_size} per prompt "
                        "(check num_generations against rl.group_size)"
                    )
        groups.append({"group_id": group_id, "rollouts": rollouts})
    return groups


def singleton_groups(batch: FlatBatch, prefix: str) -> list[dict[str, Any]]:
    """Every sample as a group of one (trainers that score samples one by one: verl, OpenRLHF)."""
    return [
        {"group_id": f"{prefix}-s{index}", "rollouts": [rollout(batch, index, f"{prefix}-s{index}", 0)]}
        for index in range(_check_lengths(batch))
    ]
