"""The reward monitor in a real Reward Service: a request naming its run feeds that run's monitor.

``rewardkit serve`` runs in a subprocess on loopback with ``rl.monitor`` configured; requests with
``X-Rewardkit-Run`` (and ``X-Rewardkit-Step``) are monitored per run, each run in its own log
folder; a request without the header is scored exactly as before and monitored by no one.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from rewardkit_service.testing import ServerProcess


def groups(step: int, answers: list[str]) -> list[dict]:
    rollouts = [
        {
            "trajectory_id": f"s{step}-{index}",
            "completion": answer,
            "prompt": "two plus three",
            "reference": "5",
        }
        for index, answer in enumerate(answers)
    ]
    return [{"group_id": f"s{step}", "rollouts": rollouts}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("monitored")
    config = folder / "reward.yaml"
    config.write_text(
        "rl:\n  reward: {provider: nonempty}\n"
        f"  monitor: {{reference: exact-match, logdir: '{folder / 'runs'}'}}\n"
    )
    with ServerProcess(config) as process:
        yield process, folder / "runs"


def send(url: str, body: dict, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(
        f"{url}/v1/score", json.dumps(body).encode(), {"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def post(url: str, body: dict, headers: dict[str, str]) -> dict:
    status, text = send(url, body, headers)
    assert status == 200, text
    return json.loads(text)


def test_a_named_run_is_monitored_step_by_step_and_others_are_not(server):
    process, runs = server
    for step, answers in enumerate([["5", "6", "5", "7"], ["5", "5", "6", "6"], ["5", "5", "5", "5"]]):
        answer = post(process.url, {"groups": groups(step, answers)},
                      {"X-Rewardkit-Run": "run-a", "X-Rewardkit-Step": str(step)})  # fmt: skip
        assert answer["monitor"]["train/reward_monitor/alarm"] == 0.0
        if step:  # a step is finished when the next step's batch arrives
            assert "train/reward_monitor/reference_mean" in answer["monitor"]
    plain = post(process.url, {"groups": groups(9, ["5", "6"])}, {})
    assert "monitor" not in plain
    records = [json.loads(line) for line in (runs / "run-a" / "monitor.jsonl").read_text().splitlines()]
    assert [record["step"] for record in records] == [0, 1]
    assert [record["signals"]["reference_mean"] for record in records] == [0.5, 0.5]
    assert all(record["source"] == "service" for record in records)
    # nonempty pays every answer, right or wrong: it agrees with the reference on no pair.
    assert [record["signals"]["divergence"] for record in records] == [0.5, 0.5]
    assert sorted(path.name for path in runs.iterdir()) == ["run-a"]


def test_a_step_header_that_is_not_a_number_is_refused(server):
    process, _ = server
    status, text = send(process.url, {"groups": groups(0, ["5"])},
                        {"X-Rewardkit-Run": "run-b", "X-Rewardkit-Step": "first"})  # fmt: skip
    assert status == 400
    assert "x-rewardkit-step must be an integer" in text


def test_a_run_id_that_cannot_name_a_folder_is_refused(server):
    process, runs = server
    status, text = send(process.url, {"groups": groups(0, ["5"])}, {"X-Rewardkit-Run": "../escape"})
    assert status == 400 and "x-rewardkit-run" in text, text
    assert not (runs.parent / "escape").exists()


def test_a_service_without_tokens_keeps_one_owner_for_all(server):
    process, runs = server
    # Without tokens every request is the same client, whatever Authorization header it sends.
    for step, headers in enumerate(
        [{}, {"Authorization": "Bearer anyone"}, {"Authorization": "Bearer else"}]
    ):
        run = {"X-Rewardkit-Run": "shared", "X-Rewardkit-Step": str(step)}
        post(process.url, {"groups": groups(step, ["5", "6"])}, {**run, **headers})
    records = [json.loads(line) for line in (runs / "shared" / "monitor.jsonl").read_text().splitlines()]
    assert [record["step"] for record in records] == [0, 1]
    assert not (runs / "shared" / ".owner.json").exists()
