"""The rows an audit works from: the configuration's rollouts or prompt rows, sampled."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from rewardkit.plugin import (
    AuditRow,
    ConfigError,
    DataError,
    RewardkitConfig,
    load_prompt_rows,
    read_rollouts,
)

# What a row may carry beyond its prompt and reference (a rollout's own fields).
_ROW_FIELDS = ("completion_token_count", "finish_reason")


def audit_rows(config: RewardkitConfig, needs: Sequence[str], count: int, seed: int = 0) -> list[AuditRow]:
    """``count`` rows sampled (seeded, in source order) from ``rl.data.rollouts_path`` (one row per
    group) or, without it, from the prompt rows of ``rl.data.path``.

    A rollout is a policy's sample, not a gold answer, so a row never carries it as the row's own
    completion: the families build the honest right answer from the reference. The group's
    completions travel in ``fields["completions"]``: where a family cannot build honest right (no
    reference solution), the audit scores them and takes the one the reward pays most.
    """
    if count < 1:
        raise ConfigError(f"--rows must be at least 1, got {count}")
    data = config.rl.data
    wanted = [need for need in needs if need in ("prompt", "reference")]
    rows: list[AuditRow]
    if data.rollouts_path is not None:
        groups = read_rollouts(
            data.rollouts_path,
            prompt_column=data.prompt_column,
            response_column=data.response_column,
            needs=wanted,
        )
        rows = [
            AuditRow(
                row_id=group.group_id,
                prompt=group.rollouts[0].get("prompt"),
                reference=group.rollouts[0].get("reference"),
                fields={key: group.rollouts[0][key] for key in _ROW_FIELDS if key in group.rollouts[0]}
                | {
                    "completions": tuple(
                        rollout["completion"]
                        for rollout in group.rollouts
                        if isinstance(rollout.get("completion"), str)
                    )
                },
            )
            for group in groups
        ]
    elif data.path is not None:
        rows = [
            AuditRow(row_id=f"row-{row.index}", prompt=row.prompt, reference=row.reference)
            for row in load_prompt_rows(data, needs=["prompt", *[n for n in wanted if n != "prompt"]])
        ]
    else:
        raise ConfigError(
            "rewardkit audit needs rows: set rl.data.rollouts_path (rollouts JSONL) or rl.data.path "
            "(prompt rows with the reference column)",
            key="rl.data",
        )
    if not rows:
        raise DataError("no rows to audit: the data source is empty")
    if len(rows) <= count:
        return rows
    picked = sorted(random.Random(seed).sample(range(len(rows)), count))
    return [rows[index] for index in picked]


def row_label(row: AuditRow) -> str:
    """A short, printable label for a row in the report."""
    text = row.row_id if isinstance(row.row_id, str) else json.dumps(row.row_id)
    return text if len(text) <= 40 else text[:37] + "..."
