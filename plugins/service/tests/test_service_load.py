"""Back-pressure, overload, restart, graceful shutdown and a cheap batch that must not hold the event
loop, against the real server on 127.0.0.1.

The provider here (``service_fixtures:slow_catalog``) sleeps per candidate, like a sandbox or a
judge would, so requests really wait for in-flight capacity. Every loop is bounded in count and
every request has a deadline; server processes are always stopped by their context managers.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
from service_fixtures import gsm8k_groups, slow_groups, start_server

import rewardkit
from rewardkit_service.client import RemoteReward

LIMIT = 16
SLOW = f"""
rl.reward.provider: slow-exact
rl.reward.params: {{delay_s: 0.02}}
rl.reward.catalog: service_fixtures:slow_catalog
rl.group_size: 4
rewards.max_inflight: {LIMIT}
"""


async def _post_all(url: str, bodies: list[dict[str, Any]]) -> list[tuple[int, dict[str, str], Any]]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:

        async def one(body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
            async with session.post(url, json=body) as reply:
                return reply.status, dict(reply.headers), json.loads(await reply.read())

        return await asyncio.gather(*(one(body) for body in bodies))


def _local_slow() -> rewardkit.Reward:
    return rewardkit.load(
        {
            "rl": {
                "reward": {
                    "provider": "slow-exact",
                    "params": {"delay_s": 0.0},
                    "catalog": "service_fixtures:slow_catalog",
                },
                "group_size": 4,
            }
        }
    )


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or (line.startswith(name + "{") and line.split(" ")[0] == name):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in metrics")


def test_overload_with_long_deadlines_drains_with_every_result_right(tmp_path):
    # 4x the limit offered at once: 16 requests x 4 rollouts against 16 in flight.
    requests = [{"groups": slow_groups(1, prefix=f"r{i}-"), "deadline_s": 60} for i in range(4 * LIMIT // 4)]
    with start_server(tmp_path, SLOW) as server:
        answers = asyncio.run(_post_all(server.url + "/v1/score", requests))
        metrics = asyncio.run(_get(server.url + "/metrics"))
    assert [status for status, _, _ in answers] == [200] * len(requests)
    local = _local_slow()
    for body, (_, _, answer) in zip(requests, answers):
        expected = local.score(body["groups"])
        got = [(c["trajectory_id"], c["final"], c["advantage"]) for c in answer["groups"][0]["candidates"]]
        assert got == [(c.trajectory_id, c.final, c.advantage) for _, c in expected.candidates()]
    waited = [answer["waited_s"] for _, _, answer in answers]
    assert max(waited) > 0  # some really waited for capacity
    assert _metric(metrics, "rewardkit_wait_seconds_count") == len(requests)
    assert _metric(metrics, "rewardkit_inflight_rollouts") == 0


def test_overload_with_short_deadlines_gives_only_503_with_retry_after(tmp_path):
    requests = [
        {"groups": slow_groups(1, prefix=f"r{i}-"), "deadline_s": 0.05} for i in range(4 * LIMIT // 4)
    ]
    with start_server(tmp_path, SLOW.replace("0.02", "0.1")) as server:
        answers = asyncio.run(_post_all(server.url + "/v1/score", requests))
        statuses = [status for status, _, _ in answers]
        assert set(statuses) <= {200, 503} and statuses.count(503) >= len(requests) // 2, statuses
        for status, headers, answer in answers:
            if status == 503:
                assert int(headers["Retry-After"]) >= 1
                assert answer["error"]["code"] == "deadline_exceeded"
                assert "deadline passed" in answer["error"]["message"]
        # Healthy afterwards: answers health checks and scores a normal request.
        assert asyncio.run(_get(server.url + "/healthz")) == '{"status":"ok"}'
        after = asyncio.run(
            _post_all(server.url + "/v1/score", [{"groups": slow_groups(2), "deadline_s": 30}])
        )
        assert after[0][0] == 200
        metrics = asyncio.run(_get(server.url + "/metrics"))
    assert _metric(metrics, 'rewardkit_failures_total{cause="deadline"}') == statuses.count(503)
    assert 'rewardkit_requests_total{code="500"' not in metrics


def test_a_request_over_the_limit_is_refused_at_once(tmp_path):
    with start_server(tmp_path, SLOW) as server:
        start = time.monotonic()
        [(status, _, answer)] = asyncio.run(_post_all(server.url + "/v1/score", [{"groups": slow_groups(5)}]))
    assert status == 413 and answer["error"]["limit"] == LIMIT and time.monotonic() - start < 10


def test_restart_mid_load_loses_and_duplicates_nothing(tmp_path):
    calls = [gsm8k_groups(4, offset=4 * index) for index in range(40)]
    expected = [
        rewardkit.load({"rl": {"reward": {"provider": "gsm8k"}, "group_size": 4}}).score(c) for c in calls
    ]
    first = start_server(tmp_path, "rl.reward.provider: gsm8k\nrl.group_size: 4\n")
    port = first.port
    results: list[Any] = []
    errors: list[BaseException] = []
    halfway = threading.Event()
    config = {
        "rl": {"reward": {"provider": "gsm8k", "service": first.url}, "group_size": 4},
        "rewards": {"deadline_s": 60},
    }

    def trainer() -> None:
        try:
            with rewardkit.load(config) as remote:
                for index, groups in enumerate(calls):
                    if index == len(calls) // 3:
                        halfway.set()
                    results.append(remote.score(groups))
                    time.sleep(0.02)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            halfway.set()

    thread = threading.Thread(target=trainer)
    second = None
    second_metrics = ""
    try:
        thread.start()
        assert halfway.wait(60)
        assert first.stop() == 0, first.output  # graceful: in-flight calls are answered
        second = start_server(tmp_path, "rl.reward.provider: gsm8k\nrl.group_size: 4\n", port=port)
        thread.join(90)
        second_metrics = asyncio.run(_get(second.url + "/metrics"))
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert not thread.is_alive() and not errors, errors
    assert len(results) == len(calls)
    for got, want in zip(results, expected):
        assert got == want  # same groups, same order, same values: nothing lost or duplicated
    served_by_second = _metric(second_metrics, 'rewardkit_requests_total{code="200",endpoint="/v1/score"}')
    assert 0 < served_by_second < len(calls)  # the load really spanned the restart


def test_sigterm_drains_in_flight_requests_then_exits_zero(tmp_path):
    with start_server(tmp_path, SLOW.replace("0.02", "0.25")) as server:
        # 4 requests of 4 rollouts x 0.25 s: in flight (and waiting) when SIGTERM arrives.
        bodies = [{"groups": slow_groups(1, prefix=f"d{i}-"), "deadline_s": 60} for i in range(6)]

        async def scenario() -> tuple[list[Any], int]:
            task = asyncio.ensure_future(_post_all(server.url + "/v1/score", bodies))
            await asyncio.sleep(0.4)
            server.terminate()
            await asyncio.sleep(0.2)
            try:
                await _post_all(server.url + "/v1/score", bodies[:1])
                refused = 0
            except aiohttp.ClientConnectorError:
                refused = 1
            return await task, refused

        answers, refused = asyncio.run(scenario())
        code = server.wait(60)
    assert [status for status, _, _ in answers] == [200] * len(bodies)
    assert refused == 1  # no new connections while draining
    assert code == 0 and "drained and stopped" in server.output


def test_remote_reward_waits_through_back_pressure(tmp_path):
    with start_server(tmp_path, SLOW) as server:
        config = {
            "rl": {
                "reward": {
                    "provider": "slow-exact",
                    "params": {"delay_s": 0.02},
                    "service": server.url,
                    "catalog": "service_fixtures:slow_catalog",
                },
                "group_size": 4,
            }
        }
        groups = slow_groups(12)  # 48 rollouts, three requests of 16, sent at once
        with RemoteReward(rewardkit.config.load_config(config)) as remote:
            got = remote.score(groups, deadline_s=60)
    assert got.groups == _local_slow().score(groups).groups


async def _get(url: str) -> str:
    async with aiohttp.ClientSession() as session, session.get(url) as reply:
        return await reply.text()


def test_a_cheap_batch_in_the_service_never_holds_the_event_loop(tmp_path: Path):
    config = (
        "rl.reward.provider: busy-exact\nrl.reward.catalog: service_fixtures:slow_catalog\n"
        "rewards.max_inflight: 8192\n"
    )
    server = start_server(tmp_path, config)
    try:
        body = json.dumps({"groups": slow_groups(600, size=4)}).encode()  # 2,400 x 0.5 ms of CPU
        answer: list[int] = []

        def score() -> None:
            request = urllib.request.Request(
                server.url + "/v1/score", body, {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=60) as reply:
                answer.append(reply.status)

        scoring = threading.Thread(target=score)
        scoring.start()
        time.sleep(0.3)  # the batch is being scored now
        slowest = 0.0
        while scoring.is_alive():
            started = time.monotonic()
            with urllib.request.urlopen(server.url + "/healthz", timeout=10) as reply:
                assert reply.status == 200
            slowest = max(slowest, time.monotonic() - started)
            time.sleep(0.05)
        scoring.join()
        assert answer == [200]
        assert slowest < 0.25, f"/healthz took {slowest:.3f} s while a cheap batch was scored"
    finally:
        server.stop()
