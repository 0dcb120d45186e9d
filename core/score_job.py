"""The main job, ``rewardkit score CONFIG [key=value ...] --out results.jsonl``.

Reads rollouts (``rl.data.rollouts_path``), scores them with the selected provider or spec, shows
progress on a terminal, prints a summary table and writes one JSON line per candidate. The output
and its run manifest (``<out>.run.json``: catalog reference, providers, revisions, identities) are
written atomically: a failed batch writes no results. A run that failed stays ``pending`` in its
manifest, and ``--resume`` re-scores it only under the identities it recorded.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from rewardkit.advantages import mean_std
from rewardkit.config import RewardkitConfig, load_config
from rewardkit.data import check_group_sizes, read_rollouts
from rewardkit.errors import ConfigError, IdentityMismatchError, PreflightError, RewardkitError
from rewardkit.identity import canonical_json, sha256_hex
from rewardkit.provenance import ProviderRecord, check_resume_all
from rewardkit.reward import load
from rewardkit.tables import format_table
from rewardkit.worker import ScoredBatch


def write_atomically(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` to ``path`` via a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            for line in lines:
                stream.write(line)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def manifest_path(out: Path) -> Path:
    return out.with_name(out.name + ".run.json")


def _write_manifest(out: Path, config: RewardkitConfig, reward: Any, status: str, **extra: Any) -> None:
    document = {
        "status": status,
        "config": str(config.source_path) if config.source_path else None,
        "rollouts": config.rl.data.rollouts_path,
        "catalog": reward.selection.catalog,
        "service": config.rl.reward.service,
        "backend": config.rewards.backend,
        "spec": reward.spec.to_json(),
        "providers": [record.to_json() for record in reward.providers],
        **extra,
    }
    write_atomically(manifest_path(out), [json.dumps(document, indent=2) + "\n"])


def _check_previous_run(out: Path, reward: Any, resume: bool) -> None:
    path = manifest_path(out)
    if not path.exists():
        if resume:
            raise PreflightError(f"--resume: no run manifest at {path}")
        return
    try:
        previous = json.loads(path.read_text())
        records = [ProviderRecord.from_json(row) for row in previous["providers"]]
    except (ValueError, KeyError, TypeError) as error:
        raise PreflightError(f"cannot read the run manifest {path}: {error}") from None
    if previous.get("status") != "pending":
        return
    if not resume:
        raise PreflightError(
            f"{path} records a pending run that did not finish; pass --resume to finish it under the "
            "same provider identities, or delete the manifest to start over"
        )
    check_resume_all(records, reward.providers)
    recorded_spec, current_spec = previous.get("spec"), reward.spec.to_json()
    if canonical_json(recorded_spec) != canonical_json(current_spec):
        raise IdentityMismatchError(
            f"the pending run in {path} composed its reward with spec "
            f"{sha256_hex(canonical_json(recorded_spec))[:16]} but this configuration gives "
            f"{sha256_hex(canonical_json(current_spec))[:16]} (weights, gates, floor, onError or clip "
            "changed); finish it with the recorded spec or start a new run"
        )


class ProgressBar:
    """A one-line progress bar on a terminal's stderr; silent otherwise."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.start = time.monotonic()
        self._last = 0.0

    def update(self, amount: int) -> None:
        self.done += amount
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            filled = int(30 * self.done / self.total)
            rate = self.done / max(now - self.start, 1e-9)
            self.stream.write(
                f"\rscoring [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {rate:,.0f}/s"
            )
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _mean_or_nan(values: Sequence[float]) -> tuple[float, float]:
    return mean_std(values) if values else (math.nan, math.nan)


def summary_rows(reward: Any, batch: ScoredBatch) -> list[tuple[Any, ...]]:
    """Per component (with its provider and term) and for the final total: mean, std and counts."""
    candidates = [candidate for _, candidate in batch.candidates()]
    rows: list[tuple[Any, ...]] = []
    for component in reward.spec.components:
        entries = [candidate.breakdown[component.name] for candidate in candidates]
        values = [entry["value"] for entry in entries if entry["status"] == "scored"]
        mean, std = _mean_or_nan(values)
        counts = {
            status: sum(1 for entry in entries if entry["status"] == status)
            for status in ("scored", "skipped", "error")
        }
        gated = sum(1 for entry in entries if entry["gate"] and not entry.get("passed", True))
        rows.append(
            (
                component.name,
                f"{component.provider}:{component.term}",
                f"{mean:.4f}",
                f"{std:.4f}",
                counts["scored"],
                counts["skipped"],
                counts["error"],
                gated,
            )
        )
    finals = [candidate.final for candidate in candidates if candidate.final is not None]
    mean, std = _mean_or_nan(finals)
    nulls = len(candidates) - len(finals)
    gated = sum(1 for candidate in candidates if candidate.gated)
    rows.append(("final", "-", f"{mean:.4f}", f"{std:.4f}", len(finals), 0, nulls, gated))
    return rows


def run_score(
    config_source: str,
    overrides: Sequence[str],
    out: str,
    *,
    resume: bool = False,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run the main job; returns the process exit code (0 ok, 1 the batch failed)."""
    stdout = stdout or sys.stdout
    config = load_config(config_source, overrides)
    rollouts_path = config.rl.data.rollouts_path
    if rollouts_path is None:
        raise ConfigError(
            "rl.data.rollouts_path is not set: `rewardkit score` needs a JSONL file of rollouts "
            "(group_id, completion, and the prompt/reference columns)",
            key="rl.data.rollouts_path",
        )
    out_path = Path(out)
    with load(config) as reward:
        _check_previous_run(out_path, reward, resume)
        groups = read_rollouts(
            rollouts_path,
            prompt_column=config.rl.data.prompt_column,
            response_column=config.rl.data.response_column,
            needs=reward.needs,
        )
        check_group_sizes(groups, config.rl.group_size, path=rollouts_path)
        total = sum(len(group.rollouts) for group in groups)
        _write_manifest(out_path, config, reward, "pending")
        bar = ProgressBar(total, stderr)
        start = time.perf_counter()
        try:
            batch = reward.score(groups, progress=bar.update)
        except RewardkitError as error:
            bar.close()
            print(
                f"rewardkit: the batch failed, nothing was written to {out_path}: {error}",
                file=stderr or sys.stderr,
            )
            return 1
        elapsed = time.perf_counter() - start
        bar.close()
        write_atomically(
            out_path, (json.dumps(row, separators=(",", ":")) + "\n" for row in batch.to_jsonl_rows())
        )
        _write_manifest(
            out_path,
            config,
            reward,
            "complete",
            rollouts_scored=total,
            groups=len(groups),
            seconds=elapsed,
            metrics=batch.metrics,
        )
        headers = ("component", "provider:term", "mean", "std", "scored", "skipped", "errors", "gated")
        print(format_table(summary_rows(reward, batch), headers), file=stdout)
        print(
            f"\n{total} rollouts in {len(groups)} groups scored in {elapsed:.3f}s "
            f"({total / max(elapsed, 1e-9):,.0f} rollouts/s); wrote {out_path}",
            file=stdout,
        )
    return 0


ScoreRunner = Callable[..., int]
