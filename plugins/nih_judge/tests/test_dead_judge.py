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

import pytest

from rewardkit.cli import main
from rewardkit.score_job import journal_path, manifest_path

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
