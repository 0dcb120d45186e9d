"""How `rewardkit score` runs a job, as a user meets it on the command line: `--resume` when nothing
is journaled yet starts the job, chunks follow `score.chunk_rollouts` and shrink to about
`score.chunk_seconds` for a slow provider, and a run under `onError: none` where every candidate
errored warns and exits 3 unless `--allow-all-errored`."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from interrupt_fixtures import write_job

from rewardkit.job.answer_journal import answers_path
from rewardkit.job.score_job import Journal, journal_path, manifest_path, run_score

HERE = Path(__file__).parent
ROOT = HERE.parent
EXAMPLE = ROOT / "examples" / "gsm8k" / "config.yaml"
REWARDKIT = Path(sys.executable).parent / "rewardkit"  # the console script this env installed
GROUP_SIZE = 4


def rewardkit(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    assert REWARDKIT.is_file(), f"{REWARDKIT}: the env has no `rewardkit` command"
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "PYTHONPATH": path, **(env or {})}
    return subprocess.run(
        [str(REWARDKIT), *argv], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


# -- --resume with nothing journaled ----------------------------------------------------------------


def test_resume_with_nothing_journaled_runs_the_job_from_the_start(tmp_path: Path):
    plain = rewardkit("score", str(EXAMPLE), "--out", "plain.jsonl", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr

    done = rewardkit("score", str(EXAMPLE), "--out", "results.jsonl", "--resume", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "--resume" in line]
    assert len(said) == 1 and "nothing is journaled" in said[0] and "from the start" in said[0], done.stderr
    assert (tmp_path / "results.jsonl").read_bytes() == (tmp_path / "plain.jsonl").read_bytes()
    assert json.loads(manifest_path(tmp_path / "results.jsonl").read_text())["status"] == "complete"
    assert not journal_path(tmp_path / "results.jsonl").exists()


def test_resume_of_a_complete_run_is_still_refused(tmp_path: Path):
    assert rewardkit("score", str(EXAMPLE), "--out", "results.jsonl", cwd=tmp_path).returncode == 0
    again = rewardkit("score", str(EXAMPLE), "--out", "results.jsonl", "--resume", cwd=tmp_path)
    assert again.returncode == 2 and "is complete; nothing to resume" in again.stderr


# -- chunk size -----------------------------------------------------------------------------------


def slow_job(tmp_path: Path, groups: int) -> Path:
    # one group at a time: a chunk takes at least its groups' sleeps
    return write_job(tmp_path, groups=groups, group_size=GROUP_SIZE, settings="rewards: {concurrency: 1}\n")


def chunk_sizes(
    config: Path, out: Path, overrides: list[str], monkeypatch: pytest.MonkeyPatch, sleep: float
) -> list[int]:
    """The rollouts of each chunk as the journal holds it when the chunk is done."""
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("REWARDKIT_TEST_SLEEP", str(sleep))
    sizes: list[int] = []

    def seen(number: int) -> None:
        run = json.loads(manifest_path(out).read_text())["run"]
        sizes.append(Journal.scan(journal_path(out), run).chunks[number].record["rollouts"])

    code = run_score(str(config), overrides, str(out), on_chunk=seen, stdout=io.StringIO())
    assert code == 0
    return sizes


def test_chunk_rollouts_is_honoured_from_the_command_line(tmp_path: Path):
    config = slow_job(tmp_path, groups=10)
    done = rewardkit("score", str(config), "score.chunk_rollouts=8", "--out", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(manifest_path(tmp_path / "out.jsonl").read_text())
    assert manifest["chunks"] == 5, "40 rollouts in chunks of 8"
    assert manifest["chunking"] == {"chunk_rollouts": 8, "chunk_seconds": 30.0}


def test_each_journaled_chunk_has_the_configured_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config = slow_job(tmp_path, groups=10)
    sizes = chunk_sizes(
        config,
        tmp_path / "out.jsonl",
        ["score.chunk_rollouts=12", "score.chunk_seconds=null"],
        monkeypatch,
        0,
    )
    assert sizes == [12, 12, 12, 4], "whole groups: each chunk closes at 12 rollouts or more"


def test_a_slow_provider_gets_chunks_of_about_chunk_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # 0.05 s a group of 4 (one at a time): a first chunk of 64 rollouts takes at least 0.8 s, so
    # 0.2 s of this provider is at most 16 rollouts; the chunks after the first shrink to that.
    config = slow_job(tmp_path, groups=40)
    overrides = ["score.chunk_rollouts=64", "score.chunk_seconds=0.2"]
    sizes = chunk_sizes(config, tmp_path / "out.jsonl", overrides, monkeypatch, 0.05)
    assert sizes[0] == 64 and sum(sizes) == 160
    assert all(GROUP_SIZE <= size <= 16 for size in sizes[1:]), sizes


def test_chunks_start_small_and_grow_by_time_up_to_chunk_rollouts():
    from rewardkit.job.score_job import ChunkSizer

    sizer = ChunkSizer(most=4096, seconds=30.0)
    assert sizer.target == 64  # nothing is known of the provider yet: a crash loses little
    sizer.scored(64, 0.01)  # fast: grows, by at most 8 times a step
    assert sizer.target == 512
    sizer.scored(512, 0.05)
    assert sizer.target == 4096
    sizer.scored(4096, 60.0)  # 2 s of this provider is 68 rollouts/s: 30 s is 2,048
    assert sizer.target == 2048
    sizer.scored(2048, 100_000.0)  # very slow: one rollout (a chunk is at least one whole group)
    assert sizer.target == 1
    fixed = ChunkSizer(most=100, seconds=None)
    fixed.scored(100, 1000.0)
    assert fixed.target == 100


@pytest.mark.parametrize(
    "override, problem",
    [
        ("score.chunk_rollouts=0", "score.chunk_rollouts"),
        ("score.chunk_seconds=0", "score.chunk_seconds"),
        ("score.chunk_size=8", "keys under score: chunk_rollouts, chunk_seconds"),
    ],
)
def test_a_wrong_chunk_setting_is_named(tmp_path: Path, override: str, problem: str):
    config = slow_job(tmp_path, groups=2)
    done = rewardkit("score", str(config), override, "--out", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and problem in done.stderr, done.stderr


def test_a_resume_follows_the_journaled_chunks_under_other_chunk_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Chunk boundaries may depend on time, so a resume takes the journaled chunks as they are
    (none is scored again) and sizes only the rest by the settings it is given."""
    config = slow_job(tmp_path, groups=10)
    reference = tmp_path / "reference.jsonl"
    assert run_score(str(config), [], str(reference), stdout=io.StringIO()) == 0
    out = tmp_path / "out.jsonl"
    script = (
        "import os, signal, sys\n"
        "from rewardkit.job.score_job import run_score\n"
        "def stop(number):\n"
        "    if number == 1:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "run_score(sys.argv[1], ['score.chunk_rollouts=8'], sys.argv[2], on_chunk=stop)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    killed = subprocess.run([sys.executable, "-c", script, str(config), str(out)], env=env, timeout=300)
    assert killed.returncode < 0 and not out.exists()
    calls = tmp_path / "calls.txt"
    done = rewardkit(
        "score", str(config), "score.chunk_rollouts=12", "--out", str(out), "--resume", cwd=tmp_path,
        env={"REWARDKIT_TEST_CALLS": str(calls)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(calls.read_text().split()) == [f"g{g:03d}" for g in range(4, 10)], "chunks 0 and 1 kept"
    assert out.read_bytes() == reference.read_bytes()
    assert "2 of 4 chunks were journaled already" in done.stdout


def test_a_resume_keeps_every_answer_of_the_chunk_a_kill_cut_short(tmp_path: Path):
    """The answers a slow provider gave inside the stopped chunk are used up by the first chunk
    scored on resume, whatever time sizing would start with (it starts small)."""
    config = slow_job(tmp_path, groups=80)
    out, calls = tmp_path / "out.jsonl", tmp_path / "calls.txt"
    first = ["score.chunk_rollouts=320", "score.chunk_seconds=null"]  # one chunk: all 80 groups
    env = {**os.environ, "REWARDKIT_TEST_SLEEP": "0.05"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    job = subprocess.Popen([str(REWARDKIT), "score", str(config), *first, "--out", str(out)], cwd=tmp_path,
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    answers = answers_path(out)
    try:
        while job.poll() is None and _answered(answers) < 24:  # well past a first chunk of 64 rollouts
            time.sleep(0.02)
        job.kill()
    finally:
        job.wait(timeout=60)
    kept = _answered(answers)
    assert 24 <= kept < 80, "killed inside the chunk, after 24 groups were answered"
    done = rewardkit(
        "score",
        str(config),
        "--out",
        str(out),
        "--resume",
        cwd=tmp_path,
        env={"REWARDKIT_TEST_CALLS": str(calls)},
    )
    assert done.returncode == 0, done.stderr
    asked = calls.read_text().split()
    assert len(asked) == 80 - kept and len(set(asked)) == len(asked), "no kept answer is asked for again"
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 320


def _answered(answers: Path) -> int:
    """Groups whose answers the answer journal holds (its header line aside)."""
    try:
        return max(0, answers.read_bytes().count(b"\n") - 1)
    except FileNotFoundError:
        return 0


# -- onError: none with every candidate errored ------------------------------------------------------


def flaky_job(tmp_path: Path, completions: list[str], on_error: str = "none") -> Path:
    rows = [{"group_id": f"g{n // 2}", "completion": text} for n, text in enumerate(completions)]
    (tmp_path / "rollouts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = tmp_path / "config.yaml"
    config.write_text(
        "rl:\n  group_size: 2\n  data: {rollouts_path: rollouts.jsonl}\n"
        "  reward: {catalog: 'reasons_fixtures:catalog', "
        f"spec: {{onError: {on_error}, components: [{{provider: flaky}}]}}}}\n"
    )
    return config


def test_every_candidate_errored_under_on_error_none_warns_and_exits_3(tmp_path: Path):
    config = flaky_job(tmp_path, ["boom"] * 6)
    done = rewardkit("score", str(config), "--out", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    warning = [line for line in done.stderr.splitlines() if "every" in line]
    assert len(warning) == 1 and "6 candidates" in warning[0] and "--allow-all-errored" in warning[0]
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and {row["final"] for row in rows} == {None}, "the results are still written"
    assert "errors: 6" in done.stdout

    allowed = rewardkit("score", str(config), "--out", "out.jsonl", "--overwrite", "--allow-all-errored",
                        cwd=tmp_path)  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    warning = [line for line in allowed.stderr.splitlines() if "every" in line]
    assert len(warning) == 1 and "6 candidates" in warning[0] and "--allow-all-errored" not in warning[0]


@pytest.mark.parametrize(
    "completions, on_error",
    [(["boom", "boom", "boom", "fine"], "none"), (["boom"] * 4, "zero")],
    ids=["one-candidate-scored", "on-error-zero"],
)
def test_a_run_with_a_reward_somewhere_or_errors_scored_as_zero_exits_0(
    tmp_path: Path, completions: list[str], on_error: str
):
    config = flaky_job(tmp_path, completions, on_error)
    done = rewardkit("score", str(config), "--out", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "--allow-all-errored" not in done.stderr
