"""Request timeouts and cancellation through the real Reward Service and its client.

The provider here (``service_fixtures:slow_catalog``) sleeps per candidate, standing in for a judge
call; it cannot be interrupted, so these tests show what the service does (504 at the timeout,
queued groups dropped, capacity given back, no retry). The scope itself and the in-process timeouts
are tested in the core's ``tests/test_cancellation.py``; killing running sandboxes is shown against
the real bubblewrap sandbox in ``rl_pack/tests/test_code_cancellation.py``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from service_fixtures import slow_groups, start_server

import rewardkit
from rewardkit.contracts.errors import RequestTimeout
from rewardkit_service.testing import ServerProcess

SLOW = """
rl.reward.provider: slow-exact
rl.reward.params: {delay_s: 0.1}
rl.reward.catalog: service_fixtures:slow_catalog
rl.group_size: 4
rewards.max_inflight: 256
rewards.concurrency: 2
"""


def _slow_config(**rewards: Any) -> dict[str, Any]:
    return {
        "rl": {
            "reward": {
                "provider": "slow-exact",
                "params": {"delay_s": 0.1},
                "catalog": "service_fixtures:slow_catalog",
            },
            "group_size": 4,
        },
        "rewards": {"concurrency": 2, **rewards},
    }


# -- through the service --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_server(tmp_path_factory.mktemp("cancel"), SLOW)
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any, float]:
    async def go() -> tuple[int, Any, float]:
        started = time.monotonic()
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session,
            session.post(url, json=body, headers=headers or {}) as reply,
        ):
            return reply.status, json.loads(await reply.read()), time.monotonic() - started

    return asyncio.run(go())


def _metrics(server: ServerProcess) -> str:
    async def go() -> str:
        async with aiohttp.ClientSession() as session, session.get(server.url + "/metrics") as reply:
            return await reply.text()

    return asyncio.run(go())


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.split(" ")[0] == name:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _drained(server: ServerProcess, within_s: float) -> float:
    """Seconds until no rollout is in flight (fails after ``within_s``)."""
    started = time.monotonic()
    while time.monotonic() - started < within_s:
        if _metric(_metrics(server), "rewardkit_inflight_rollouts") == 0:
            return time.monotonic() - started
        time.sleep(0.02)
    raise AssertionError(f"rollouts still in flight {within_s} s later")


def test_a_request_past_its_timeout_answers_504_and_gives_its_capacity_back(server):
    status, answer, elapsed = _post(
        server.url + "/v1/score", {"groups": slow_groups(40), "request_timeout_s": 0.3}
    )
    assert status == 504 and answer["error"]["code"] == "timeout", answer
    assert 0.3 <= elapsed < 1.0, elapsed
    # The two groups running at the timeout finish their sleep (0.4 s); the 38 queued never start.
    assert _drained(server, 1.5) < 1.0
    status, answer, elapsed = _post(server.url + "/get_reward", {"query": ["1"] * 40, "labels": ["1"] * 40,
                                                                 "request_timeout_s": 0.3})  # fmt: skip
    assert status == 504 and elapsed < 1.0, (status, answer)


@pytest.mark.parametrize(
    ("header", "body", "status"),
    [("300", 30.0, 504), ("30000", 0.3, 504), ("30000", 30.0, 200), (None, None, 200)],
)
def test_the_smaller_of_header_and_body_wins(server, header, body, status):
    groups = slow_groups(40) if status == 504 else slow_groups(1)
    payload: dict[str, Any] = {"groups": groups}
    if body is not None:
        payload["request_timeout_s"] = body
    got, answer, elapsed = _post(
        server.url + "/v1/score", payload, {"Rewardkit-Timeout-Ms": header} if header else None
    )
    assert got == status, answer
    if status == 504:
        assert elapsed < 1.0 and "request_timeout_s" in answer["error"]["message"]
    _drained(server, 2.0)


@pytest.mark.parametrize("header", ["abc", "-5", "0", "12345678901"])
def test_a_bad_timeout_header_is_a_400_naming_it(server, header):
    status, answer, _ = _post(
        server.url + "/v1/score", {"groups": slow_groups(1)}, {"Rewardkit-Timeout-Ms": header}
    )
    assert status == 400 and answer["error"]["details"][0]["path"] == "Rewardkit-Timeout-Ms", answer


def test_the_client_sends_its_timeout_and_does_not_retry_a_504(server):
    before = _metric(_metrics(server), 'rewardkit_requests_total{code="504",endpoint="/v1/score"}')
    config = _slow_config()
    config["rl"]["reward"]["service"] = server.url
    with rewardkit.load(config) as remote:
        started = time.monotonic()
        with pytest.raises(RequestTimeout, match="504"):
            remote.score(slow_groups(40), timeout_s=0.4)
        assert time.monotonic() - started < 1.5
        assert remote.score(slow_groups(1), timeout_s=30).groups[0].candidates[1].final == 1.0
    after = _metric(_metrics(server), 'rewardkit_requests_total{code="504",endpoint="/v1/score"}')
    assert after - before == 1  # one 504, never sent again
    _drained(server, 2.0)


def test_a_client_that_disconnects_has_its_work_cancelled(server):
    before = _metric(_metrics(server), 'rewardkit_failures_total{cause="disconnected"}')
    body = json.dumps({"groups": slow_groups(40)}).encode()
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(
            f"POST /v1/score HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        time.sleep(0.3)
    # 8 s of queued work; what was running at the disconnect ends within its 0.4 s sleep.
    assert _drained(server, 1.5) < 1.0
    assert _metric(_metrics(server), 'rewardkit_failures_total{cause="disconnected"}') == before + 1
