"""Evaluating one checkpoint: serve it, generate, score, and write its results atomically.

Per checkpoint the log directory gets ``<name>.jsonl`` (one line per record: id, cluster, the
record's value, each sample's reward) and ``<name>.summary.json`` (the metric, the served
model's identity, the reward's provider identities and spec, the generation settings), both
written to a temporary file and renamed into place, the summary last: a summary on disk means
the checkpoint is done.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rewardkit.config import CheckpointsConfig
from rewardkit.errors import RewardkitError
from rewardkit.identity import canonical_json
from rewardkit.reward import Reward
from rewardkit.serving import ServedModel
from rewardkit_checkpoints.generation import Generated, Record, generate


def load_records(config: CheckpointsConfig) -> list[Record]:
    prompts = config.prompts
    records = []
    with open(prompts.path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise RewardkitError(f"{prompts.path} line {line_number}: not JSON ({error})") from None
            if not isinstance(row, dict) or prompts.prompt_column not in row:
                raise RewardkitError(
                    f"{prompts.path} line {line_number}: no column {prompts.prompt_column!r}"
                )
            record_id = str(row[prompts.id_column]) if prompts.id_column else str(line_number)
            reference = row.get(prompts.response_column) if prompts.response_column else None
            cluster = str(row[prompts.cluster_column]) if prompts.cluster_column else None
            records.append(Record(record_id, row[prompts.prompt_column], reference, cluster))
    if not records:
        raise RewardkitError(f"{prompts.path} holds no prompts")
    ids = [record.record_id for record in records]
    if len(set(ids)) != len(ids):
        raise RewardkitError(f"{prompts.path}: record ids are not unique")
    return records


def record_value(rewards: Sequence[float | None], config: CheckpointsConfig) -> float:
    """A record's value: the mean reward of its samples, or unbiased pass@k from them."""
    values = [0.0 if reward is None else float(reward) for reward in rewards]
    if config.metric == "mean":
        return float(np.mean(values))
    n, k = len(values), config.k
    correct = sum(value >= config.success_threshold for value in values)
    if n - correct < k:
        return 1.0
    return 1.0 - math.comb(n - correct, k) / math.comb(n, k)


def generation_identity(config: CheckpointsConfig) -> dict[str, Any]:
    return {
        "generation": config.generation.model_dump(),
        "metric": config.metric,
        "k": config.k,
        "success_threshold": config.success_threshold,
        "prompts": config.prompts.model_dump(),
    }


def _write_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def score_generated(reward: Reward, generated: Sequence[Generated]) -> dict[str, list[float | None]]:
    groups = []
    for item in generated:
        record = item.record
        rollouts = [
            {
                "trajectory_id": f"{record.record_id}/{index}",
                "completion": text,
                "prompt": record.prompt if isinstance(record.prompt, str) else json.dumps(record.prompt),
                "reference": record.reference,
                "finish_reason": reason,
            }
            for index, (text, reason) in enumerate(zip(item.texts, item.finish_reasons))
        ]
        groups.append((record.record_id, rollouts))
    batch = reward.score(groups)
    rewards: dict[str, list[float | None]] = {}
    for group_id, candidate in batch.candidates():
        rewards.setdefault(group_id, []).append(candidate.final)
    return rewards


def evaluate(
    name: str,
    served: ServedModel,
    reward: Reward,
    records: Sequence[Record],
    config: CheckpointsConfig,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Generate, score and write ``name``'s results; returns its summary."""
    generated = generate(served, records, config.generation, progress)
    rewards = score_generated(reward, generated)
    log_dir = Path(config.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    values = []
    for item in generated:
        record = item.record
        value = record_value(rewards[record.record_id], config)
        values.append(value)
        row = {
            "record": record.record_id,
            "cluster": record.cluster,
            "value": value,
            "rewards": rewards[record.record_id],
            "completions": list(item.texts),
        }
        lines.append(json.dumps(row))
    summary = {
        "name": name,
        "metric": config.metric,
        "value": float(np.mean(values)),
        "records": len(values),
        "served": served.identity(),
        "served_identity": served.identity_hash(),
        "providers": [record.to_json() for record in reward.providers],
        "spec": json.loads(canonical_json(reward.spec.to_json())),
        "generation": generation_identity(config),
    }
    _write_atomically(log_dir / f"{name}.jsonl", "\n".join(lines) + "\n")
    _write_atomically(log_dir / f"{name}.summary.json", json.dumps(summary, indent=2, default=str))
    return summary


def read_values(log_dir: Path, name: str) -> tuple[list[str], np.ndarray, list[str | None]]:
    """Record ids, values and clusters of a finished checkpoint, in file order."""
    ids, values, clusters = [], [], []
    with open(log_dir / f"{name}.jsonl", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                ids.append(row["record"])
                values.append(row["value"])
                clusters.append(row["cluster"])
    return ids, np.asarray(values, dtype=np.float64), clusters
