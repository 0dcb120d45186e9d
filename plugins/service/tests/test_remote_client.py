"""RemoteReward: metrics equal to in-process ones, one deadline limit, a wrong URL fails at once
and a service that is still starting is waited for."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from remote_fixtures import mixed_groups
from service_fixtures import CORE_TESTS, start_server

import rewardkit
from rewardkit.contracts.errors import ConfigError
from rewardkit.scoring.backpressure import BackpressureTimeout
from rewardkit_service.client import RemoteServiceError

CATALOG = "remote_fixtures:catalog"
SPEC = {
    "components": [{"provider": "mixed"}, {"provider": "constant", "params": {"value": 0.5}, "weight": 0.5}],
    "onError": "zero",
}


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(CORE_TESTS))  # remote_fixtures


def config(url: str | None = None, **rl: Any) -> dict:
    reward: dict[str, Any] = {"spec": SPEC, "catalog": CATALOG}
    if url:
        reward["service"] = url
    return {"rl": {"reward": reward, "group_size": 4, **rl}, "rewards": {"max_inflight": 16}}


@pytest.mark.parametrize("scaling", ["group", "batch"])
def test_split_remote_calls_report_the_in_process_metrics_with_skips_and_errors(tmp_path: Path, scaling: str):
    served = "\n".join(
        [
            f"rl.reward.catalog: {CATALOG}",
            f"rl.reward.spec: {SPEC!r}",
            "rl.group_size: 4",
            "rewards.max_inflight: 16",
        ]
    )
    groups = mixed_groups(12)  # 48 rollouts: three requests of 16, the first mostly skips and errors
    with rewardkit.load(config(advantage_scaling=scaling)) as local:
        want = local.score(groups)
    assert want.metrics["train/reward_component/mixed/skipped_count"] > 0
    assert want.metrics["train/reward_component/mixed/error_count"] > 0
    with (
        start_server(tmp_path, served) as server,
        rewardkit.load(config(server.url, advantage_scaling=scaling)) as remote,
    ):
        got = remote.score(groups)
        single = remote.score(groups[4:8])  # one request
    assert got.groups == want.groups
    assert got.metrics.keys() == want.metrics.keys()
    for name, value in want.metrics.items():
        assert got.metrics[name] == pytest.approx(value, rel=1e-12), name
    with rewardkit.load(config(advantage_scaling=scaling)) as local:
        assert single.metrics == pytest.approx(local.score(groups[4:8]).metrics, rel=1e-12)


# -- one deadline limit --------------------------------------------------------------------------


def test_a_deadline_above_the_limit_is_refused_at_load_and_per_call():
    with pytest.raises(ConfigError, match=r"rewards\.deadline_s.*86400"):
        rewardkit.load({"rl": {"reward": {"provider": "constant"}}, "rewards": {"deadline_s": 86_401}})
    with rewardkit.load(
        {"rl": {"reward": {"provider": "constant"}}, "rewards": {"deadline_s": 86_400}}
    ) as reward:
        group = {"group_id": "g", "rollouts": [{"trajectory_id": "a", "completion": "x"}]}
        assert reward.score([group]).groups[0].candidates[0].final == 1.0
        with pytest.raises(ConfigError, match="86400"):
            reward.score([group], deadline_s=100_000)


def test_the_longest_deadline_load_accepts_is_accepted_by_the_service(tmp_path: Path):
    served = "rl.reward.provider: constant\nrewards.deadline_s: 86400\n"
    with start_server(tmp_path, served) as server:
        remote_config = {
            "rl": {"reward": {"provider": "constant", "service": server.url}},
            "rewards": {"deadline_s": 86_400},
        }
        with rewardkit.load(remote_config) as remote:
            group = {"group_id": "g", "rollouts": [{"trajectory_id": "a", "completion": "x"}]}
            assert remote.score([group]).groups[0].candidates[0].final == 1.0


# -- reaching the service ------------------------------------------------------------------------


def load_in_thread(cfg: dict) -> BaseException | object:
    """``load`` in a thread; a watchdog (not a measurement) keeps a hang from blocking the suite."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(rewardkit.load(cfg))
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(120)
    assert outcome, "load() was still waiting with a day-long deadline: a wrong URL must fail at once"
    return outcome[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    "url,needle",
    [
        (f"http://127.0.0.1:{free_port()}", "the connection was refused"),
        ("http://rewardkit-no-such-host.invalid:8000", "does not resolve"),
    ],
    ids=["refused", "unresolvable"],
)
def test_a_wrong_service_url_fails_at_once_naming_it(url: str, needle: str):
    cfg = {"rl": {"reward": {"provider": "constant", "service": url}}, "rewards": {"deadline_s": 86_400}}
    error = load_in_thread(cfg)
    assert isinstance(error, RemoteServiceError), error
    assert url in str(error) and needle in str(error) and "rl.reward.service" in str(error)


class StartingService:
    """A stub Reward Service on loopback that answers 503 "starting" ``unavailable`` times first."""

    def __init__(self, unavailable: int | None) -> None:
        self.unavailable = unavailable
        self.calls = 0
        with rewardkit.load({"rl": {"reward": {"provider": "constant"}}}) as reward:
            self.resolved = {
                "spec": reward.spec.to_json(),
                "providers": [record.to_json() for record in reward.providers],
                "needs": list(reward.needs),
                "max_rollouts_per_call": 64,
            }
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    async def resolve(self, request: web.Request) -> web.Response:
        self.calls += 1
        if self.unavailable is None or self.calls <= self.unavailable:
            body = {"error": {"code": "starting", "message": "providers are still being preflighted"}}
            return web.json_response(body, status=503)
        return web.json_response(self.resolved)

    def __enter__(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/resolve", self.resolve)
        self.runner = web.AppRunner(app)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.runner.setup(), self.loop).result(10)
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        asyncio.run_coroutine_threadsafe(site.start(), self.loop).result(10)
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def test_a_service_still_starting_is_waited_for_with_a_log_line(caplog: pytest.LogCaptureFixture):
    with (
        StartingService(unavailable=3) as url,
        caplog.at_level(logging.WARNING, logger="rewardkit_service.client"),
    ):
        cfg = {"rl": {"reward": {"provider": "constant", "service": url}}, "rewards": {"deadline_s": 60}}
        remote = load_in_thread(cfg)
        assert not isinstance(remote, BaseException), remote
        remote.close()  # type: ignore[attr-defined]
    assert f"waiting for the Reward Service at {url}" in caplog.text
    assert "503 starting: providers are still being preflighted" in caplog.text


def test_a_service_that_never_becomes_ready_fails_at_the_deadline_saying_what_it_answered():
    with StartingService(unavailable=None) as url:
        cfg = {"rl": {"reward": {"provider": "constant", "service": url}}, "rewards": {"deadline_s": 0.5}}
        error = load_in_thread(cfg)
    assert isinstance(error, BackpressureTimeout), error
    assert url in str(error) and "still answered 503 (starting" in str(error)
