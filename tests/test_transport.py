"""The core HTTP transport against a real aiohttp server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web

from rewardkit.contracts.errors import RewardkitError
from rewardkit.transport import HttpClient, HttpError, HttpTimeout, RetryPolicy, run_sync

FAST = RetryPolicy(attempts=4, backoff_s=0.01, max_backoff_s=0.05, jitter=0.0)


class Script:
    """Answers each request to /x with the next (status, headers) and records what came in."""

    def __init__(self, answers: list[tuple[int, dict[str, str]]], delay_s: float = 0.0) -> None:
        self.answers = answers
        self.delay_s = delay_s
        self.seen: list[dict[str, str]] = []
        self.times: list[float] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(dict(request.headers))
        self.times.append(time.monotonic())
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        status, headers = self.answers[min(len(self.seen) - 1, len(self.answers) - 1)]
        return web.json_response({"n": len(self.seen)}, status=status, headers=headers)


async def _serve(script: Script) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_route("*", "/x", script.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


def _run(script: Script, call):
    async def main():
        runner, url = await _serve(script)
        try:
            async with HttpClient(url, retry=FAST, timeout_s=2.0) as client:
                return await call(client)
        finally:
            await runner.cleanup()

    return asyncio.run(main())


def test_retries_5xx_and_429_then_succeeds():
    script = Script([(503, {}), (429, {}), (200, {})])
    answer = _run(script, lambda client: client.get_json("/x"))
    assert answer == {"n": 3} and len(script.seen) == 3


def test_retry_after_is_honoured():
    script = Script([(503, {"Retry-After": "1"}), (200, {})])
    answer = _run(script, lambda client: client.get_json("/x", deadline=time.monotonic() + 5))
    assert answer == {"n": 2}
    assert script.times[1] - script.times[0] >= 0.95


def test_no_retry_that_cannot_finish_before_the_deadline():
    script = Script([(503, {"Retry-After": "30"}), (200, {})])
    started = time.monotonic()
    with pytest.raises(HttpTimeout, match="no retry can finish before the deadline"):
        _run(script, lambda client: client.get_json("/x", deadline=time.monotonic() + 2))
    assert len(script.seen) == 1 and time.monotonic() - started < 1.5


def test_client_errors_are_not_retried_and_name_the_status():
    script = Script([(404, {}), (200, {})])
    with pytest.raises(HttpError) as caught:
        _run(script, lambda client: client.get_json("/x"))
    assert caught.value.status == 404 and "404" in str(caught.value) and len(script.seen) == 1


def test_retry_false_sends_once():
    script = Script([(503, {}), (200, {})])
    with pytest.raises(HttpError):
        _run(script, lambda client: client.request("POST", "/x", retry=False))
    assert len(script.seen) == 1


def test_per_call_timeout_then_deadline():
    script = Script([(200, {})], delay_s=1.0)

    async def call(client):
        return await client.get_json("/x", timeout_s=0.2, deadline=time.monotonic() + 0.7)

    with pytest.raises(HttpTimeout):
        _run(script, call)
    assert 1 <= len(script.seen) <= 4


def test_connection_refused_is_retried_until_attempts_run_out():
    async def call():
        async with HttpClient("http://127.0.0.1:9", retry=FAST, timeout_s=0.5) as client:
            await client.get_json("/x")

    with pytest.raises(HttpError, match=r"127\.0\.0\.1:9"):
        asyncio.run(call())


def test_bearer_token_by_reference(monkeypatch):
    monkeypatch.setenv("RK_TEST_TOKEN", "s3cret-value")
    script = Script([(200, {})])

    async def main():
        runner, url = await _serve(script)
        try:
            async with HttpClient(url, token_env="RK_TEST_TOKEN") as client:
                assert "s3cret" not in repr(client)
                return await client.get_json("/x")
        finally:
            await runner.cleanup()

    asyncio.run(main())
    assert script.seen[0]["Authorization"] == "Bearer s3cret-value"
    monkeypatch.delenv("RK_TEST_TOKEN")
    with pytest.raises(RewardkitError, match="RK_TEST_TOKEN is not set"):
        HttpClient("http://127.0.0.1:1", token_env="RK_TEST_TOKEN")


def test_run_sync_works_inside_a_running_loop():
    async def inner():
        await asyncio.sleep(0)
        return 7

    async def outer():
        return run_sync(inner)

    assert run_sync(inner) == 7
    assert asyncio.run(outer()) == 7
