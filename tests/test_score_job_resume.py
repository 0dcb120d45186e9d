"""`rewardkit score` streams, journals and resumes: a job killed mid-way finishes with --resume,
equal to an uninterrupted run, without scoring a journaled group again."""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.cli import main
from rewardkit.job import score_job
from rewardkit.job.data import RolloutGroup, read_rollouts
from rewardkit.job.score_job import journal_path, manifest_path, run_score
from rewardkit.scoring.scored import ScoredBatch

HERE = Path(__file__).parent
GROUP_SIZE = 4
CHUNK = 8  # rollouts: two groups a chunk


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setattr(score_job, "CHUNK_ROLLOUTS", CHUNK)


def rows(groups: int = 10, interleaved: bool = False) -> list[dict]:
    out = [
        {
            "group_id": f"g{g:02d}",
            "prompt": f"question {g}",
            "completion": "" if (g + k) % 5 == 0 else "x" * (g * 3 + k),
        }
        for g in range(groups)
        for k in range(GROUP_SIZE)
    ]
    if interleaved:
        out = [out[g * GROUP_SIZE + k] for k in range(GROUP_SIZE) for g in range(groups)]
    return out


def job(tmp_path: Path, data: list[dict], scaling: str = "group") -> Path:
    (tmp_path / "rollouts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in data))
    config = tmp_path / "config.yaml"
    config.write_text(
        "rl:\n"
        f"  group_size: {GROUP_SIZE}\n"
        f"  advantage_scaling: {scaling}\n"
        "  data: {rollouts_path: rollouts.jsonl}\n"
        "  reward: {provider: recording, catalog: 'score_fixtures:catalog'}\n"
    )
    return config


def calls(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


KILLED_JOB = """
import os, signal, sys
from rewardkit.job import score_job
score_job.CHUNK_ROLLOUTS = {chunk}

def stop(number):
    if number == {kill_after}:
        os.kill(os.getpid(), signal.SIGKILL)

score_job.run_score(sys.argv[1], [], sys.argv[2], on_chunk=stop)
"""


def run_killed(config: Path, out: Path, kill_after: int, calls_file: Path) -> int:
    env = {**os.environ, "REWARDKIT_TEST_CALLS": str(calls_file)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    code = KILLED_JOB.format(chunk=CHUNK, kill_after=kill_after)
    done = subprocess.run([sys.executable, "-c", code, str(config), str(out)], env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    return done.returncode


@pytest.mark.parametrize("scaling", ["group", "batch"])
def test_a_job_killed_mid_way_resumes_to_the_uninterrupted_output(tmp_path: Path, monkeypatch, scaling: str):
    reference = tmp_path / "reference"
    reference.mkdir()
    reference_out = reference / "out.jsonl"
    assert run_score(str(job(reference, rows(), scaling)), [], str(reference_out), stdout=io.StringIO()) == 0
    expected = reference_out.read_bytes()

    config, out, log = job(tmp_path, rows(), scaling), tmp_path / "out.jsonl", tmp_path / "calls.txt"
    assert run_killed(config, out, kill_after=2, calls_file=log) == -signal.SIGKILL
    assert not out.exists() and json.loads(manifest_path(out).read_text())["status"] == "pending"
    first = calls(log)
    assert sorted(first) == [f"g{g:02d}" for g in range(6)], "three chunks of two groups, then the kill"
    # a torn write after the last whole chunk: half a chunk of lines and half a record
    with journal_path(out).open("ab") as journal:
        journal.write(b'{"group_id":"g06","trajectory_id":"g06/0","final":1.0}\n{"chunk":3,"inp')

    monkeypatch.setenv("REWARDKIT_TEST_CALLS", str(log))
    stdout = io.StringIO()
    assert run_score(str(config), [], str(out), resume=True, stdout=stdout) == 0
    resumed = calls(log)[len(first) :]
    assert sorted(resumed) == [f"g{g:02d}" for g in range(6, 10)], "no journaled group is scored again"
    assert out.read_bytes() == expected
    manifest = json.loads(manifest_path(out).read_text())
    assert manifest["status"] == "complete" and manifest["chunks_reused"] == 3
    assert not journal_path(out).exists()
    assert "3 of 5 chunks were journaled already" in stdout.getvalue()


def with_completions(batch: ScoredBatch, groups: Sequence[RolloutGroup]) -> list[dict[str, Any]]:
    """The batch's rows as the job writes them: each ends with the completion it was scored on."""
    texts = [rollout["completion"] for group in groups for rollout in group.rollouts]
    return [{**row, "completion": text} for row, text in zip(batch.to_jsonl_rows(), texts, strict=True)]


def test_streamed_chunks_equal_scoring_everything_at_once(tmp_path: Path):
    for scaling in ("group", "batch", "none"):
        folder = tmp_path / scaling
        folder.mkdir()
        for interleaved in (False, True):
            data = rows(interleaved=interleaved)
            config = job(folder, data, scaling)
            out = folder / f"out-{interleaved}.jsonl"
            assert run_score(str(config), [], str(out), stdout=io.StringIO()) == 0
            got = [json.loads(line) for line in out.read_text().splitlines()]
            with rewardkit.load(str(config)) as reward:
                groups = read_rollouts(folder / "rollouts.jsonl", needs=reward.needs)
                want = reward.score(groups)
            assert got == with_completions(want, groups), (scaling, interleaved)
            metrics = json.loads(manifest_path(out).read_text())["metrics"]
            assert metrics == pytest.approx(want.metrics, rel=1e-12)


def test_resume_scores_only_the_chunks_whose_input_changed(tmp_path: Path, monkeypatch):
    config, out, log = job(tmp_path, rows()), tmp_path / "out.jsonl", tmp_path / "calls.txt"
    assert run_killed(config, out, kill_after=3, calls_file=log) == -signal.SIGKILL
    data = rows()
    data[9]["completion"] = "fixed"  # group g02, in chunk 1
    job(tmp_path, data)
    monkeypatch.setenv("REWARDKIT_TEST_CALLS", str(log))
    before = len(calls(log))
    assert run_score(str(config), [], str(out), resume=True, stdout=io.StringIO()) == 0
    assert sorted(calls(log)[before:]) == ["g02", "g03", "g08", "g09"]


def test_a_pending_run_needs_resume_or_overwrite_and_says_what_it_found(tmp_path: Path, capsys):
    config, out, log = job(tmp_path, rows()), tmp_path / "out.jsonl", tmp_path / "calls.txt"
    assert run_killed(config, out, kill_after=1, calls_file=log) == -signal.SIGKILL
    assert main(["score", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "did not finish" in err and "recording (" in err and "16 rollouts in 2 chunks are journaled" in err
    assert "--resume" in err and "--overwrite" in err
    assert main(["score", str(config), "--out", str(out), "--overwrite"]) == 0
    assert json.loads(manifest_path(out).read_text())["status"] == "complete"


def test_resume_refuses_other_job_settings(tmp_path: Path, capsys):
    config, out, log = job(tmp_path, rows()), tmp_path / "out.jsonl", tmp_path / "calls.txt"
    assert run_killed(config, out, kill_after=1, calls_file=log) == -signal.SIGKILL
    assert main(["score", str(config), "rl.advantage_scaling=batch", "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "advantage_scaling: 'group' then, 'batch' now" in err


# -- bad input and bad --out: data errors, checked before scoring ----------------------------------


@pytest.mark.parametrize(
    "line,needle",
    [
        ('{"group_id": "g00", "completion": "a", "n": ' + "9" * 4301 + "}", "line 2: not readable"),
        ('{"group_id": "g00", "completion": "a", "prompt": ' + "[" * 1000 + "]" * 1000 + "}", "line 2"),
    ],
    ids=["huge-integer", "deep-nesting"],
)
def test_unreadable_json_is_a_data_error_naming_the_line(tmp_path: Path, capsys, line: str, needle: str):
    config = job(tmp_path, rows(1))
    lines = (tmp_path / "rollouts.jsonl").read_text().splitlines()
    lines[1] = line
    (tmp_path / "rollouts.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err, err
    assert not out.exists() and not manifest_path(out).exists()


def test_an_out_folder_is_refused_before_scoring(tmp_path: Path, capsys, monkeypatch):
    config, log = job(tmp_path, rows(2)), tmp_path / "calls.txt"
    monkeypatch.setenv("REWARDKIT_TEST_CALLS", str(log))
    folder = tmp_path / "results"
    folder.mkdir()
    assert main(["score", str(config), "--out", str(folder)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert calls(log) == [] and not manifest_path(folder).exists()


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_results_and_manifest_honour_the_umask(tmp_path: Path, umask: int, mode: int):
    config, out = job(tmp_path, rows(2)), tmp_path / "out.jsonl"
    previous = os.umask(umask)
    try:
        assert run_score(str(config), [], str(out), stdout=io.StringIO()) == 0
    finally:
        os.umask(previous)
    for path in (out, manifest_path(out)):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path


def test_interleaved_groups_without_a_group_size_are_read_again_by_index(tmp_path: Path, monkeypatch):
    config, out, log = (
        job(tmp_path, rows(12, interleaved=True)),
        tmp_path / "out.jsonl",
        tmp_path / "calls.txt",
    )
    monkeypatch.setenv("REWARDKIT_TEST_CALLS", str(log))
    assert run_score(str(config), ["rl.group_size=null"], str(out), stdout=io.StringIO()) == 0
    made = calls(log)
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["group_id"] for row in got] == [f"g{g:02d}" for g in range(12) for _ in range(GROUP_SIZE)]
    with rewardkit.load(str(config), ["rl.group_size=null"]) as reward:
        groups = read_rollouts(tmp_path / "rollouts.jsonl", needs=reward.needs)
        want = reward.score(groups)
    assert got == with_completions(want, groups)
    # read as contiguous, a first chunk of eight one-row groups was scored before g00 came back;
    # that chunk is void: every group was then scored once, whole, and only those results count
    assert sorted(made) == sorted([f"g{g:02d}" for g in range(8)] + [f"g{g:02d}" for g in range(12)])


def test_chunks_with_uneven_skips_and_diagnostic_weights_merge_to_the_one_process_report(tmp_path: Path):
    # remote_fixtures' `mixed` skips and fails in the first groups only and weights its diagnostic
    # by the completion, so the chunks of 8 rollouts average unequal shares of each mean.
    from remote_fixtures import mixed_groups

    groups = mixed_groups(10)
    data = [{"group_id": g["group_id"], **rollout} for g in groups for rollout in g["rollouts"]]
    (tmp_path / "rollouts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in data))
    config = tmp_path / "config.yaml"
    config.write_text(
        "rl:\n"
        f"  group_size: {GROUP_SIZE}\n"
        "  data: {rollouts_path: rollouts.jsonl}\n"
        "  reward:\n"
        "    catalog: 'remote_fixtures:catalog'\n"
        "    spec: {onError: zero, components: [{provider: mixed}]}\n"
    )
    out = tmp_path / "out.jsonl"
    assert run_score(str(config), [], str(out), stdout=io.StringIO()) == 0
    with rewardkit.load(str(config)) as reward:
        want = reward.score(groups).metrics
    assert want["train/reward_component/mixed/skipped_count"] > 0
    got = json.loads(manifest_path(out).read_text())["metrics"]
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert got[name] == pytest.approx(value, rel=1e-12), name


def test_resume_refuses_a_provider_whose_code_changed_without_a_revision_bump(tmp_path: Path, capsys):
    config, out, log = job(tmp_path, rows()), tmp_path / "out.jsonl", tmp_path / "calls.txt"
    assert run_killed(config, out, kill_after=1, calls_file=log) == -signal.SIGKILL
    # As if the provider's code had changed since: the recorded fingerprint is another one.
    manifest = json.loads(manifest_path(out).read_text())
    current = manifest["providers"][0]["code_fingerprint"]
    earlier = "0" * 64
    manifest["providers"][0]["code_fingerprint"] = earlier
    manifest_path(out).write_text(json.dumps(manifest))
    assert main(["score", str(config), "--out", str(out), "--resume"]) == 2
    said = capsys.readouterr().err
    assert earlier[:12] in said and current[:12] in said and "--allow-code-change" in said
    assert not out.exists() and json.loads(manifest_path(out).read_text())["status"] == "pending"

    assert main(["score", str(config), "--out", str(out), "--resume", "--allow-code-change"]) == 0
    assert "warning: --allow-code-change" in capsys.readouterr().err
    finished = json.loads(manifest_path(out).read_text())
    assert finished["status"] == "complete"
    assert finished["code_changes"] == [
        {"provider": "recording", "revision": manifest["providers"][0]["revision"],
         "code_fingerprints": [earlier, current]}
    ]  # fmt: skip
