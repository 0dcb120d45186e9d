"""Request timeouts and cancellation: the scope itself and in process.

The provider here (``slow_catalog`` below, loaded by dotted path from this module) sleeps per
candidate, standing in for a judge call; it cannot be interrupted, so these tests show what the core
does (queued groups dropped at the timeout, the request scope followed into threads and coroutines).
The same through the real Reward Service (504 at the timeout, capacity given back, no retry) is
``plugins/service/tests/test_service_cancellation.py``; killing running sandboxes is shown against
the real bubblewrap sandbox in ``rl_pack/tests/test_code_cancellation.py``.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import pytest

import rewardkit
from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext
from rewardkit.contracts.errors import ConfigError, RequestCancelled, RequestTimeout
from rewardkit.scoring.cancellation import CancelScope, current, entered, run_bounded, timeout_of
from rewardkit.transport import run_sync


def _slow_exact(
    candidate: RewardCandidate, context: RewardContext, *, delay_s: float
) -> RewardProviderResult:
    time.sleep(delay_s)  # stands in for a judge call: wall-clock work per candidate
    return RewardProviderResult({"match": float(candidate.completion.strip() == str(context.reference))})


def slow_catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec(
            "slow-exact", partial(map_candidates, _slow_exact), ("reference",), "1", ("match",)
        )
    ]


def slow_groups(count: int, size: int = 4) -> list[dict[str, Any]]:
    """Groups whose odd candidates match the reference ``1``."""
    return [
        {
            "group_id": f"s{g}",
            "rollouts": [
                {"trajectory_id": f"s{g}-{i}", "completion": str(i % 2), "reference": "1"}
                for i in range(size)
            ],
        }
        for g in range(count)
    ]


# -- the scope ------------------------------------------------------------------------------------


def test_a_scope_runs_its_callbacks_once_and_late_ones_at_once():
    scope = CancelScope()
    ran: list[str] = []
    scope.add_callback(lambda: ran.append("a"))
    remove = scope.add_callback(lambda: ran.append("removed"))
    remove()
    scope.add_callback(lambda: 1 / 0)  # a failing callback does not stop the others
    scope.add_callback(lambda: ran.append("b"))
    scope.raise_if_cancelled()
    assert scope.cancel("first") and not scope.cancel("second")
    assert ran == ["a", "b"] and scope.cancelled
    with pytest.raises(RequestCancelled, match="first"):
        scope.raise_if_cancelled()
    scope.add_callback(lambda: ran.append("late"))
    assert ran == ["a", "b", "late"]


def test_a_remover_returns_only_when_its_callback_can_no_longer_run():
    scope = CancelScope()
    started, ran = threading.Event(), []

    def slow_kill() -> None:
        started.set()
        time.sleep(0.3)
        ran.append(time.monotonic())

    remove = scope.add_callback(slow_kill)
    removed_early = scope.add_callback(lambda: ran.append("never"))
    removed_early()
    canceller = threading.Thread(target=scope.cancel)
    canceller.start()
    assert started.wait(5)
    remove()  # the callback is running in the other thread: wait for it to end
    returned = time.monotonic()
    canceller.join()
    assert len(ran) == 1 and ran[0] <= returned  # it ended before remove returned; the other never ran


def test_every_raise_is_a_fresh_copy_of_the_cancellation_error():
    scope = CancelScope()
    scope.cancel("client went away")
    raised = []
    for _ in range(3):
        with pytest.raises(RequestCancelled, match="client went away") as info:
            scope.raise_if_cancelled()
        raised.append(info.value)
    assert len({id(error) for error in raised}) == 3
    assert all(len(traceback.extract_tb(error.__traceback__)) <= 2 for error in raised)


def test_current_is_never_cancelled_outside_a_request_and_follows_the_context_into_threads():
    assert not current().cancelled and current().remaining() is None
    current().add_callback(lambda: pytest.fail("the default scope keeps no callbacks"))
    scope = CancelScope(timeout_s=30)
    with entered(scope), ThreadPoolExecutor(1) as pool:
        assert pool.submit(contextvars.copy_context().run, current).result() is scope
        assert pool.submit(current).result() is not scope  # without the copy, a thread has none
    assert current() is not scope and 29 < scope.remaining() <= 30  # type: ignore[operator]


def test_run_bounded_times_out_with_request_timeout_and_follows_an_outer_cancel():
    started = time.monotonic()
    with pytest.raises(RequestTimeout, match=r"0\.2 s"):
        run_bounded(0.2, lambda: current().wait(5) and current().raise_if_cancelled())
    assert time.monotonic() - started < 1.0
    assert run_bounded(5, lambda: 7) == 7 and run_bounded(None, lambda: 8) == 8
    outer = CancelScope()
    threading.Timer(0.1, outer.cancel, ["the client left"]).start()
    with entered(outer), pytest.raises(RequestCancelled, match="client left"):
        run_bounded(5, lambda: current().wait(5) and current().raise_if_cancelled())
    assert timeout_of(None, 3.0, 0.5) == 0.5 and timeout_of(None, None) is None


# -- in process -----------------------------------------------------------------------------------


def _slow_config(**rewards: Any) -> dict[str, Any]:
    return {
        "rl": {
            "reward": {
                "provider": "slow-exact",
                "params": {"delay_s": 0.1},
                "catalog": f"{__name__}:slow_catalog",
            },
            "group_size": 4,
        },
        "rewards": {"concurrency": 2, **rewards},
    }


def test_in_process_timeout_raises_and_drops_the_queued_groups():
    scored: list[int] = []
    with rewardkit.load(_slow_config()) as reward:
        started = time.monotonic()
        with pytest.raises(RequestTimeout, match="request_timeout_s"):
            reward.score(slow_groups(40), timeout_s=0.3, progress=scored.append)
        elapsed = time.monotonic() - started
        # 40 groups of 4 x 0.1 s on 2 threads is 8 s of work; a group running at the timeout ends.
        assert elapsed < 1.5, elapsed
        assert sum(scored) <= 16, scored
        assert reward.score(slow_groups(1)).groups[0].candidates[1].final == 1.0
    with rewardkit.load(_slow_config(request_timeout_s=0.3)) as reward, pytest.raises(RequestTimeout):
        reward.score(slow_groups(40))


def test_request_timeout_is_validated_like_the_deadline():
    with pytest.raises(ConfigError, match=r"rewards\.request_timeout_s"):
        rewardkit.load(_slow_config(request_timeout_s=-1))
    with pytest.raises(ConfigError, match="86400"):
        rewardkit.load(_slow_config(request_timeout_s=86_401))
    with rewardkit.load(_slow_config()) as reward, pytest.raises(ConfigError, match="timeout_s"):
        reward.score(slow_groups(1), timeout_s=0)


def test_run_sync_cancels_its_coroutine_with_the_request():
    scope = CancelScope()
    started = time.monotonic()
    threading.Timer(0.2, scope.cancel, ["the client left"]).start()
    with entered(scope), pytest.raises(RequestCancelled, match="client left"):
        run_sync(lambda: asyncio.sleep(5))
    assert time.monotonic() - started < 1.0

    async def inside_a_loop() -> None:  # run_sync's other path: a thread with its own loop
        run_sync(lambda: asyncio.sleep(5))

    scope = CancelScope()
    started = time.monotonic()
    threading.Timer(0.2, scope.cancel, ["the client left"]).start()
    with entered(scope), pytest.raises(RequestCancelled):
        asyncio.run(inside_a_loop())
    assert time.monotonic() - started < 1.0
    assert run_sync(lambda: asyncio.sleep(0, "done")) == "done"
