"""Finding checkpoints in a training output folder and telling when one is complete.

Recognised step folders: ``checkpoint-N`` (Hugging Face Trainer, TRL), ``global_step_N``
(verl), ``step-N`` / ``step_N``. What can be served is Hugging Face format only: the folder
itself (``config.json`` and weights), a LoRA adapter (``adapter_config.json``), or for verl the
``huggingface`` folder it writes beside its shards (``actor/huggingface`` too) or a merged
model. A step with only sharded weights is reported, not served.

Complete means: a marker that the writer puts last (``trainer_state.json`` for Trainer,
``.rewardkit-ready`` from rewardkit's trainer callback, ``latest_checkpointed_iteration.txt``
beside verl's step folders naming this step or a later one), then ``settle_s`` seconds with no
file size or count change (a copy that is still running changes sizes).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

_STEP = re.compile(r"^(?:checkpoint-|global_step_|step-|step_)(\d+)$")
READY_MARKER = ".rewardkit-ready"
_WEIGHTS = ("*.safetensors", "*.bin")

Kind = Literal["full", "lora", "sharded", "unknown"]


@dataclass
class Found:
    step: int
    folder: Path
    serve_path: Path | None
    kind: Kind
    why: str = ""


def _has_weights(folder: Path) -> bool:
    return any(folder.glob(pattern) for pattern in _WEIGHTS)


def classify(folder: Path) -> tuple[Kind, Path | None, str]:
    """What a step folder holds and which folder to serve."""
    if (folder / "adapter_config.json").is_file():
        return "lora", folder, ""
    for candidate in (folder, folder / "huggingface", folder / "actor" / "huggingface"):
        if (candidate / "config.json").is_file() and _has_weights(candidate):
            return "full", candidate, ""
    shards = list(folder.glob("**/*world_size*")) + list(folder.glob("**/*.distcp"))
    if shards:
        return (
            "sharded",
            None,
            (
                "sharded weights without Hugging Face weights: merge them (verl's model merger) or save the "
                "huggingface folder; not served"
            ),
        )
    return "unknown", None, "no Hugging Face weights (config.json + weights) or LoRA adapter yet"


def discover(root: str | Path) -> list[Found]:
    """Every step folder under ``root``, by step number."""
    found = []
    base = Path(root)
    if not base.is_dir():
        return []
    for entry in base.iterdir():
        match = _STEP.match(entry.name)
        if match and entry.is_dir():
            kind, serve_path, why = classify(entry)
            found.append(Found(int(match.group(1)), entry, serve_path, kind, why))
    return sorted(found, key=lambda item: item.step)


def _marker_present(found: Found) -> bool:
    folder = found.folder
    if (folder / READY_MARKER).exists() or (folder / "trainer_state.json").is_file():
        return True
    latest = folder.parent / "latest_checkpointed_iteration.txt"
    if latest.is_file():
        try:
            return int(latest.read_text().strip()) >= found.step
        except ValueError:
            return False
    return False


def _signature(folder: Path) -> tuple[int, int]:
    files = [path for path in folder.rglob("*") if path.is_file()]
    return len(files), sum(path.stat().st_size for path in files)


@dataclass
class Settling:
    """Remembers each folder's last size signature and since when it has not changed."""

    settle_s: float
    seen: dict[Path, tuple[tuple[int, int], float]] = field(default_factory=dict)

    def complete(self, found: Found, now: float | None = None) -> bool:
        if not _marker_present(found):
            return False
        now = time.monotonic() if now is None else now
        signature = _signature(found.folder)
        previous = self.seen.get(found.folder)
        if previous is None or previous[0] != signature:
            self.seen[found.folder] = (signature, now)
            return self.settle_s == 0
        return now - previous[1] >= self.settle_s
