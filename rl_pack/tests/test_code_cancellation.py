"""Cancelled requests stop their sandboxes: busy-looping candidates against the real bubblewrap
sandbox, through the real Reward Service on loopback and in process.

What is measured is the host's view: every process descended from the server (bwrap, the runner,
the candidate's program) read from /proc, with its CPU time. The operator's ``timeout_s`` is 10 s,
so a candidate that is not killed keeps burning a CPU for 10 s. Needs root and a writable pids
cgroup (``cgroup: required``), as the other sandbox tests.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

import rewardkit
from rewardkit.contracts.errors import RequestTimeout
from rewardkit_service.testing import ServerProcess, write_config

TICK_S = 1 / os.sysconf("SC_CLK_TCK")
CANDIDATE_UID_BASE = 1_000_000  # the sandbox's candidate and test uids start here (sandbox._UID_BASE)
SERVER = """
rl.reward.provider: code-tests
rl.reward.params: {timeout_s: 10, cgroup: required, concurrency: 2, memory_mb: 512}
rl.group_size: 2
"""
REFERENCE = {"test_list": ["assert f() == 1"]}
BUSY = "def f():\n    return 1\n\nwhile True:\n    pass\n"
GOOD = "def f():\n    return 1\n"


def group(program: str, name: str = "g") -> dict[str, Any]:
    # Two samples of the program, each its own text: code-tests runs equal answers once (cacheable),
    # and these tests need both slots busy.
    rollouts = [
        {"trajectory_id": f"{name}{i}", "completion": f"{program}# sample {i}\n", "reference": REFERENCE}
        for i in range(2)
    ]
    return {"group_id": name, "rollouts": rollouts}


def _stat(pid: int) -> tuple[int, float, int] | None:
    """(parent pid, CPU seconds, uid) of a live process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        uid = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) * TICK_S, uid


def descendants(root: int) -> dict[int, tuple[float, int]]:
    """Every live process under ``root``: pid -> (CPU seconds, uid)."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                table[int(entry)] = stat
    found: dict[int, tuple[float, int]] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, cpu, uid) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = (cpu, uid)
                frontier.append(pid)
    return found


def candidates_of(processes: dict[int, tuple[float, int]]) -> list[int]:
    return [pid for pid, (_, uid) in processes.items() if uid >= CANDIDATE_UID_BASE]


def wait_for_no_descendants(root: int, within_s: float) -> float:
    """Seconds until ``root`` has no descendant process left (fails after ``within_s``)."""
    started = time.monotonic()
    while time.monotonic() - started < within_s:
        if not descendants(root):
            return time.monotonic() - started
        time.sleep(0.01)
    raise AssertionError(f"sandbox processes still alive {within_s} s later: {descendants(root)}")


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any, float]:
    import asyncio

    async def go() -> tuple[int, Any, float]:
        started = time.monotonic()
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session,
            session.post(url, json=body, headers=headers or {}) as reply,
        ):
            return reply.status, json.loads(await reply.read()), time.monotonic() - started

    return asyncio.run(go())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(write_config(tmp_path_factory.mktemp("code-cancel"), SERVER)).start()
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output
        assert process.process is not None
        assert not descendants(process.process.pid)


def test_a_disconnect_kills_the_busy_sandboxes_and_frees_their_slots(server):
    pid = server.process.pid
    body = json.dumps({"groups": [group(BUSY)]}).encode()
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(
            f"POST /v1/score HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        time.sleep(0.5)
        busy = descendants(pid)
    burning = sum(cpu for pid_, (cpu, _) in busy.items() if pid_ in candidates_of(busy))
    assert len(candidates_of(busy)) >= 2, busy  # both busy loops were running when the client left
    gone_after = wait_for_no_descendants(pid, 1.0)
    server_cpu = _stat(pid)[1]  # type: ignore[index]
    time.sleep(0.5)
    idle_cpu = _stat(pid)[1] - server_cpu  # type: ignore[index]
    assert idle_cpu < 0.2, idle_cpu  # nothing keeps working for the departed client
    started = time.monotonic()
    status, answer, _ = post(server.url + "/v1/score", {"groups": [group(GOOD, "h")]})
    served_in = time.monotonic() - started
    assert status == 200, answer
    assert [c["final"] for c in answer["groups"][0]["candidates"]] == [1.0, 1.0]
    assert answer["waited_s"] < 0.05 and served_in < 1.0, (answer["waited_s"], served_in)
    print(
        f"\n[disconnect] candidate CPU before the disconnect {burning:.2f} s; every sandbox process "
        f"gone {gone_after:.3f} s after it; server CPU over the next 0.5 s "
        f"{idle_cpu:.3f} s; next request served in {served_in:.3f} s (waited {answer['waited_s']:.4f} s)"
    )


def test_a_request_timeout_answers_504_and_leaves_no_process(server):
    pid = server.process.pid
    status, answer, elapsed = post(
        server.url + "/v1/score", {"groups": [group(BUSY)], "request_timeout_s": 0.5}
    )
    assert status == 504 and answer["error"]["code"] == "timeout", answer
    assert elapsed < 1.5, elapsed
    gone_after = wait_for_no_descendants(pid, 1.0)
    status, answer, served_in = post(server.url + "/get_reward", {"query": [GOOD], "labels": [REFERENCE]})
    assert status == 200 and answer["rewards"] == [1.0] and served_in < 1.0, (answer, served_in)
    print(f"\n[timeout 0.5 s] 504 after {elapsed:.3f} s; every sandbox process gone {gone_after:.3f} s later")


def test_the_header_timeout_cancels_sandboxes_through_get_reward(server):
    pid = server.process.pid
    headers = {"Rewardkit-Timeout-Ms": "400"}
    status, answer, elapsed = post(
        server.url + "/get_reward",
        {"query": [BUSY, f"{BUSY}# another sample\n"], "labels": [REFERENCE] * 2, "request_timeout_s": 30},
        headers,
    )
    assert status == 504 and elapsed < 1.5, (status, answer, elapsed)
    wait_for_no_descendants(pid, 1.0)


def test_in_process_timeout_raises_and_kills_the_sandboxes():
    config = {
        "rl": {
            "reward": {
                "provider": "code-tests",
                "params": {"timeout_s": 10, "cgroup": "required", "concurrency": 2},
            },
            "group_size": 2,
        },
    }
    with rewardkit.load(config) as reward:
        [bound] = reward.worker.providers.values()
        started = time.monotonic()
        with pytest.raises(RequestTimeout, match="request_timeout_s"):
            reward.score([group(BUSY)], timeout_s=0.5)
        elapsed = time.monotonic() - started
        pool = bound.provider._pool
        assert pool is not None
        # The call returns once its sandboxes are reaped: nothing of the pool is left at that point.
        left = [
            pid
            for pid, (_, uid) in descendants(os.getpid()).items()
            if uid in set(pool.uids) or any(slot.process and slot.process.pid == pid for slot in pool._slots)
        ]
        assert elapsed < 1.5 and not left, (elapsed, left, {pid: _stat(pid) for pid in left})
        assert not any(slot.alive for slot in pool._slots)
        batch = reward.score([group(GOOD)], timeout_s=30)
        assert [c.final for _, c in batch.candidates()] == [1.0, 1.0]
    print(f"\n[in process, timeout 0.5 s] RequestTimeout after {elapsed:.3f} s, no sandbox process left")
