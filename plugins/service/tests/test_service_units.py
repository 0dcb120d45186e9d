"""Unit tests of the service's parts that need no server: the asyncio limiter, tokens, settings."""

from __future__ import annotations

import asyncio

import pytest

from rewardkit.contracts.errors import ConfigError
from rewardkit_service.app import ServiceSettings
from rewardkit_service.auth import TokenChecker, load_tokens, read_tokens_file
from rewardkit_service.limiter import AsyncInflightLimiter, BackpressureTimeout, RequestTooLarge
from rewardkit_service.models import openapi_document


def test_waiters_are_admitted_in_arrival_order_and_a_big_head_is_not_overtaken():
    async def scenario() -> list[str]:
        limiter = AsyncInflightLimiter(4)
        loop = asyncio.get_running_loop()
        order: list[str] = []
        await limiter.acquire(3, None)

        async def waiter(name: str, weight: int) -> None:
            await limiter.acquire(weight, loop.time() + 10)
            order.append(name)

        big = asyncio.ensure_future(waiter("big", 4))
        await asyncio.sleep(0)
        smalls = [asyncio.ensure_future(waiter(f"small{i}", 1)) for i in range(3)]
        await asyncio.sleep(0.01)
        assert order == []  # one unit is free, but the head needs four: nobody overtakes it
        limiter.release(3)
        await asyncio.sleep(0.01)
        assert order == ["big"]
        limiter.release(4)
        await asyncio.gather(big, *smalls)
        assert limiter.in_flight == 3
        return order

    assert asyncio.run(scenario()) == ["big", "small0", "small1", "small2"]


def test_a_deadline_passing_while_waiting_leaves_the_queue_and_lets_the_next_in():
    async def scenario() -> None:
        limiter = AsyncInflightLimiter(2)
        loop = asyncio.get_running_loop()
        await limiter.acquire(1, None)
        with pytest.raises(BackpressureTimeout, match="deadline passed") as caught:
            await limiter.acquire(2, loop.time() + 0.05)
        assert caught.value.waited_s >= 0.04
        assert limiter.waiting == 0 and limiter.in_flight == 1
        assert await limiter.acquire(1, loop.time() + 0.05) == 0.0  # fits at once

    asyncio.run(scenario())


def test_a_timed_out_head_wakes_the_waiter_behind_it():
    async def scenario() -> None:
        limiter = AsyncInflightLimiter(2)
        loop = asyncio.get_running_loop()
        await limiter.acquire(1, None)
        head = asyncio.ensure_future(limiter.acquire(2, loop.time() + 0.05))
        await asyncio.sleep(0)
        behind = asyncio.ensure_future(limiter.acquire(1, loop.time() + 5))
        with pytest.raises(BackpressureTimeout):
            await head
        assert await asyncio.wait_for(behind, 1) >= 0.04
        assert limiter.in_flight == 2

    asyncio.run(scenario())


def test_cancelled_waiters_give_their_place_back():
    async def scenario() -> None:
        limiter = AsyncInflightLimiter(1)
        await limiter.acquire(1, None)
        waiting = asyncio.ensure_future(limiter.acquire(1, None))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        limiter.release(1)
        assert limiter.in_flight == 0 and limiter.waiting == 0
        async with limiter.admit(1, None) as waited:
            assert waited == 0.0 and limiter.in_flight == 1
        assert limiter.in_flight == 0

    asyncio.run(scenario())


def test_a_request_over_the_capacity_is_refused_at_once():
    with pytest.raises(RequestTooLarge, match=r"5 rollouts exceeds rewards\.max_inflight=4"):
        asyncio.run(AsyncInflightLimiter(4).acquire(5, None))
    with pytest.raises(ValueError, match="at least 1"):
        AsyncInflightLimiter(0)


def test_token_checker_accepts_only_configured_bearer_tokens():
    checker = TokenChecker(["t0ken-a", "t0ken-b"])
    assert checker.enabled
    assert checker.allows(b"Bearer t0ken-a") and checker.allows(b"bearer t0ken-b")
    for header in (None, b"", b"Bearer", b"Bearer t0ken-", b"Bearer t0ken-ab", b"Basic t0ken-a", b"t0ken-a"):
        assert not checker.allows(header), header
    assert "t0ken" not in repr(checker)
    assert TokenChecker([]).allows(None)  # no tokens configured: open


def test_tokens_come_from_the_environment_and_files(tmp_path, monkeypatch):
    path = tmp_path / "tokens"
    path.write_text("# comment\n\nfile-token\nenv-token\n")
    monkeypatch.setenv("REWARDKIT_TOKENS", "env-token, other ,")
    assert load_tokens(path) == ("env-token", "other", "file-token")
    bad = tmp_path / "bad"
    bad.write_text("two words\n")
    with pytest.raises(ConfigError, match="line 1: a token must not contain whitespace"):
        read_tokens_file(bad)
    with pytest.raises(ConfigError, match="cannot read the tokens file"):
        read_tokens_file(tmp_path / "absent")
    assert "file-token" not in repr(ServiceSettings(tokens=("file-token",)))


def test_openapi_document_references_resolve():
    document = openapi_document("1.0")
    schemas = document["components"]["schemas"]
    text = repr(document)
    import re

    for name in set(re.findall(r"#/components/schemas/([A-Za-z0-9_]+)", text)):
        assert name in schemas, name
    assert document["paths"]["/healthz"]["get"].get("security") is None
    assert document["paths"]["/v1/score"]["post"]["security"] == [{"bearer": []}]
