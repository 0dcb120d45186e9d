"""``rewardkit_media.ranks.score_on_ranks`` on 2 real processes (gloo on 127.0.0.1), groups split across them.

One launch starts two rank processes (``rank_process.py``) against one fault-injecting reference
service; each runs every step of ``rank_steps.STEPS`` and writes what it got. Run it inside a
private network namespace (tox env ``dancegrpo`` does: ``unshare -n``, loopback only). The
launch is bounded: a rank that does not exit fails the test (nothing asserts on time).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from rank_steps import FAULT_MARK, GROUP_SIZE, WORLD, whole_batch
from video_helpers import TOKEN, TOKEN_ENV, IdentityDecoder

import rewardkit
from rewardkit_dancegrpo import DANCEGRPO_REWARD_TYPES, PROVIDER_NAME
from rewardkit_media.testing import Faults, ReferenceMediaService

HERE = Path(__file__).resolve().parent
# Bounds a broken launch (a rank left waiting in a collective would otherwise hang the suite).
JOIN_LIMIT_S = 120
SCORER_REVISION = "videoalign-ranks-2026-12"
TIMING = f"train/reward_provider/{PROVIDER_NAME}/service_seconds"  # wall time: differs run to run


def malformed_for_marked_prompts(service: ReferenceMediaService):
    def answer(task_id: str, reward_type: str, normal: dict) -> dict:
        prompts = service.tasks[task_id].metadata.get("prompts") or [""]
        if FAULT_MARK in prompts[0]:  # two values where the protocol allows one: terminal
            return {
                **normal,
                "scores": {key: [value[0], value[0]] for key, value in normal["scores"].items()},
            }
        return normal

    return answer


@pytest.fixture(scope="module")
def service():
    with ReferenceMediaService(DANCEGRPO_REWARD_TYPES) as server:
        server.faults = Faults(pending_polls=1, score_answer=malformed_for_marked_prompts(server))
        yield server


@pytest.fixture(scope="module")
def params(service, tmp_path_factory):
    spool = tmp_path_factory.mktemp("spool")
    yield {
        "revision": SCORER_REVISION,
        "enqueue_url": service.enqueue_url,
        "pull_url": service.pull_url,
        "token_env": TOKEN_ENV,
        "fps": 16.0,
        "deadline_s": 30.0,
        "poll_interval_s": 0.01,
        "max_poll_interval_s": 0.05,
        "spool_dir": str(spool),
        "active_ranks": WORLD,
    }
    assert os.listdir(spool) == [], "a spool file was left behind"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def launched(params, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ranks")
    # a rank scores pieces of groups: its reward checks no group size; score_on_ranks checks the whole
    config = json.dumps({"rl": {"reward": {"provider": PROVIDER_NAME, "params": params}}})
    env = {
        **os.environ,
        TOKEN_ENV: TOKEN,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        "GLOO_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
    }
    port = str(free_port())
    logs = [open(out / f"rank{rank}.log", "w") for rank in range(WORLD)]  # noqa: SIM115
    ranks = [
        subprocess.Popen(
            [sys.executable, str(HERE / "rank_process.py"), str(rank), port, str(out), config],
            env=env,
            stdout=logs[rank],
            stderr=subprocess.STDOUT,
        )
        for rank in range(WORLD)
    ]
    try:
        codes = [process.wait(timeout=JOIN_LIMIT_S) for process in ranks]
    except subprocess.TimeoutExpired:
        codes = None
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
                process.wait()
        for log in logs:
            log.close()
    output = "\n".join((out / f"rank{rank}.log").read_text()[-4000:] for rank in range(WORLD))
    if codes is None:
        pytest.fail(f"a rank did not exit within {JOIN_LIMIT_S} s:\n{output}", pytrace=False)
    assert codes == [0] * WORLD, output
    return out


def outcomes(out: Path, step: str) -> list[dict]:
    return [json.loads((out / f"{step}-rank{rank}.json").read_text()) for rank in range(WORLD)]


def one_process(params: dict, step: str):
    config = {"rl": {"group_size": GROUP_SIZE, "reward": {"provider": PROVIDER_NAME, "params": params}}}
    with rewardkit.load(config, runtime={"decoder": IdentityDecoder()}) as reward:
        return reward.score(whole_batch(step))


def test_every_rank_reports_the_whole_batch_as_one_process_scores_it(launched, params):
    whole = one_process(params, "scores")
    by_trajectory = {candidate.trajectory_id: candidate for _, candidate in whole.candidates()}
    for step in ("scores", "scores-again"):  # after two failed steps the ranks are still in step
        first, second = outcomes(launched, step)
        assert first["metrics"] == second["metrics"]  # exactly: both finished the same parts
        metrics = first["metrics"]
        assert metrics.keys() == whole.metrics.keys()
        for name, value in whole.metrics.items():
            if name != TIMING:
                assert metrics[name] == pytest.approx(value, rel=1e-12, abs=0), name
        assert metrics["train/advantage/abs_mean"] > 0  # over whole groups: a piece of one has none
        assert metrics[f"train/reward_provider/{PROVIDER_NAME}/sample_count"] == 12
        # each rank gets its own trajectories back, in its order, with the whole group's advantage
        held = [
            [(group["group_id"], group["trajectories"]) for group in outcome["groups"]]
            for outcome in (first, second)
        ]
        assert held == [
            [("a", ["a-0", "a-1"]), ("b", ["b-0"])],
            [("a", ["a-2", "a-3"]), ("b", ["b-1", "b-2", "b-3"]), ("c", ["c-0", "c-1", "c-2", "c-3"])],
        ]
        for outcome in (first, second):
            for group in outcome["groups"]:
                for trajectory, final, advantage in zip(
                    group["trajectories"], group["finals"], group["advantages"]
                ):
                    assert final == by_trajectory[trajectory].final
                    assert advantage == pytest.approx(
                        by_trajectory[trajectory].advantage, rel=1e-12, abs=1e-15
                    )


def test_a_decoder_failure_on_rank_1_stops_both_ranks_with_one_error(launched):
    first, second = outcomes(launched, "decoder-fails-on-rank-1")
    assert "error" in first and "error" in second
    cause_here, cause_there = first["error"].pop("cause"), second["error"].pop("cause")
    assert first["error"] == second["error"]
    error = first["error"]
    assert error["type"] == "RankScoringError" and error["rank"] == 1
    assert error["message"].startswith("rank 1 of 2 failed while scoring its groups")
    assert error["kind"] == "RewardContractError"
    assert "[group 'a', candidate 'a-2'] the decoded video is not finite" in error["message"]
    assert (cause_here, cause_there) == (None, error["kind"])  # rank 1 chains its own error


def test_a_service_fault_on_rank_0_stops_both_ranks_with_one_error(launched):
    first, second = outcomes(launched, "service-fails-on-rank-0")
    assert "error" in first and "error" in second
    cause_here, cause_there = first["error"].pop("cause"), second["error"].pop("cause")
    assert first["error"] == second["error"]
    error = first["error"]
    assert error["rank"] == 0 and error["message"].startswith("rank 0 of 2 failed while scoring its groups")
    assert (
        "ServiceProtocolError" in error["message"] and "not a list of exactly one value" in error["message"]
    )
    assert (cause_here, cause_there) == (error["kind"], None)


def test_the_run_record_names_the_deployed_scorer_revision(launched):
    for outcome in outcomes(launched, "scores"):
        assert outcome["scorer_revisions"] == {PROVIDER_NAME: SCORER_REVISION}
        (record,) = outcome["run_record"]
        assert record["provider"] == PROVIDER_NAME
        assert record["revision"] == "1"  # the adapter's own code
        assert record["scorer_revision"] == SCORER_REVISION  # what the operator deployed
