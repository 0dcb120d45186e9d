"""``nemo-gym-verify``: scoring through a NeMo Gym ``/verify`` server over real loopback HTTP.

Against rewardkit serving itself (``rewardkit serve`` answers ``/verify``) the provider's rewards
equal ``/v1/score``'s; a server that is down is an infrastructure error naming the canary; a fault
that reproduces is charged to its candidate alone, one that does not is scored by the second answer.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from service_fixtures import gsm8k_groups, start_server

import rewardkit
from rewardkit.plugin import RewardkitError


def gym_config(url: str, **params: Any) -> dict[str, Any]:
    reward = {"provider": "nemo-gym-verify", "params": {"url": url, "server_name": "gsm8k-gym", **params}}
    return {"rl": {"reward": reward, "group_size": 4}}


def test_scores_equal_v1_score_against_rewardkit_serving_itself(tmp_path: Path):
    groups = gsm8k_groups(3)
    with start_server(tmp_path, "rl.reward.provider: gsm8k\n") as server:
        with rewardkit.load(
            {"rl": {"reward": {"provider": "gsm8k", "service": server.url}, "group_size": 4}}
        ) as served:
            expected = {c.trajectory_id: c.final for _, c in served.score(groups).candidates()}
        with rewardkit.load(gym_config(server.url)) as through_gym:
            batch = through_gym.score(groups)
    got = {c.trajectory_id: c.final for _, c in batch.candidates()}
    assert got == expected and set(got.values()) == {0.0, 1.0}
    notes = [c.breakdown["nemo-gym-verify"].get("reward_components") for _, c in batch.candidates()]
    assert all(json.loads(note) == {"gsm8k": final} for note, final in zip(notes, got.values(), strict=True))


def test_the_servers_identity_is_the_providers(tmp_path: Path):
    identities = set()
    for params in ({}, {"server_version": "0.5.1"}, {"server_name": "other"}, {"url": "http://127.0.0.1:9"}):
        with rewardkit.load(gym_config(**{"url": "http://127.0.0.1:8", **params})) as reward:
            (record,) = reward.providers
            identities.add(record.identity)
    assert len(identities) == 4


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_server_that_is_down_fails_loudly_naming_the_canary():
    groups = gsm8k_groups(1)
    url = f"http://127.0.0.1:{free_port()}"
    reward = rewardkit.load(gym_config(url, attempts=1, timeout_s=5.0))
    with reward, pytest.raises(RewardkitError) as caught:
        reward.score(groups)
    message = str(caught.value)
    assert "canary" in message and url in message, message


@contextmanager
def gym_stub(decide: Any) -> Iterator[str]:
    """A /verify server on loopback: ``decide(text, calls)`` gives (status, reward) per call."""
    calls: dict[str, int] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's name
            row = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            text = row["response"]["output"][0]["content"][0]["text"]
            with lock:
                calls[text] = calls.get(text, 0) + 1
                count = calls[text]
            status, reward = decide(text, count)
            body = json.dumps({**row, "reward": reward}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


GROUP = [
    {
        "group_id": "g",
        "rollouts": [
            {"trajectory_id": name, "completion": name, "prompt": "p", "reference": "r"}
            for name in ("good", "poison", "flaky", "also-good")
        ],
    }
]


def test_faults_are_charged_only_when_they_reproduce_beside_a_healthy_canary():
    def decide(text: str, count: int) -> tuple[int, Any]:
        if text == "poison":
            return 400, 1.0  # every time: a fault of this candidate's text
        if text == "flaky":
            return (400, 1.0) if count == 1 else (200, 0.75)  # once: the server's, not the candidate's
        return 200, 1.0

    with gym_stub(decide) as url, rewardkit.load(gym_config(url, attempts=1)) as reward:
        candidates = {c.trajectory_id: c for _, c in reward.score(GROUP).candidates()}
    assert {name: c.final for name, c in candidates.items()} == {
        "good": 1.0,
        "poison": 0.0,
        "flaky": 0.75,
        "also-good": 1.0,
    }
    poisoned = candidates["poison"].breakdown["nemo-gym-verify"]
    assert "reproduced" in poisoned["reproduction"], poisoned
    assert candidates["poison"].diagnostics["nemo-gym-verify"]["server_error"] == 1.0


def test_an_answer_without_a_finite_reward_is_a_fault_not_a_score():
    def decide(text: str, count: int) -> tuple[int, Any]:
        return (200, None) if text == "poison" else (200, 1.0)

    with gym_stub(decide) as url, rewardkit.load(gym_config(url, attempts=1)) as reward:
        candidates = {c.trajectory_id: c for _, c in reward.score(GROUP).candidates()}
    assert candidates["poison"].final == 0.0
    assert candidates["poison"].diagnostics["nemo-gym-verify"]["verdict_unreadable"] == 1.0
