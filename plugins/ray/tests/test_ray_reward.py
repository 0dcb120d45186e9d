"""RayReward on a real local Ray cluster: equal to in-process scoring, identity, actor loss."""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import ray
from ray_catalog import REVISION_ENV, catalog

import rewardkit
from rewardkit import Reward
from rewardkit.config import load_config
from rewardkit.contracts.errors import IdentityMismatchError
from rewardkit.contracts.identity import provider_identity
from rewardkit.scoring.backpressure import RequestTooLarge
from rewardkit.scoring.composition import CompositionError
from rewardkit_ray.backend import ActorsLostError, RayReward
from rewardkit_testing.composition_vectors import check_vector, load_reward_vectors

REPO = Path(__file__).resolve().parents[3]
CATALOG = "ray_catalog:catalog"
SCRIPTED_SPEC = {
    "components": [
        {"name": "gate", "provider": "scripted-a", "gate": True, "threshold": 0.0, "weight": 0.5},
        {"name": "main", "provider": "scripted-b", "weight": 2.0},
        {"name": "extra", "provider": "scripted-c", "weight": -0.25},
    ],
    "floor": -1.0,
    "onError": "zero",
    "clip": [-2.0, 2.5],
}


def shared_data() -> Path:
    override = os.environ.get("REWARDKIT_SHARED_DATA")
    return Path(override) if override else REPO / "testdata" / "shared"


def config(reward: dict[str, Any], **rewards: Any) -> Any:
    return load_config(
        {
            "rl": {"group_size": 4, "reward": {"catalog": CATALOG, **reward}},
            "rewards": {"backend": "ray", "ray": {"num_actors": 2}, **rewards},
        }
    )


def scripted_groups(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """Groups whose candidates script every status for every component (gates, skips, errors)."""
    rng = random.Random(seed)

    def outcome() -> dict[str, Any]:
        roll = rng.random()
        if roll < 0.15:
            return {"status": "skipped", "reason": "n/a"}
        if roll < 0.25:
            return {"status": "error", "reason": "scripted outage"}
        return {"status": "scored", "value": round(rng.uniform(-1, 1), 3)}

    return [
        {
            "group_id": f"g{g}",
            "rollouts": [
                {
                    "trajectory_id": f"g{g}-t{t}",
                    "completion": json.dumps(
                        {name: outcome() for name in ("scripted-a", "scripted-b", "scripted-c")}
                    ),
                }
                for t in range(4)
            ],
        }
        for g in range(count)
    ]


def gsm8k_groups(count: int) -> list[dict[str, Any]]:
    """GSM8K problems with the four example models' completions as one group each."""
    path = shared_data() / "grade-school-math/grade_school_math/data/example_model_solutions.jsonl"
    if not path.is_file():
        pytest.fail(f"GSM8K example solutions not found at {path}; set REWARDKIT_SHARED_DATA")
    groups = []
    with path.open() as handle:
        for number, line in zip(range(count), handle):
            row = json.loads(line)
            models = sorted(
                key for key, value in row.items() if isinstance(value, dict) and "solution" in value
            )
            groups.append(
                {
                    "group_id": f"gsm8k-{number}",
                    "rollouts": [
                        {
                            "trajectory_id": f"gsm8k-{number}-{model}",
                            "completion": row[model]["solution"],
                            "reference": row["ground_truth"],
                        }
                        for model in models
                    ],
                }
            )
    return groups


def test_cluster_is_local_and_on_loopback(ray_cluster: dict) -> None:
    nodes = [node for node in ray_cluster["nodes"] if node["Alive"]]
    assert [node["NodeManagerAddress"] for node in nodes] == ["127.0.0.1"]
    assert ray.cluster_resources()["CPU"] == 2


def test_load_selects_ray_backend_and_matches_in_process_on_gsm8k(ray_cluster: dict) -> None:
    cfg = load_config(
        {
            "rl": {"group_size": 4, "reward": {"provider": "gsm8k"}},
            "rewards": {"backend": "ray", "ray": {"num_actors": 2}},
        }
    )
    groups = gsm8k_groups(80)
    with rewardkit.load(cfg) as remote:
        assert isinstance(remote, RayReward)
        got = remote.score(groups)
        spread = remote.stats["groups_per_actor"]
    expected = Reward(cfg).score(groups)
    assert got == expected
    assert got.providers == expected.providers
    # Every group was scored once, and both actors took a share.
    assert sum(spread) == len(groups) and min(spread) > 0
    finals = [candidate.final for _, candidate in got.candidates()]
    assert 0 < sum(finals) < len(finals)  # real verdicts, both ways


def test_scripted_spec_equals_in_process_including_advantages_and_metrics(ray_cluster: dict) -> None:
    cfg = config({"spec": SCRIPTED_SPEC})
    groups = scripted_groups(24)
    with RayReward(cfg) as remote:
        got = remote.score(groups)
        assert remote.spec == Reward(cfg).spec
        assert remote.needs == ()
    expected = Reward(cfg).score(groups)
    assert got == expected
    statuses = {entry["status"] for _, c in got.candidates() for entry in c.breakdown.values()}
    assert statuses == {"scored", "skipped", "error"}
    assert any(c.gated for _, c in got.candidates())
    assert "train/reward_provider/scripted-a/scripted" in got.metrics


def test_ascore_equals_score(ray_cluster: dict) -> None:
    cfg = config({"spec": SCRIPTED_SPEC})
    groups = scripted_groups(6, seed=3)
    with RayReward(cfg) as remote:
        assert asyncio.run(remote.ascore(groups)) == remote.score(groups)


def test_shared_vectors_compose_on_an_actor(ray_cluster: dict) -> None:
    cases = load_reward_vectors(Path(__file__).resolve().parents[3] / "testdata" / "reward_vectors.json")
    assert len(cases) >= 50
    with RayReward(config({"provider": "revisioned"})) as remote:
        pids = set(ray.get([actor.pid.remote() for actor in remote.actors]))
        assert len(pids) == 2 and os.getpid() not in pids
        for case in cases:
            check_vector(case, remote.compose_on_actor)


def test_error_under_raise_is_the_in_process_error(ray_cluster: dict) -> None:
    spec = dict(SCRIPTED_SPEC, onError="raise")
    cfg = config({"spec": spec})
    groups = scripted_groups(8, seed=11)
    with pytest.raises(CompositionError) as local:
        Reward(cfg).score(groups)
    with RayReward(cfg) as remote, pytest.raises(CompositionError) as distributed:
        remote.score(groups)
    assert type(distributed.value) is type(local.value)
    # Groups may fail in another order on actors; each message names its group and candidate.
    assert "[group 'g" in str(distributed.value) and "candidate 'g" in str(distributed.value)


def test_an_actor_with_another_revision_is_refused_with_both_hashes(ray_cluster: dict) -> None:
    cfg = config({"provider": "revisioned"})
    driver = Reward(cfg).providers[0]
    spec_v2 = next(spec for spec in catalog() if spec.name == "revisioned")
    actor_identity = provider_identity(replace(spec_v2, revision="2"))
    assert actor_identity != driver.identity

    def stale_second_actor(index: int) -> dict[str, Any]:
        return {"runtime_env": {"env_vars": {REVISION_ENV: "2"}}} if index == 1 else {}

    with pytest.raises(IdentityMismatchError) as refused:
        RayReward(cfg, actor_options=stale_second_actor)
    message = str(refused.value)
    assert driver.identity in message and actor_identity in message
    assert "revision '2'" in message and "revision '1'" in message
    assert "1 of 2 reward actors" in message
    # The refused actors were stopped: both CPUs are free again for the next reward.
    deadline = time.monotonic() + 10
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2


def _kill_after(remote: RayReward, scored: int, victims: list[int]) -> threading.Thread:
    def kill() -> None:
        deadline = time.monotonic() + 60
        while remote.stats["groups_scored"] < scored and time.monotonic() < deadline:
            time.sleep(0.02)
        for index in victims:
            ray.kill(remote.actors[index], no_restart=True)

    thread = threading.Thread(target=kill)
    thread.start()
    return thread


def test_actor_killed_mid_batch_has_its_groups_rescored(ray_cluster: dict) -> None:
    spec = {
        "components": [
            {"provider": "scripted-a", "params": {"sleep_s": 0.05}},
            {"provider": "scripted-b", "weight": 0.5},
        ],
        "onError": "zero",
    }
    cfg = config({"spec": spec})
    groups = scripted_groups(20, seed=5)
    with RayReward(cfg) as remote:
        killer = _kill_after(remote, 3, [0])
        got = remote.score(groups)
        killer.join()
        stats = remote.stats
        assert stats["actors_lost"] == 1 and stats["actors_alive"] == 1
        assert stats["groups_rescored"] >= 1
        assert stats["groups_scored"] == len(groups)
        # The next batch runs on the survivor.
        assert remote.score(groups[:3]) == Reward(cfg).score(groups[:3])
    assert got == Reward(cfg).score(groups)


def test_all_actors_killed_fails_clearly_and_publishes_nothing(ray_cluster: dict) -> None:
    spec = {"components": [{"provider": "scripted-a", "params": {"sleep_s": 0.05}}], "onError": "zero"}
    cfg = config({"spec": spec})
    groups = scripted_groups(20, seed=9)
    for group in groups:
        group["rollouts"][0]["reward"] = "previous"
    with RayReward(cfg) as remote:
        killer = _kill_after(remote, 2, [0, 1])
        with pytest.raises(ActorsLostError, match="all 2 reward actors died") as lost:
            remote.process(groups)
        killer.join()
        assert "nothing was published" in str(lost.value)
        with pytest.raises(ActorsLostError):
            remote.score(groups[:1])
    for group in groups:
        assert group["rollouts"][0]["reward"] == "previous"
        assert all("advantage" not in rollout for rollout in group["rollouts"])
        assert all("reward" not in rollout for rollout in group["rollouts"][1:])


def test_process_writes_like_in_process(ray_cluster: dict) -> None:
    cfg = config({"spec": SCRIPTED_SPEC})
    remote_groups, local_groups = scripted_groups(6, seed=2), scripted_groups(6, seed=2)
    with RayReward(cfg) as remote:
        remote.process(remote_groups)
    Reward(cfg).process(local_groups)
    assert remote_groups == local_groups


def test_back_pressure_limits_rollouts_in_flight(ray_cluster: dict) -> None:
    cfg = config({"spec": SCRIPTED_SPEC}, max_inflight=4)
    groups = scripted_groups(6, seed=4)
    with RayReward(cfg) as remote:
        assert remote.score(groups) == Reward(cfg).score(groups)
        big = [{"group_id": "big", "rollouts": groups[0]["rollouts"] * 2}]
        with pytest.raises(RequestTooLarge, match="max_inflight=4"):
            remote.score(big)


def test_closed_reward_refuses_to_score_and_validation_is_in_process(ray_cluster: dict) -> None:
    remote = RayReward(config({"provider": "revisioned"}))
    validation = remote.validation()
    assert type(validation) is Reward and validation.worker.namespace == "val"
    groups = scripted_groups(2)
    assert validation.score(groups) == Reward(remote.config, namespace="val").score(groups)
    remote.close()
    remote.close()  # idempotent
    with pytest.raises(rewardkit.RewardkitError, match="closed"):
        remote.score(groups)


def test_a_request_timeout_raises_without_waiting_for_the_actors(ray_cluster: dict) -> None:
    from rewardkit.contracts.errors import RequestTimeout

    spec = {"components": [{"provider": "scripted-a", "params": {"sleep_s": 1.0}}], "onError": "zero"}
    groups = scripted_groups(8, seed=4)  # 8 groups x 4 candidates x 1 s on 2 actors: about 16 s
    with RayReward(config({"spec": spec})) as remote:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            remote.score(groups, timeout_s=0.5)
        assert time.monotonic() - started < 2.0


def test_progress_counts_every_rollout(ray_cluster: dict) -> None:
    done: list[int] = []
    spec = {"components": [{"provider": "scripted-a"}], "onError": "zero"}
    groups = scripted_groups(8, seed=4)
    with RayReward(config({"spec": spec})) as remote:
        assert remote.score(groups, progress=done.append) == Reward(config({"spec": spec})).score(groups)
    assert sum(done) == 32 and len(done) == 8
