"""The shared collector pause: overlapping holders, the age cap, an application's own choice."""

from __future__ import annotations

import gc
import threading

import pytest

from rewardkit.scoring import collector
from rewardkit.scoring.collector import collector_paused


@pytest.fixture(autouse=True)
def collector_on():
    gc.enable()
    yield
    gc.enable()


def test_overlapping_pauses_end_when_the_last_one_does():
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    assert not gc.isenabled()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second batch still holds it
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_pause_older_than_the_cap_is_not_joined(monkeypatch: pytest.MonkeyPatch):
    now = [1000.0]
    monkeypatch.setattr(collector.time, "monotonic", lambda: now[0])
    with collector_paused():
        now[0] += collector.MAX_PAUSE_S + 0.1
        late = collector_paused()
        late.__enter__()  # does not extend the old pause
    assert gc.isenabled()  # the first holder's end resumed the collector under the late batch
    late.__exit__(None, None, None)
    assert gc.isenabled()


def test_an_application_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_pauses_from_many_threads_leave_the_collector_on():
    barrier = threading.Barrier(8)

    def batch() -> None:
        barrier.wait()
        for _ in range(200):
            with collector_paused():
                pass

    threads = [threading.Thread(target=batch) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gc.isenabled() and collector._holders == 0
