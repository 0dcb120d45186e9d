"""``rewardkit serve`` as an Open Reward Standard environment (``rewardkit_service.ors``): episodes
driven by the ORS SDK's own client (``ors-sdk``) and on the wire under ``/ors`` as the spec's pages
describe it: list environments and tasks, create a session, read the prompt and tools, submit an
answer, read ``reward`` and ``finished``; auth is the service's token, sessions are their owner's."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_fixtures import gsm8k_groups, start_server

from rewardkit_service.testing import ServerProcess

ors_client = pytest.importorskip("ors.client")
TOKEN = "ors-4b7e19d2c0a6"
OTHER_TOKEN = "ors-other-88f02c1d"


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ors") / "prompts.jsonl"
    rows = [
        {"prompt": g["rollouts"][0]["prompt"], "reference": g["rollouts"][0]["reference"]}
        for g in gsm8k_groups(3)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def server(tasks_file: Path) -> Iterator[ServerProcess]:
    tokens = tasks_file.parent / "tokens"
    tokens.write_text(f"{TOKEN}\n{OTHER_TOKEN}\n")
    config = f"rl.reward.provider: gsm8k\nrl.data.path: {tasks_file}\n"
    with start_server(tasks_file.parent, config, "--tokens-file", str(tokens)) as started:
        yield started


def references(tasks_file: Path) -> list[str]:
    return [json.loads(line)["reference"] for line in tasks_file.read_text().splitlines()]


def test_an_episode_through_the_ors_sdk_client(server: ServerProcess, tasks_file: Path):
    gold = references(tasks_file)
    with ors_client.ORS(base_url=server.url + "/", api_key=TOKEN) as client:
        environment = client.environment("rewardkit")
        assert environment.list_splits() == ["train"]
        tasks = environment.list_tasks("train")
        assert [task.task_spec["index"] for task in tasks] == [0, 1, 2]
        assert all("reference" not in task.task_spec for task in tasks)  # the gold answer stays on the server
        assert environment.num_tasks("train") == 3
        for task, answer, reward in ((tasks[0], f"#### {gold[0]}", 1.0), (tasks[1], "#### 123456789", 0.0)):
            with environment.session(task=task) as session:
                (block,) = session.get_prompt()
                assert block.text == task.task_spec["prompt"]
                (tool,) = session.list_tools()
                assert tool.name == "submit" and tool.input_schema["required"] == ["answer"]
                output = session.call_tool("submit", {"answer": answer})
                assert (output.reward, output.finished) == (reward, True)
                with pytest.raises(ors_client.ToolCallError, match="finished"):
                    session.call_tool("submit", {"answer": answer})  # one submission per episode
        with environment.session(split="train", index=2) as session:
            with pytest.raises(ors_client.ToolCallError, match="unknown tool"):
                session.call_tool("bash", {"command": "cat /etc/passwd"})
            assert session.call_tool("submit", {"answer": f"#### {gold[2]}"}).reward == 1.0
    with ors_client.ORS(base_url=server.url + "/", api_key="wrong") as client:
        refused = client.environment("rewardkit")
        with pytest.raises(ors_client.AuthenticationError):
            refused.list_tasks("train")


def http(
    server: ServerProcess,
    method: str,
    path: str,
    body: Any = None,
    sid: str | None = None,
    token: str = TOKEN,
) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if sid is not None:
        headers["X-Session-ID"] = sid
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def sse(raw: bytes) -> list[tuple[str, str]]:
    events = []
    for block in raw.decode().split("\n\n"):
        if block.strip():
            lines = dict(line.split(": ", 1) for line in block.splitlines())
            events.append((lines["event"], lines["data"]))
    return events


def test_an_episode_on_the_wire_under_ors(server: ServerProcess, tasks_file: Path):
    assert http(server, "GET", "/ors/list_environments") == (200, b'["rewardkit"]')
    status, raw = http(server, "POST", "/ors/rewardkit/task_range", {"split": "train", "start": -2})
    assert status == 200 and [task["index"] for task in json.loads(raw)["tasks"]] == [1, 2]
    status, raw = http(server, "POST", "/ors/create_session", {})
    assert status == 200
    events = sse(raw)
    assert events[0][0] == "task_id" and events[-1][0] == "end"
    sid = events[0][1]
    status, raw = http(server, "POST", "/ors/rewardkit/task", {"split": "train", "index": 0})
    task = json.loads(raw)["task"]
    forged = {**task, "prompt": "What is 1+1?"}  # a task the client made up: refused
    assert http(server, "POST", "/ors/create", {"task_spec": forged}, sid)[0] == 400
    assert http(server, "POST", "/ors/create", {"env_name": "rewardkit", "task_spec": task}, sid) == (
        200,
        json.dumps({"sid": sid}, separators=(",", ":")).encode(),
    )
    assert http(server, "POST", "/ors/create", {"split": "train", "index": 1}, sid)[0] == 400  # exists
    assert http(server, "GET", "/ors/rewardkit/prompt", sid=sid, token=OTHER_TOKEN)[0] == 404  # not theirs
    status, raw = http(server, "GET", "/ors/rewardkit/prompt", sid=sid)
    assert json.loads(raw) == [{"type": "text", "text": task["prompt"], "detail": None}]
    answer = f"#### {references(tasks_file)[0]}"
    status, raw = http(
        server, "POST", "/ors/rewardkit/call", {"name": "submit", "input": {"answer": answer}}, sid
    )
    assert status == 200
    events = sse(raw)
    assert [name for name, _ in events] == ["task_id", "end"]
    result = json.loads(events[-1][1])
    assert result["ok"] is True and result["output"]["reward"] == 1.0 and result["output"]["finished"] is True
    assert result["output"]["metadata"] == {"components": {"gsm8k": 1.0}, "gated": False}
    assert http(server, "POST", "/ors/ping", sid=sid)[0] == 200
    assert http(server, "POST", "/ors/delete", sid=sid)[0] == 200
    assert http(server, "POST", "/ors/ping", sid=sid)[0] == 404
    assert http(server, "GET", "/ors/list_environments", token="wrong")[0] == 401
    assert http(server, "GET", "/ors/elsewhere/tools")[0] == 404
    assert http(server, "POST", "/ors/rewardkit/tasks", {"split": "test"})[0] == 400
