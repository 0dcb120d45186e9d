"""A judge nobody answers for (connection refused) is named in the error `rewardkit score` ends
with, every time: the connection error and the URL, never a chunk that was only stopped because
another one failed ("another chunk of the batch failed"). The batch is cut into many chunks run
at once, so several fail together; the error must be the first root failure, not a consequence."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.cli import main
from rewardkit.contracts.errors import RewardkitError
from rewardkit.job.score_job import journal_path, manifest_path
from rewardkit_nih_judge.testing import Reply, ScriptedJudge, graded

GROUPS = 100  # enough groups that the batch is cut into many chunks scored concurrently
RUNS = 12  # in-process runs: the old race reported a stopped chunk in about half of them


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound by this test (so nothing else takes it)
    but never listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def dead_judge_job(folder: Path, port: int) -> Path:
    rows = [
        {"group_id": f"g{g:03d}", "prompt": f"question {g}", "completion": f"answer {g}.{k}"}
        for g in range(GROUPS)
        for k in range(4)
    ]
    (folder / "rollouts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = folder / "judge.yaml"
    config.write_text(
        "rl:\n"
        "  group_size: 4\n"
        "  data: {rollouts_path: rollouts.jsonl}\n"
        "  reward:\n"
        "    provider: nih-rubric\n"
        "    params:\n"
        f"      base_url: http://127.0.0.1:{port}/v1\n"
        "      model: stub\n"
        "      rubric: 'Correct final answer: 10 points.'\n"
        "      scale: [0, 10]\n"
        "      backoff_s: 0.01\n"
    )
    return config


def assert_names_the_dead_judge(err: str, port: int) -> None:
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    assert err.startswith("rewardkit: the batch failed, nothing was written"), err
    assert url in err and "Cannot connect to host" in err, err
    assert "another chunk" not in err and "_BatchFailed" not in err, err
    assert "Traceback" not in err and "Task was destroyed" not in err, err
    assert err.count("\n") == 1, err


def test_a_dead_judge_is_named_every_time(
    tmp_path: Path, dead_port: int, capfd: pytest.CaptureFixture[str]
) -> None:
    config = dead_judge_job(tmp_path, dead_port)
    for run in range(RUNS):
        out = tmp_path / f"run{run}" / "out.jsonl"
        assert main(["score", str(config), "--out", str(out)]) == 1
        captured = capfd.readouterr()
        assert captured.out == ""
        assert_names_the_dead_judge(captured.err, dead_port)
        # nothing was scored: nothing is left beside --out
        assert not out.exists() and not manifest_path(out).exists() and not journal_path(out).exists()


def test_a_dead_judge_is_named_by_the_command(tmp_path: Path, dead_port: int) -> None:
    config = dead_judge_job(tmp_path, dead_port)
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "rewardkit.cli", "score", str(config), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert_names_the_dead_judge(done.stderr, dead_port)


CANARIES = {
    "nih-rubric": "the task's own text, given as an answer to the same task",
    "nih-compare": "the task's own text, given as an answer compared with itself on the same task",
}


@pytest.mark.parametrize("provider", sorted(CANARIES))
def test_a_dead_judge_fails_the_batch_naming_the_canary_and_the_url(dead_port: int, provider: str) -> None:
    # Issue 40: a fault injected into the infrastructure fails the batch loudly under raise, naming
    # the canary that showed the judge itself is down (not only the candidate's request).
    url = f"http://127.0.0.1:{dead_port}/v1/chat/completions"
    params = {
        "base_url": f"http://127.0.0.1:{dead_port}/v1",
        "model": "stub",
        "rubric": "r",
        "backoff_s": 0.01,
    }
    config = {"rl": {"group_size": 2, "reward": {"provider": provider, "params": params}}}
    rows = [{"trajectory_id": f"t{k}", "completion": f"answer {k}", "prompt": "question"} for k in range(2)]
    with rewardkit.load(config) as reward, pytest.raises(RewardkitError) as failed:  # onError: raise
        reward.score([("g", rows)])
    message = str(failed.value)
    assert f"; and the canary ({CANARIES[provider]}) failed too" in message
    assert message.count(url) == 2 and "Cannot connect to host" in message  # the request's and the canary's


def test_a_request_that_failed_alone_is_asked_again_beside_a_passing_canary() -> None:
    # One request meets a 500 (retries 0); the canary, another answer of the group, is read: the
    # judge is up, so the candidate is asked once more alone and that verdict is its score.
    failed_once: list[str] = []

    def answer(body: dict[str, Any]) -> Reply | dict[str, Any]:
        text = graded(body)
        if text == "3" and not failed_once:
            failed_once.append(text)
            return Reply("a hiccup", status=500)
        return {"score": float(text), "rationale": "graded"}

    with ScriptedJudge(answer) as judge:
        params = {"base_url": judge.base_url, "model": "stub", "rubric": "r", "scale": [0, 10], "retries": 0}
        config = {"rl": {"group_size": 3, "reward": {"provider": "nih-rubric", "params": params}}}
        rows = [{"trajectory_id": f"t{k}", "completion": text, "prompt": "q"} for k, text in enumerate("135")]
        with rewardkit.load(config) as reward:
            batch = reward.score([("g", rows)])
        assert [candidate.final for _, candidate in batch.candidates()] == [0.1, 0.3, 0.5]
        assert batch.metrics["train/reward/infra_error_rate"] == 0.0
        # three questions, the canary (an answer a verdict read), and the candidate asked again
        assert len(judge.requests) == 5 and [graded(body) for body in judge.requests[3:]][1] == "3"
