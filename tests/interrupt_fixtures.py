"""A provider that takes its time (``interrupt_fixtures:catalog``), for the Ctrl-C tests.

It sleeps ``REWARDKIT_TEST_SLEEP`` seconds per group (none when unset), so a job over a few hundred
groups is still running when the test interrupts it; the scores are those of ``score_fixtures``.
"""

from __future__ import annotations

import os
import time

from score_fixtures import Recording

from rewardkit import RewardProviderSpec


class Slow(Recording):
    def evaluate(self, request):
        time.sleep(float(os.environ.get("REWARDKIT_TEST_SLEEP") or 0))
        return super().evaluate(request)


def catalog() -> list[RewardProviderSpec]:
    return [RewardProviderSpec("slow", Slow, (), "1", ("task",))]
