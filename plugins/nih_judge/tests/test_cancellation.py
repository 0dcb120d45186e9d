"""A cancelled request cancels its judge calls instead of waiting for the judge to answer."""

from __future__ import annotations

import threading
import time

import pytest
from nih_judge_helpers import bind, close, rollouts

from rewardkit.contracts.errors import ProviderError, RequestCancelled
from rewardkit.scoring.cancellation import CancelScope, entered

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture


def test_cancelling_the_request_cancels_the_judge_calls_at_once(judge):
    judge.latency_s = 5.0  # a judge that would hold the group for 5 s
    bound = bind("nih-rubric", judge)
    scope = CancelScope()
    started = time.monotonic()
    threading.Timer(0.3, scope.cancel, ["the client disconnected"]).start()
    with entered(scope), pytest.raises(ProviderError) as raised:
        bound.score_group("g", rollouts("1", "2"))
    elapsed = time.monotonic() - started
    assert isinstance(raised.value.__cause__, RequestCancelled), raised.value
    assert 0.3 <= elapsed < 2.0, elapsed  # not the judge's 5 s
    judge.latency_s = 0.0
    assert len(bound.score_group("g", rollouts("1", "2")).items) == 2  # the runner still works
    close(bound)
