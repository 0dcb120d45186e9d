"""Evaluating one checkpoint: serve it, generate, score, and write its results atomically.

The prompts are read by the core's prompt-row loader (``rewardkit.job.data.load_prompt_rows``) from
``checkpoints.prompts``, a data section of the same shape as ``rl.data``, or from ``rl.data``
itself when that section is not given, so a run spec is a checkpoint suite. Each prompt reaches
the reward as the loader read it: chat messages stay a list of messages, as the TRL binding hands
them over in training.

Per checkpoint the log directory gets ``<name>.jsonl`` (one line per record: id, cluster, the
record's value, each sample's reward) and ``<name>.summary.json`` (the metric, the served
model's identity, the reward's provider records: catalog, provider, revision, identity hash and
code fingerprint, the spec, the generation settings and a hash of the prompts), both written to a
temporary file and renamed into place, the summary last: a summary on disk means the checkpoint
is done. Results are reused or compared only under the same reward (``check_same_reward``).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rewardkit.plugin import (
    DataConfig,
    DataError,
    IdentityMismatchError,
    PreparedRow,
    ProviderRecord,
    RevisionNotBumpedWarning,
    RewardkitError,
    RewardLike,
    ServedModel,
    canonical_json,
    check_resume_all,
    load_prompt_rows,
    sha256_hex,
)
from rewardkit_checkpoints.generation import Generated, Record, generate
from rewardkit_checkpoints.section import CheckpointsConfig, PromptsConfig

_CANONICAL_INPUTS = ("prompt", "reference")


def prompt_source(config: CheckpointsConfig, data: DataConfig | None = None) -> DataConfig:
    """The data section checkpoint evaluation reads: ``checkpoints.prompts``, else ``rl.data`` (``data``)."""
    if config.prompts is not None:
        return config.prompts
    if data is None or data.path is None:
        raise RewardkitError(
            "checkpoint evaluation reads its prompts from checkpoints.prompts, or from rl.data when "
            "checkpoints.prompts is not given; neither names a path: set rl.data.path (or "
            "checkpoints.prompts.path)"
        )
    return data


def _label(row: PreparedRow, column: str | None, source: DataConfig, key: str) -> str | None:
    """A record id or cluster: the row's value in ``column`` (text or an integer), else ``None``."""
    if column is None:
        return None
    value = row.kept[column]
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise DataError(
            f"{source.SECTION}.{key} reads {column!r}, which must hold non-empty text or an integer, "
            f"not {value!r}",
            path=source.path,
            row=row.index + 1,
            column=column,
            row_label="prompt row",
        )
    return str(value)


def load_records(
    config: CheckpointsConfig, needs: Sequence[str] = ("prompt",), data: DataConfig | None = None
) -> list[Record]:
    """The evaluation records, read by ``load_prompt_rows`` from ``prompt_source(config, data)``.

    The prompt is always needed (it is sent to the served model); the reference when the reward
    needs it. A record's id is its ``id_column`` value, else its 1-based position.
    """
    source = prompt_source(config, data)
    id_column = cluster_column = None
    if isinstance(source, PromptsConfig):
        id_column, cluster_column = source.id_column, source.cluster_column
    keep = {
        column: f"{source.SECTION}.{key}"
        for column, key in ((id_column, "id_column"), (cluster_column, "cluster_column"))
        if column is not None
    }
    wanted = ["prompt", *(need for need in needs if need in _CANONICAL_INPUTS and need != "prompt")]
    rows = load_prompt_rows(source, wanted, keep=keep)
    records: list[Record] = []
    seen: dict[str, int] = {}
    for row in rows:
        record_id = _label(row, id_column, source, "id_column") or str(row.index + 1)
        first = seen.setdefault(record_id, row.index + 1)
        if first != row.index + 1:
            raise DataError(
                f"record id {record_id!r} is also the id of prompt row {first}; ids must be unique",
                path=source.path,
                row=row.index + 1,
                column=id_column,
                row_label="prompt row",
            )
        cluster = _label(row, cluster_column, source, "cluster_column")
        records.append(Record(record_id, row.prompt, row.reference, cluster))
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


def generation_identity(
    config: CheckpointsConfig, records: Sequence[Record], data: DataConfig | None = None
) -> dict[str, Any]:
    """What makes two evaluations comparable besides the reward: generation, metric, the prompt
    mapping and a hash of the records read (ids, prompts, references, clusters)."""
    source = prompt_source(config, data)
    rows = [[record.record_id, record.prompt, record.reference, record.cluster] for record in records]
    return {
        "generation": config.generation.model_dump(),
        "metric": config.metric,
        "k": config.k,
        "success_threshold": config.success_threshold,
        # the path is left out: the hash says whether the prompts are the same, wherever they are
        "prompts": {"section": source.SECTION, **source.model_dump(exclude={"path", "rollouts_path"})},
        "prompts_sha256": sha256_hex(canonical_json(rows)),
    }


def differing_keys(recorded: Any, current: Any, prefix: str = "") -> list[str]:
    """Each key whose value differs between two JSON documents, with both values."""
    if isinstance(recorded, Mapping) and isinstance(current, Mapping):
        found = []
        for key in sorted(set(recorded) | set(current), key=str):
            found += differing_keys(recorded.get(key), current.get(key), f"{prefix}{key}.")
        return found
    if canonical_json(recorded) == canonical_json(current):
        return []
    return [f"{prefix.rstrip('.') or 'value'}: recorded {recorded!r}, now {current!r}"]


def check_same_reward(
    where: Path, summary: Mapping[str, Any], providers: Sequence[ProviderRecord], spec: Any
) -> list[str]:
    """Refuse results in ``summary`` (the file ``where``) scored under another reward than
    ``providers`` with ``spec``: another catalog, provider, revision or identity hash (each named
    with both values, by ``rewardkit.job.provenance``), or another composition. Returns the warnings
    about code changed without a revision bump (an error under ``REWARDKIT_STRICT_IDENTITY=1``)."""
    try:
        recorded = [ProviderRecord.from_json(item) for item in summary["providers"]]
    except (KeyError, TypeError, ValueError) as error:
        raise IdentityMismatchError(
            f"{where} holds no readable provider record ({error}); use another log_dir"
        ) from None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RevisionNotBumpedWarning)
        try:
            check_resume_all(recorded, providers)
        except IdentityMismatchError as error:
            raise IdentityMismatchError(
                f"{where} was scored under another reward: {error}. Use another log_dir for this reward"
            ) from None
    changed = differing_keys(summary.get("spec"), spec, "spec.")
    if changed:
        raise IdentityMismatchError(
            f"{where} was scored with another composition of the reward ({'; '.join(changed)}); "
            "use another log_dir for this reward"
        )
    return [
        str(warning.message) for warning in caught if issubclass(warning.category, RevisionNotBumpedWarning)
    ]


def spec_json(reward: RewardLike) -> Any:
    """The reward's spec as the summary records it."""
    return json.loads(canonical_json(reward.spec.to_json()))


def _write_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def score_generated(reward: RewardLike, generated: Sequence[Generated]) -> dict[str, list[float | None]]:
    groups = []
    for item in generated:
        record = item.record
        rollouts = [
            {
                "trajectory_id": f"{record.record_id}/{index}",
                "completion": text,
                "prompt": record.prompt,
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
    reward: RewardLike,
    records: Sequence[Record],
    config: CheckpointsConfig,
    progress: Callable[[int], None] | None = None,
    *,
    data: DataConfig | None = None,
) -> dict[str, Any]:
    """Generate, score and write ``name``'s results; returns its summary.

    ``data`` is ``rl.data``, where the records came from when ``checkpoints.prompts`` is not given.
    """
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
        "spec": spec_json(reward),
        "generation": generation_identity(config, records, data),
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
