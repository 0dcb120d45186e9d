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
from rewardkit.job.score_job import manifest_path, run_score

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


# -- per-candidate reasons, the summary, and the optimised term ------------------------------------


def reasons_config(tmp_path: Path, reward: str, rows: list[dict[str, object]]) -> Path:
    write(tmp_path / "rollouts.jsonl", rows)
    config = tmp_path / "config.yaml"
    config.write_text(
        "rl:\n  group_size: 2\n  data: {rollouts_path: rollouts.jsonl}\n"
        f"  reward: {{catalog: 'reasons_fixtures:catalog', {reward}}}\n"
    )
    return config


def test_each_line_carries_its_candidates_diagnostics(tmp_path: Path):
    out = tmp_path / "results.jsonl"
    assert run_score(str(EXAMPLE / "config.yaml"), [], str(out), stdout=io.StringIO()) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # gsm8k reports whether it found an answer: the line says why a candidate scored 0.
    assert {frozenset(row["diagnostics"]) for row in rows} == {frozenset({"gsm8k"})}
    assert {row["diagnostics"]["gsm8k"]["extracted"] for row in rows} <= {0.0, 1.0}


def test_the_summary_shows_the_first_errors_with_reasons_and_names_the_manifest(tmp_path: Path):
    rows = [
        {"group_id": f"g{n}", "completion": "boom" if n % 2 else "fine"} for n in range(8) for _ in range(2)
    ]
    spec = "spec: {onError: zero, components: [{provider: flaky}]}"
    config = reasons_config(tmp_path, spec, rows)
    out = tmp_path / "out.jsonl"
    stdout = io.StringIO()
    assert run_score(str(config), [], str(out), stdout=stdout, stderr=io.StringIO()) == 0
    summary = stdout.getvalue()
    listed = [line for line in summary.splitlines() if "the checker raised ZeroDivisionError" in line]
    assert "errors: 8 (the first 5):" in summary and len(listed) == 5
    assert listed[0] == (
        "  group 'g1', candidate 'g1/0', component 'flaky': 'the checker raised ZeroDivisionError' "
        "[runtime_error=1]"
    )
    assert f"run manifest {manifest_path(out)}" in summary
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["diagnostics"]["flaky"]["runtime_error"] for line in lines[:4]] == [0.0, 0.0, 1.0, 1.0]
    assert lines[2]["breakdown"]["flaky"]["reason"] == "the checker raised ZeroDivisionError"


def test_a_run_without_errors_lists_none(tmp_path: Path):
    config = reasons_config(tmp_path, "provider: flaky", [{"group_id": "g", "completion": "ok"}] * 2)
    stdout = io.StringIO()
    assert run_score(str(config), [], str(tmp_path / "o.jsonl"), stdout=stdout, stderr=io.StringIO()) == 0
    assert "errors:" not in stdout.getvalue()


def test_a_multi_term_provider_says_which_term_is_optimised(tmp_path: Path):
    rows = [{"group_id": "g", "completion": "yes"}, {"group_id": "g", "completion": "no"}]
    config = reasons_config(tmp_path, "provider: two-terms", rows)
    out = tmp_path / "o.jsonl"
    stderr = io.StringIO()
    assert run_score(str(config), [], str(out), stdout=io.StringIO(), stderr=stderr) == 0
    assert "declares terms ['correct', 'format']; optimising 'correct'" in stderr.getvalue()
    assert "rl.reward.term=format" in stderr.getvalue()
    assert [json.loads(line)["final"] for line in out.read_text().splitlines()] == [1.0, 0.0]

    stderr = io.StringIO()
    code = run_score(
        str(config), ["rl.reward.term=format"], str(out), overwrite=True, stdout=io.StringIO(), stderr=stderr
    )
    assert code == 0
    assert "optimising 'format' (chosen by rl.reward.term)" in stderr.getvalue()
    assert [json.loads(line)["final"] for line in out.read_text().splitlines()] == [0.5, 0.5]


def test_an_undeclared_term_is_refused_naming_the_declared_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    config = reasons_config(tmp_path, "provider: two-terms", [{"group_id": "g", "completion": "x"}] * 2)
    assert main(["score", str(config), "rl.reward.term=fromat", "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "'fromat'" in err and "['correct', 'format']" in err


def test_a_single_term_provider_prints_no_term_note(tmp_path: Path, capsys: pytest.CaptureFixture):
    config = reasons_config(tmp_path, "provider: flaky", [{"group_id": "g", "completion": "ok"}] * 2)
    assert main(["score", str(config), "--out", str(tmp_path / "o.jsonl")]) == 0
    assert "optimising" not in capsys.readouterr().err


def test_rollouts_with_prompt_and_reference_fields_score_without_mapping(tmp_path: Path):
    rows = [
        {"group_id": "a", "prompt": "q", "reference": "#### 3", "completion": f"It is {n}."} for n in (3, 4)
    ]
    write(tmp_path / "rollouts.jsonl", rows)
    config = tmp_path / "config.yaml"
    config.write_text(
        "rl: {group_size: 2, data: {rollouts_path: rollouts.jsonl}, reward: {provider: gsm8k}}\n"
    )
    out = tmp_path / "o.jsonl"
    assert run_score(str(config), [], str(out), stdout=io.StringIO()) == 0
    assert [json.loads(line)["final"] for line in out.read_text().splitlines()] == [1.0, 0.0]


def test_a_reference_missing_for_a_provider_that_needs_it_names_the_column(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    write(tmp_path / "rollouts.jsonl", [{"group_id": "a", "answer": "#### 3", "completion": "3"}] * 2)
    config = tmp_path / "config.yaml"
    config.write_text(
        "rl: {group_size: 2, data: {rollouts_path: rollouts.jsonl}, reward: {provider: gsm8k}}\n"
    )
    assert main(["score", str(config), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "line 1, column 'reference'" in err and "rl.data.reference_column is not set" in err
    assert "answer, completion, group_id" in err


def test_a_reason_is_printed_escaped_so_a_completion_cannot_drive_the_terminal():
    from rewardkit.job.score_job import error_lines

    chunk = {
        "components": {"flaky": {"error": 1}},
        "errors": [{"group_id": "g", "trajectory_id": "t", "component": "flaky",
                    "reason": "bad \x1b[2J\x1b]0;owned\x07", "diagnostics": {}}],
    }  # fmt: skip
    line = error_lines([chunk])[1]
    assert "\x1b" not in line and "\\x1b[2J" in line
