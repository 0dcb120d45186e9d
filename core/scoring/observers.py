"""What a trainer binding or the Reward Service hands a batch observer after scoring.

An observer (the reward monitor, configured by its section ``rl.monitor``) sees every batch the
bindings score, after the split-batch finisher and on rank 0 only, with the inputs as they were
scored; what it returns is logged beside the batch report. The core only defines the contract: a
distribution's configuration section brings its observer (``ConfigSectionSpec.observer``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardkit.config import RewardkitConfig
from rewardkit.scoring.scored import ScoredBatch
from rewardkit.seam.extras import KNOWN_SECTIONS, import_optional


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

    def close(self) -> None: ...


def observer_for(config: RewardkitConfig) -> BatchObserver | None:
    """The observer the configured sections bring (``rl.monitor``), or None when none is set. A known
    section set without its distribution is the one-line install error: a run asked to be watched
    must not run unwatched."""
    from rewardkit.seam.catalog import config_sections

    observers: list[BatchObserver] = []
    registered: set[str] = set()
    for entry in config_sections():
        spec = entry.value
        registered.add(spec.path)
        if spec.observer is None or _section_value(config, spec.path) is None:
            continue
        build = spec.observer
        if isinstance(build, str):
            module, _, attribute = build.partition(":")
            build = import_optional(module, attribute, f"`{spec.path}`")
        observers.append(build(config))
    for path, known in KNOWN_SECTIONS.items():
        if known.observes and path not in registered and _section_value(config, path) is not None:
            raise known.missing(f"`{path}`")
    if len(observers) > 1:
        return _Observers(observers)
    return observers[0] if observers else None


def _section_value(config: RewardkitConfig, path: str) -> object:
    """The value at ``path`` (``rl.monitor``), or None when unset or no such field exists (a section whose
    distribution is neither installed nor known is no field of the schema)."""
    node: object = config
    for part in path.split("."):
        node = getattr(node, part, None)
    return node


class _Observers:
    """Several sections' observers as one: each sees every batch; their metrics are logged together."""

    def __init__(self, observers: Sequence[BatchObserver]) -> None:
        self.observers = tuple(observers)
        self.needs = frozenset().union(*(observer.needs for observer in observers))

    def observe(self, batch: ObservedBatch) -> dict[str, float]:
        metrics: dict[str, float] = {}
        for observer in self.observers:
            metrics.update(observer.observe(batch))
        return metrics

    def close(self) -> None:
        for observer in self.observers:
            observer.close()
