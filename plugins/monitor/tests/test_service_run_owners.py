"""A monitored run belongs to the client token that opened it, in a real Reward Service.

``rewardkit serve`` runs in a subprocess on loopback with two tokens and ``rl.monitor`` configured
(reward ``nonempty``, reference ``exact-match``, a five-step warm-up). Another token is refused
under a run (403) before anything is scored, so it cannot feed, alarm or cut the run's log; another
token's runs, up to its cap and past it, neither close the run nor restart its warm-up.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from rewardkit_service.testing import ServerProcess

ALICE, BOB = "alice-token-3f9c2a", "bob-token-8d41e7"
# nonempty pays a non-empty answer whatever it says: it agrees with exact-match when the wrong
# answers are empty (divergence 0) and is blind when they are not (0.5): a hack after a warm-up.
AGREEING = ["5", "", "5", ""]
BLIND = ["5", "6", "5", "6"]
ALARM = "train/reward_monitor/alarm"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("owned")
    config = folder / "reward.yaml"
    config.write_text(
        "rl:\n  reward: {provider: nonempty}\n"
        f"  monitor: {{reference: exact-match, warmup_steps: 5, logdir: '{folder / 'runs'}', "
        f"stop_file: '{folder / 'stop' / 'STOP'}'}}\n"
    )
    with ServerProcess(config, env={"REWARDKIT_TOKENS": f"{ALICE},{BOB}"}) as process:
        yield process.url, folder


def body(step: int, answers: list[str]) -> dict[str, Any]:
    rollouts = [
        {
            "trajectory_id": f"s{step}-{index}",
            "completion": answer,
            "prompt": "two plus three",
            "reference": "5",
        }
        for index, answer in enumerate(answers)
    ]
    return {"groups": [{"group_id": f"s{step}", "rollouts": rollouts}]}


def send(url: str, token: str, run: str, step: int | None, answers: list[str]) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}", "X-Rewardkit-Run": run}
    if step is not None:
        headers["X-Rewardkit-Step"] = str(step)
    request = urllib.request.Request(
        f"{url}/v1/score", json.dumps(body(step or 0, answers)).encode(), headers
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def post(url: str, token: str, run: str, step: int | None, answers: list[str]) -> dict[str, float]:
    status, answer = send(url, token, run, step, answers)
    assert status == 200, answer
    monitored: dict[str, float] = answer["monitor"]
    return monitored


def logged_steps(folder: Path, run: str) -> list[int]:
    lines = (folder / "runs" / run / "monitor.jsonl").read_text().splitlines()
    return [json.loads(line)["step"] for line in lines]


def test_another_token_cannot_post_under_alarm_or_cut_a_run(server: Any) -> None:
    url, folder = server
    for step in (0, 1):
        post(url, ALICE, "alice-run", step, AGREEING)
    log = folder / "runs" / "alice-run" / "monitor.jsonl"
    before = log.read_text()
    for step in range(2, 12):  # enough blind steps to alarm a run they could feed
        status, answer = send(url, BOB, "alice-run", step, BLIND)
        assert status == 403, answer
        assert answer["error"]["code"] == "run_not_yours"
        assert "run 'alice-run' belongs to another client token" in answer["error"]["message"]
    assert log.read_text() == before and logged_steps(folder, "alice-run") == [0]
    # Alice's run goes on where it was: step 1 is finished by step 2, the log only grows.
    answer = post(url, ALICE, "alice-run", 2, AGREEING)
    assert answer[ALARM] == 0.0 and answer["train/reward_monitor/divergence"] == 0.0
    assert log.read_text().startswith(before) and logged_steps(folder, "alice-run") == [0, 1]
    assert not (folder / "stop" / "alice-run").exists()
    assert BOB not in log.read_text() and ALICE not in (log.parent / ".owner.json").read_text()


def test_another_tokens_runs_neither_close_a_run_nor_restart_its_warm_up(server: Any) -> None:
    url, folder = server
    for step in range(3):  # three of the five warm-up steps; step 2 is still gathering
        post(url, ALICE, "patient", step, AGREEING)
    for number in range(64):  # the cap is per token: Bob's 64 runs leave Alice's alone
        post(url, BOB, f"bob-{number}", None, AGREEING)
    status, answer = send(url, BOB, "bob-64", None, AGREEING)
    assert status == 429 and answer["error"]["code"] == "too_many_runs", answer
    assert answer["error"]["limit"] == 64 and "'bob-64'" in answer["error"]["message"]
    assert logged_steps(folder, "patient") == [0, 1]  # not closed: step 2 not finished early
    for step, answers in ((3, AGREEING), (4, AGREEING), (5, BLIND)):
        assert post(url, ALICE, "patient", step, answers)[ALARM] == 0.0  # through step 4: honest
    for step in (6, 7):
        post(url, ALICE, "patient", step, BLIND)
    # Step 7 is finished by step 8. The blind steps 5-7 alarm only if the warm-up (steps 0-4) was
    # unbroken: restarted at step 3, it would still be warming up.
    assert post(url, ALICE, "patient", 8, AGREEING)[ALARM] == 1.0
    assert logged_steps(folder, "patient") == list(range(8))
    stop = json.loads((folder / "stop" / "patient" / "STOP").read_text())
    assert stop["began"] == 5 and 5 <= stop["step"] <= 7, stop
