"""TRL's real GRPOTrainer on 2 processes (torchrun, gloo on loopback), each rank holding half a group.

``grpo_ranks.py`` runs under ``torchrun --nproc_per_node 2`` inside a private network namespace
(``unshare -n``: loopback is the only interface, so no traffic can leave the machine). With
``per_device_train_batch_size=2`` and ``num_generations=4`` every group of 4 completions is split
2 + 2 across the ranks; the test checks that it was, and that the rewards TRL logged for the
whole batch are the scores rewardkit gives the same completions as whole groups, for a pointwise
reward and for a group-native one (which scores a candidate by its place in the whole group). A
provider that fails on rank 1 only must fail both ranks with the same error.

One launch trains the three runs in turn (the imports dominate: about 10 s per launch warm).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import rewardkit
from rewardkit_bindings.loading import forget_rewards
from rewardkit_bindings.trl import binding

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
RUNS = ("pointwise", "group-native", "uneven", "fails-on-rank-1")
GROUP = 4
# Only bounds a broken launch (a deadlock would otherwise hang the suite); nothing asserts on time.
LAUNCH_LIMIT_S = 900


def same(logged: float, ours: float | None) -> bool:
    if ours is None:
        return math.isnan(logged)
    return math.isclose(logged, ours, rel_tol=1e-5, abs_tol=1e-6)  # TRL keeps rewards in float32


# Each rank runs under ``sh`` so its own exit status is kept (torchrun reports only the first failure).
RANK_WRAPPER = '"$0" "$@"; status=$?; echo "$status" > "$RANK_EXIT_DIR/exit-rank$RANK"; exit "$status"'


@dataclass(frozen=True)
class Launch:
    out: Path
    returncode: int
    stdout: str
    stderr: str
    rank_exits: dict[int, str]  # rank -> the exit status its wrapper recorded ("" when none)
    rank_stderr: dict[int, str]  # rank -> what that rank alone wrote to stderr


@pytest.fixture(scope="module")
def launch(tmp_path_factory) -> Launch:
    out = tmp_path_factory.mktemp("ranks")
    logs = tmp_path_factory.mktemp("rank-logs")
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("the multi-process TRL test needs unshare and ip (util-linux, iproute2)", pytrace=False)
    torchrun = " ".join(
        [
            f"{sys.executable} -m torch.distributed.run --nnodes 1 --nproc_per_node 2",
            f"--master_addr 127.0.0.1 --master_port 29533 --log-dir {logs} --tee 2 --no-python",
            f"sh -c {shlex.quote(RANK_WRAPPER)} {sys.executable} {HERE / 'grpo_ranks.py'}",
            f"{out} {' '.join(RUNS)}",
        ]
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        "MASTER_ADDR": "127.0.0.1",
        "GLOO_SOCKET_IFNAME": "lo",
        "ACCELERATE_USE_CPU": "true",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "PYTHONFAULTHANDLER": "1",  # an abort prints every thread's stack into the rank's stderr
        "RANK_EXIT_DIR": str(out),
    }
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {torchrun}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=LAUNCH_LIMIT_S,
    )
    exits = {rank: _read(out / f"exit-rank{rank}").strip() for rank in (0, 1)}
    # torchrun writes <log-dir>/<run id>/attempt_0/<local rank>/stderr.log for each rank.
    stderr = {
        rank: "".join(_read(path) for path in logs.glob(f"*/attempt_*/{rank}/stderr.log")) for rank in (0, 1)
    }
    return Launch(out, done.returncode, done.stdout, done.stderr, exits, stderr)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


@pytest.fixture(scope="module")
def launched(launch: Launch) -> Path:
    assert launch.returncode == 0, launch.stdout[-3000:] + launch.stderr[-6000:]
    return launch.out


def test_every_rank_exits_cleanly(launch):
    # A rank that aborts at interpreter exit (a gloo thread freeing a collective's tensors while
    # CPython finalises) has already written its results: only its exit status and stderr show it.
    for rank in (0, 1):
        stderr = launch.rank_stderr[rank]
        assert stderr, f"rank {rank} left no stderr log; torchrun's log layout changed?"
        assert launch.rank_exits[rank] == "0", (rank, launch.rank_exits, stderr[-6000:])
        assert "terminate called" not in stderr, stderr[-6000:]
        assert "Fatal Python error" not in stderr, stderr[-6000:]
    assert launch.returncode == 0, launch.stderr[-6000:]


def records(out: Path, run: str) -> list[dict]:
    return [json.loads((out / f"{run}-rank{rank}.json").read_text()) for rank in (0, 1)]


def config(run: str) -> dict:
    from grpo_ranks import config as run_config

    return run_config(run)


def one_group(number: int, step: dict) -> dict:
    """A logged step's completions as the one group rewardkit scores in one process."""
    answer_of = {"what is two plus three": "five", "what is four minus one": "three",
                 "what is two times three": "six", "what is one plus one": "two"}  # fmt: skip
    prompts, completions = step["prompts"], step["completions"]
    assert len(completions) == GROUP and len(set(prompts)) == 1  # one whole group per step
    return {
        "group_id": f"step{number}",
        "rollouts": [
            {"trajectory_id": f"step{number}/{i}", "completion": text, "prompt": prompts[0],
             "reference": answer_of[prompts[0]]}
            for i, text in enumerate(completions)
        ],
    }  # fmt: skip


@pytest.mark.parametrize("run", ["pointwise", "group-native", "uneven"])
def test_logged_rewards_are_rewardkit_scores_of_whole_groups(launched, run):
    ranks = records(launched, run)
    for record in ranks:
        assert "error" not in record, record.get("error")
        assert record["world"] == 2 and record["global_step"] == 2
    # Every group spanned both ranks: on each call, each rank held 2 completions of the same prompt.
    for rank0_call, rank1_call in zip(ranks[0]["calls"], ranks[1]["calls"], strict=True):
        assert len(rank0_call["prompts"]) == len(rank1_call["prompts"]) == 2
        assert len(set(rank0_call["prompts"] + rank1_call["prompts"])) == 1, (rank0_call, rank1_call)
    assert len(ranks[0]["calls"]) == 2 * (1 + len(config(run)["rl.reward.spec"]["components"]))

    forget_rewards()
    sys.path.insert(0, str(HERE))  # trl_catalog, named in the config
    reward = rewardkit.load(config(run))
    trainer_reward = binding(config(run)).reward  # TRL's advantage eps (1e-4) filled in
    assert trainer_reward.config.rl.advantage_eps == 1e-4
    steps = ranks[0]["steps"]
    assert len(steps) == 2
    for number, step in enumerate(steps):
        group = one_group(number, step)
        ours = [candidate for _, candidate in reward.score([group]).candidates()]
        logged = step["rewards"]["rewardkit"]
        assert all(same(got, c.final) for got, c in zip(logged, ours, strict=True)), (logged, ours)
        # What each rank's reward function returned is its own slice of those whole-group scores.
        first = number * (1 + len(config(run)["rl.reward.spec"]["components"]))  # the total comes first
        totals = [ranks[rank]["calls"][first] for rank in (0, 1)]
        assert [call["name"] for call in totals] == ["rewardkit", "rewardkit"]
        assert totals[0]["rewards"] + totals[1]["rewards"] == pytest.approx(logged, rel=1e-5)
        if run == "group-native":
            # Places 0..3 in a group of 4: a rank scoring its half alone would give 20, 21 on both.
            places = step["rewards"]["position"]
            assert places == [40.0, 41.0, 42.0, 43.0]
        assert same(step["logs"]["reward"], sum(c.final for c in ours) / GROUP)
        # Advantages as TRL computed them over the gathered group: the binding's reward gives the same.
        advantages = [c.advantage for _, c in trainer_reward.score([group]).candidates()]
        assert step["advantages"] == pytest.approx(advantages, rel=1e-4, abs=1e-5), (step, advantages)


def test_uneven_skips_and_diagnostic_weights_log_the_one_process_metrics(launched):
    # `uneven` skips place 1 of each group: rank 0 (places 0, 1) scores it once, rank 1 (2, 3) twice,
    # and its diagnostic is weighted by place. The report every rank hands TRL's log_metric must be
    # the report of the same completions scored in one process.
    ranks = records(launched, "uneven")
    for record in ranks:
        assert "error" not in record, record.get("error")
    forget_rewards()
    sys.path.insert(0, str(HERE))
    reward = binding(config("uneven")).reward  # TRL's advantage eps, as the binding scores
    steps = ranks[0]["steps"]
    assert len(steps) == 2
    per_call = 1 + len(config("uneven")["rl.reward.spec"]["components"])
    for number, step in enumerate(steps):
        want = reward.score([one_group(number, step)]).metrics
        assert want["train/reward_component/uneven/skipped_count"] == 1
        # TRL logs each reward function's mean itself (rewards/<function>/mean): not repeated by the binding.
        components = ("uneven", "word-overlap")
        trl_own = {"train/reward/mean", *(f"train/reward_component/{c}/mean" for c in components)}
        assert trl_own <= want.keys()
        ours = {name: value for name, value in want.items() if name not in trl_own}
        expected = {f"rewardkit/{name.removeprefix('train/')}": value for name, value in ours.items()}
        for rank in (0, 1):
            logged = [
                call["metrics"] for call in ranks[rank]["calls"][number * per_call : (number + 1) * per_call]
            ]
            published = [entries for entries in logged if entries]
            assert len(published) == 1, logged  # one report per batch, from the scoring pass
            got = dict(published[0])
            assert got.keys() == expected.keys()
            for name, value in expected.items():
                assert got[name] == pytest.approx(value, rel=1e-9, abs=1e-12), (rank, name)
        # TRL averages the ranks' (equal) values through a float32 tensor: equal to float32 precision.
        for name, value in expected.items():
            assert step["logs"][name] == pytest.approx(value, rel=1e-6, abs=1e-6), name


def test_a_failure_on_one_rank_fails_both_ranks_the_same_way(launched):
    ranks = records(launched, "fails-on-rank-1")
    errors = [record.get("error") for record in ranks]
    assert all(error is not None for error in errors), errors
    assert errors[0] == errors[1]
    assert errors[0]["type"] == "RankFailure"
    assert "rank 1 of 2 failed while scoring its share" in errors[0]["message"]
    assert "cannot score on rank 1" in errors[0]["message"]
