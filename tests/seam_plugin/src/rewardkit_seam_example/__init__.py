"""A plugin that owns a verb (``rewardkit seam-greet``), sections (``seam``, ``rl.seam_weights``, and
``rl.seam_watch`` whose observer sees each scored batch) and a backend (``rewards.backend: seam-echo``),
through ``register_commands``, ``register_config_sections`` and ``register_reward_backends``; it imports
``rewardkit`` and ``rewardkit.plugin`` only."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from pydantic import Field

from rewardkit import Reward
from rewardkit.plugin import (
    CommandRegistrar,
    ConfigSectionRegistrar,
    ConfigSectionSpec,
    GroupLike,
    ObservedBatch,
    RewardBackendRegistrar,
    RewardBackendSpec,
    RewardkitConfig,
    ScoredBatch,
    Section,
    hookimpl,
    load_config,
)


class SeamConfig(Section):
    """``seam``: what ``rewardkit seam-greet`` says and how often; the backend counts with it too."""

    greeting: str = "hello"
    repeat: int = Field(default=1, ge=1)


class SeamWeights(Section):
    """``rl.seam_weights``: a section inside ``rl``, present with its defaults when not given."""

    scale: float = 1.0


class SeamWatch(Section):
    """``rl.seam_watch``: a section whose observer (``SeamObserver``) sees every batch the bindings score."""

    label: str = "seam"


class SeamObserver:
    """Counts the candidates of each batch it sees, as the metric ``<label>/candidates``; records each
    batch (label, source, candidates) so a test sees that a binding reached it."""

    needs = frozenset({"reference"})
    seen: list[tuple[str, str, int]] = []

    def __init__(self, config: RewardkitConfig) -> None:
        watch = config.section("rl.seam_watch", SeamWatch)
        self.label = watch.label if watch is not None else "seam"
        self.closed = False

    def observe(self, batch: ObservedBatch) -> dict[str, float]:
        count = sum(len(group.candidates) for group in batch.scored.groups)
        SeamObserver.seen.append((self.label, batch.source, count))
        return {f"{self.label}/candidates": float(count)}

    def close(self) -> None:
        self.closed = True


@hookimpl
def register_commands(cli: CommandRegistrar) -> None:
    greet = cli.add("seam-greet", run_greet, about="greet from the seam example plugin")
    greet.add_argument("config", help="a configuration with a seam section")
    greet.add_argument("overrides", nargs="*", metavar="key=value")
    greet.add_argument("--name", default="world")


def run_greet(args: argparse.Namespace) -> int:
    seam = load_config(args.config, args.overrides).section("seam", SeamConfig) or SeamConfig()
    for _ in range(seam.repeat):
        print(f"{seam.greeting}, {args.name}")
    return 0


@hookimpl
def register_config_sections(register: ConfigSectionRegistrar) -> None:
    register(ConfigSectionSpec("seam", SeamConfig, "the seam example's greeting"))
    register(ConfigSectionSpec("rl.seam_weights", SeamWeights, "the seam example's scale", always=True))
    register(
        ConfigSectionSpec("rl.seam_watch", SeamWatch, "the seam example's observer", observer=SeamObserver)
    )


class EchoReward(Reward):
    """In-process scoring under another backend's name: it records each batch it scores, so a test
    sees that ``rewards.backend: seam-echo`` reached it."""

    scored_batches: list[int] = []

    def score(self, groups: Iterable[GroupLike], **options: Any) -> ScoredBatch:
        batch = super().score(groups, **options)
        EchoReward.scored_batches.append(len(batch.groups))
        return batch


@hookimpl
def register_reward_backends(register: RewardBackendRegistrar) -> None:
    register(RewardBackendSpec("seam-echo", EchoReward, "in-process scoring that records each batch"))
