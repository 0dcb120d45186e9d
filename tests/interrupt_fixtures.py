"""A provider that takes its time (``interrupt_fixtures:catalog``), for the Ctrl-C tests.

It sleeps ``REWARDKIT_TEST_SLEEP`` seconds per group (none when unset), so a job over a few hundred
groups is still running when the test interrupts it; the scores are those of ``score_fixtures``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from score_fixtures import Recording

from rewardkit import RewardProviderSpec


class Slow(Recording):
    def evaluate(self, request):
        time.sleep(float(os.environ.get("REWARDKIT_TEST_SLEEP") or 0))
        return super().evaluate(request)


def catalog() -> list[RewardProviderSpec]:
    return [RewardProviderSpec("slow", Slow, (), "1", ("task",))]


def write_job(folder: Path, *, groups: int, group_size: int, spread: int = 1, settings: str = "") -> Path:
    """A job over ``groups`` groups of ``slow`` rollouts (completions of distinct lengths, growing by
    ``spread`` a group) in ``folder``; ``settings`` is appended to its config. Returns the config."""
    rows = [
        {"group_id": f"g{g:03d}", "prompt": f"question {g}", "completion": "x" * (g * spread + k)}
        for g in range(groups)
        for k in range(group_size)
    ]
    (folder / "rollouts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = folder / "config.yaml"
    config.write_text(
        "rl:\n"
        f"  group_size: {group_size}\n"
        "  data: {rollouts_path: rollouts.jsonl}\n"
        "  reward: {provider: slow, catalog: 'interrupt_fixtures:catalog'}\n" + settings
    )
    return config
