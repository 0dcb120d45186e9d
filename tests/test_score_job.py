"""`rewardkit score`, the main job: results, summary, atomic output, errors naming row and key."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit.cli import main
from rewardkit.score_job import manifest_path, run_score

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gsm8k"


def test_the_example_job_scores_every_rollout_and_agrees_with_the_labels(tmp_path: Path):
    out = tmp_path / "results.jsonl"
    stdout = io.StringIO()
    assert run_score(str(EXAMPLE / "config.yaml"), [], str(out), stdout=stdout) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    source = [json.loads(line) for line in (EXAMPLE / "rollouts.jsonl").read_text().splitlines()]
    assert [row["trajectory_id"] for row in rows] == [row["trajectory_id"] for row in source]
    assert [row["final"] for row in rows] == [float(row["is_correct"]) for row in source]
    for row in rows:
        assert {"group_id", "trajectory_id", "final", "breakdown", "advantage"} <= row.keys()
    summary = stdout.getvalue()
    assert "gsm8k:task" in summary and "rollouts/s" in summary and "final" in summary
    manifest = json.loads(manifest_path(out).read_text())
    assert manifest["status"] == "complete" and len(manifest["providers"][0]["identity"]) == 64


def test_overrides_apply_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture):
    out = tmp_path / "r.jsonl"
    code = main(
        [
            "score",
            str(EXAMPLE / "config.yaml"),
            "rl.reward.provider=constant",
            "rl.reward.params={value: 0.5}",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert {json.loads(line)["final"] for line in out.read_text().splitlines()} == {0.5}


def write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def config_for(tmp_path: Path, rollouts: list[object], **extra: str) -> Path:
    write(tmp_path / "rollouts.jsonl", rollouts)
    lines = [
        "rl:",
        f"  group_size: {extra.get('group_size', 2)}",
        "  data:",
        "    rollouts_path: rollouts.jsonl",
        "    response_column: answer",
        "  reward:",
        f"    provider: {extra.get('provider', 'gsm8k')}",
    ]
    config = tmp_path / "config.yaml"
    config.write_text("\n".join(lines) + "\n")
    return config


def good_rows() -> list[dict[str, object]]:
    return [
        {"group_id": "a", "prompt": "q", "answer": "#### 3", "completion": "The answer is 3."},
        {"group_id": "a", "prompt": "q", "answer": "#### 3", "completion": "The answer is 4."},
    ]


@pytest.mark.parametrize(
    "mutate,needle",
    [
        (lambda rows: rows.__setitem__(1, "{not json"), "line 2"),
        (lambda rows: rows[1].pop("answer"), "line 2"),
        (lambda rows: rows[0].pop("group_id"), "line 1"),
        (lambda rows: rows.pop(), "group 'a'"),
        (lambda rows: rows[1].__setitem__("answer", "#### 4"), "line 2"),
        (lambda rows: rows[1].__setitem__("prompt", "another question"), "line 2, column 'prompt'"),
    ],
    ids=[
        "not-json",
        "missing-reference-column",
        "missing-group-id",
        "wrong-group-size",
        "inconsistent-reference",
        "mixed-prompts",
    ],
)
def test_bad_rollouts_fail_clearly_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture, mutate, needle: str
):
    rows = good_rows()
    mutate(rows)
    config = config_for(tmp_path, rows)
    out = tmp_path / "out.jsonl"
    assert main(["score", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err, err
    assert not out.exists()


def test_malformed_config_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture):
    config = config_for(tmp_path, good_rows())
    config.write_text(config.read_text().replace("group_size", "group_sise"))
    assert main(["score", str(config), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "rl.group_size" in capsys.readouterr().err


def test_a_failed_batch_writes_nothing_and_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture):
    rows = good_rows()
    rows[0]["completion"] = "x"
    config = config_for(tmp_path, rows, provider="exact-match")
    out = tmp_path / "out.jsonl"
    out.write_text("previous results\n")
    # exact-match needs a string reference: a list makes its scorer raise a contract error mid-batch
    write(tmp_path / "rollouts.jsonl", [{**row, "answer": [1]} for row in rows])
    assert main(["score", str(config), "--out", str(out)]) == 1
    assert "nothing was written" in capsys.readouterr().err
    assert out.read_text() == "previous results\n"
    # nothing was journaled, so nothing is left to resume: no pending manifest blocks the next run
    assert not manifest_path(out).exists()
    write(tmp_path / "rollouts.jsonl", rows)
    assert main(["score", str(config), "--out", str(out)]) == 0


def test_a_pending_run_resumes_only_under_the_same_identity(tmp_path: Path, capsys: pytest.CaptureFixture):
    config = config_for(tmp_path, good_rows())
    out = tmp_path / "out.jsonl"
    assert main(["score", str(config), "--out", str(out)]) == 0
    manifest = json.loads(manifest_path(out).read_text())
    manifest["status"] = "pending"
    manifest_path(out).write_text(json.dumps(manifest))
    assert main(["score", str(config), "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err
    manifest["providers"][0]["identity"] = "f" * 64
    manifest_path(out).write_text(json.dumps(manifest))
    assert main(["score", str(config), "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "f" * 64 in err and "identity" in err


def test_resume_with_the_recorded_identity_finishes_the_run(tmp_path: Path):
    config = config_for(tmp_path, good_rows())
    out = tmp_path / "out.jsonl"
    assert main(["score", str(config), "--out", str(out)]) == 0
    manifest = json.loads(manifest_path(out).read_text())
    manifest_path(out).write_text(json.dumps({**manifest, "status": "pending"}))
    assert main(["score", str(config), "--out", str(out), "--resume"]) == 0
    assert json.loads(manifest_path(out).read_text())["status"] == "complete"


def test_the_readme_main_command_runs_as_a_program(tmp_path: Path):
    shutil.copytree(EXAMPLE, tmp_path / "gsm8k")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "rewardkit.cli",
            "score",
            str(tmp_path / "gsm8k" / "config.yaml"),
            "--out",
            str(tmp_path / "r.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 48


def test_resume_refuses_a_changed_spec(tmp_path: Path, capsys: pytest.CaptureFixture):
    config = config_for(tmp_path, good_rows())
    out = tmp_path / "out.jsonl"
    assert main(["score", str(config), "--out", str(out)]) == 0
    manifest = json.loads(manifest_path(out).read_text())
    manifest["spec"]["onError"] = "zero"
    manifest_path(out).write_text(json.dumps({**manifest, "status": "pending"}))
    assert main(["score", str(config), "--out", str(out), "--resume"]) == 2
    assert "onError" in capsys.readouterr().err
