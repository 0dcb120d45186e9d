"""What a trainer binding or the Reward Service hands a batch observer after scoring.

An observer (the reward monitor of ``rewardkit-monitor``, configured by ``rl.monitor``) sees every
batch the bindings score, after the split-batch finisher and on rank 0 only, with the inputs as
they were scored; what it returns is logged beside the batch report. The core only defines the
contract and reaches the distribution lazily.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardkit.config import RewardkitConfig
from rewardkit.extras import import_from
from rewardkit.scored import ScoredBatch


@dataclass(frozen=True)
class ObservedBatch:
    """One scored batch: ``inputs`` are the groups as scored (``{"group_id", "rollouts": [...]}``,
    what ``Reward.score`` takes), in the order of ``scored.groups``."""

    inputs: Sequence[Mapping[str, Any]]
    scored: ScoredBatch
    source: str  # "trl", "verl", "openrlhf" or "service"
    step: int | None = None  # the trainer's step when it says; None: each call is a step
    grouped: bool = True  # False: per-sample managers, whose groups are not the trainer's
    scalars: Mapping[str, float] = field(default_factory=dict)  # e.g. TRL's logged kl and entropy


class BatchObserver(Protocol):
    needs: frozenset[str]  # candidate fields its own graders read ("reference", "prompt", ...)

    def observe(self, batch: ObservedBatch) -> dict[str, float]:
        """Metrics to log now (``train/reward_monitor/...``); never raises inside a trainer."""
        ...

    def close(self) -> None: ...


def observer_for(config: RewardkitConfig) -> BatchObserver | None:
    """The observer ``rl.monitor`` configures, or None when it is unset."""
    if config.rl.monitor is None:
        return None
    build = import_from("rewardkit-monitor", "build_monitor", "`rl.monitor`")
    observer: BatchObserver = build(config)
    return observer
