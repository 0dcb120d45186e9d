"""Which HTTP client for the Reward Service client's hot path: httpx or aiohttp (asyncio), at
concurrency 64 on loopback against a real ``rewardkit serve``, plus the synchronous httpx client.

Each client sends the same small ``/v1/score`` request (one GSM8K group of 4) ``REQUESTS`` times;
the table gives requests/s and the ratio to aiohttp measured in the same run.

    python benchmarks/http_clients.py            # needs httpx too: pip install httpx
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import report

from rewardkit_service.testing import ServerProcess, write_config

REQUESTS = 2000
CONCURRENCY = 64
CONFIG = "rl.reward.provider: gsm8k\nrl.group_size: 4\nrewards.max_inflight: 100000\n"
_ROLLOUTS = [{"trajectory_id": f"t{i}", "completion": f"A: {i}", "reference": "2"} for i in range(4)]
BODY = json.dumps({"groups": [{"group_id": "g", "rollouts": _ROLLOUTS}]}).encode()


async def _run(send, concurrency: int = CONCURRENCY, total: int = REQUESTS) -> float:
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await send()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start


async def with_aiohttp(url: str) -> float:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def send() -> None:
            async with session.post(url, data=BODY, headers={"content-type": "application/json"}) as reply:
                assert reply.status == 200, await reply.text()
                await reply.read()

        return await _run(send)


async def with_httpx(url: str) -> float:
    import httpx

    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def send() -> None:
            reply = await client.post(url, content=BODY, headers={"content-type": "application/json"})
            assert reply.status_code == 200, reply.text

        return await _run(send)


def with_httpx_sync(url: str) -> float:
    import httpx

    with httpx.Client(timeout=60) as client:
        start = time.perf_counter()
        for _ in range(REQUESTS // 4):
            assert (
                client.post(url, content=BODY, headers={"content-type": "application/json"}).status_code
                == 200
            )
        return (time.perf_counter() - start) * 4


def main() -> None:
    with tempfile.TemporaryDirectory() as folder, ServerProcess(write_config(Path(folder), CONFIG)) as server:
        url = server.url + "/v1/score"
        asyncio.run(with_aiohttp(url))  # warm-up: connections, caches
        seconds = {
            "aiohttp (async)": asyncio.run(with_aiohttp(url)),
            "httpx (async)": asyncio.run(with_httpx(url)),
            "httpx (sync, 1 connection)": with_httpx_sync(url),
        }
    base = seconds["aiohttp (async)"]
    rows = [
        {"client": name, "concurrency": 1 if "(sync" in name else CONCURRENCY, "requests": REQUESTS,
         "req_per_s": REQUESTS / value, "vs_aiohttp": base / value}
        for name, value in seconds.items()
    ]  # fmt: skip
    report("http_clients", rows, {"body_bytes": len(BODY)})


if __name__ == "__main__":
    main()
