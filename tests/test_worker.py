"""RewardWorker and Reward: transactions, collisions, group sizes, advantages, metrics, back-pressure."""

from __future__ import annotations

import asyncio
import copy
import math
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit import (
    CompositionError,
    PreflightError,
    ProviderError,
    RewardContractError,
    RewardSpec,
    RewardWorker,
)
from rewardkit.contracts.errors import RewardkitError
from rewardkit.scoring.advantages import group_advantages
from rewardkit.scoring.backpressure import BackpressureTimeout, InflightLimiter, RequestTooLarge
from rewardkit.seam.catalog import resolve_catalog

HERE = Path(__file__).parent
CATALOG = "worker_fixtures:catalog"


@pytest.fixture(autouse=True)
def importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def group(group_id: str, *completions: str) -> tuple[str, list[dict[str, Any]]]:
    return group_id, [
        {"trajectory_id": f"{group_id}/{k}", "completion": text, "reference": "r"}
        for k, text in enumerate(completions)
    ]


def worker(spec: dict[str, Any], group_size: int | None = 2, **kwargs: Any) -> RewardWorker:
    return RewardWorker(RewardSpec.parse(spec), resolve_catalog(CATALOG), group_size=group_size, **kwargs)


ONE = {"components": [{"provider": "keyed", "term": "score"}]}


# -- construction ------------------------------------------------------------------------------


def test_term_defaults_to_the_providers_first_term():
    assert worker({"components": [{"provider": "keyed"}]}).spec.components[0].term == "score"


def test_undeclared_term_fails_in_preflight():
    with pytest.raises(PreflightError, match=r"reads term 'nope'.*declares \['score', 'bonus'\]"):
        worker({"components": [{"provider": "keyed", "term": "nope"}]})


def test_provider_name_collision_fails_at_construction():
    spec = {
        "components": [
            {"name": "a", "provider": "constant", "params": {"value": 1}},
            {"name": "b", "provider": "constant", "params": {"value": 2}},
        ]
    }
    with pytest.raises(PreflightError, match=r"provider-name collision: components 'a' and 'b'"):
        worker(spec)


def test_optimized_term_collision_fails_at_construction():
    spec = {
        "components": [
            {"name": "a", "provider": "keyed", "term": "score"},
            {"name": "b", "provider": "keyed", "term": "score"},
        ]
    }
    with pytest.raises(PreflightError, match=r"optimized-term collision.*'a' and 'b'.*'score'"):
        worker(spec)


def test_two_terms_of_one_provider_share_one_scoring_pass():
    from worker_fixtures import CALLS

    spec = {
        "components": [
            {"name": "a", "provider": "keyed", "term": "score"},
            {"name": "b", "provider": "keyed", "term": "bonus"},
        ]
    }
    before = CALLS["count"]
    batch = worker(spec).evaluate([group("g", "value=1", "value=3")])
    assert CALLS["count"] - before == 2, "one provider call per candidate, not per component"
    assert [c.final for _, c in batch.candidates()] == [1.5, 4.5]


def test_unknown_provider_in_a_spec_names_known_ones():
    with pytest.raises(rewardkit.UnknownNameError, match="unknown provider 'kyed'"):
        worker({"components": [{"provider": "kyed"}]})


# -- scoring, group size, errors ---------------------------------------------------------------


def test_wrong_group_size_is_rejected_naming_the_group():
    with pytest.raises(RewardContractError, match=r"group 'g'.*3 candidates, expected 2"):
        worker(ONE).evaluate([group("g", "value=1", "value=2", "value=3")])


def test_validation_uses_its_own_group_size():
    reward = rewardkit.load(
        {
            "rl": {
                "group_size": 2,
                "reward": {"provider": "keyed", "catalog": CATALOG},
                "validation": {"reward": "keyed-ref", "n_generation": 3},
            }
        }
    )
    validation = reward.validation()
    assert validation.worker.namespace == "val"
    batch = validation.score([group("v", "value=1", "value=2", "value=3")])
    assert "val/reward_provider/keyed-ref/sample_count" in batch.metrics
    with pytest.raises(RewardContractError, match="expected 3"):
        validation.score([group("v", "value=1", "value=2")])


def test_validation_cannot_switch_catalog():
    with pytest.raises(PreflightError, match="same catalog"):
        rewardkit.load(
            {
                "rl": {
                    "reward": {"provider": "keyed", "catalog": CATALOG},
                    "validation": {
                        "reward": {"provider": "constant", "catalog": "catalog_fixtures:team_catalog"}
                    },
                }
            }
        )


@pytest.mark.parametrize(
    ("validation", "needle"),
    [
        ("keyed-rf", "keyed-rf"),  # misspelt
        ({"provider": "constant", "params": {"value": "high"}}, "value"),  # bad params
    ],
)
def test_a_wrong_validation_reward_fails_load_naming_it(validation, needle):
    config = {
        "rl": {"reward": {"provider": "keyed", "catalog": CATALOG}, "validation": {"reward": validation}}
    }
    with pytest.raises(RewardkitError, match=needle):
        rewardkit.load(config)


def test_the_validation_reward_is_built_at_load_and_once():
    config = {
        "rl": {"reward": {"provider": "keyed", "catalog": CATALOG}, "validation": {"reward": "keyed-ref"}}
    }
    with rewardkit.load(config) as reward:
        assert reward.validation() is reward.validation()


def test_duplicate_group_in_a_batch_is_rejected():
    with pytest.raises(rewardkit.RewardkitError, match="appears twice"):
        worker(ONE).evaluate([group("g", "value=1", "value=2"), group("g", "value=1", "value=2")])


def test_error_under_raise_fails_the_batch_with_group_and_candidate():
    with pytest.raises(CompositionError, match=r"\[group 'g', candidate 'g/1'\].*'keyed' \(timeout\)"):
        worker(ONE).evaluate([group("g", "value=1", "error")])


def test_error_under_zero_and_none():
    zero = worker({**ONE, "onError": "zero"}).evaluate([group("g", "value=1", "error")])
    assert [c.final for _, c in zero.candidates()] == [1.0, 0.0]
    none = worker({**ONE, "onError": "none"}).evaluate([group("g", "value=1", "error")])
    finals = [c.final for _, c in none.candidates()]
    assert finals == [1.0, None]
    assert [c.advantage for _, c in none.candidates()] == [0.0, 0.0], "null excluded from baseline, gets 0"
    assert none.metrics["train/reward/null_count"] == 1


def test_a_provider_exception_fails_the_batch_under_raise():
    class Exploding:
        def evaluate(self, request: Any) -> Any:
            raise ConnectionError("judge down")

    spec = rewardkit.RewardProviderSpec("exploding", lambda: Exploding(), (), "1", ("task",))
    catalog = rewardkit.Catalog(_registry_with(spec), None)
    raising = RewardWorker(RewardSpec.single("exploding"), catalog, group_size=None)
    with pytest.raises(ProviderError, match="ConnectionError: judge down"):
        raising.evaluate([group("g", "x")])
    zero = RewardWorker(
        RewardSpec.parse({"components": [{"provider": "exploding"}], "onError": "zero"}),
        catalog,
        group_size=None,
    )
    batch = zero.evaluate([group("g", "x")])
    (only,) = [c for _, c in batch.candidates()]
    assert only.final == 0.0 and only.breakdown["exploding"]["status"] == "error"
    assert "judge down" in only.breakdown["exploding"]["reason"]


def _registry_with(spec: rewardkit.RewardProviderSpec) -> Any:
    from rewardkit.seam.plugins import PluginInfo
    from rewardkit.seam.registry import Registry

    registry: Registry[rewardkit.RewardProviderSpec] = Registry("provider", rewardkit.RewardProviderSpec)
    registry.add(spec.name, spec, PluginInfo("test", "tests", "0", False))
    return registry


def test_skipped_components_add_nothing_and_are_counted():
    batch = worker(ONE).evaluate([group("g", "value=2", "skip")])
    assert [c.final for _, c in batch.candidates()] == [2.0, 0.0]
    assert batch.metrics["train/reward_component/keyed/skipped_count"] == 1


# -- advantages --------------------------------------------------------------------------------


def test_group_scaling_matches_grpo():
    (advantages,) = group_advantages([[1.0, 0.0, 0.0, 1.0]], "group")  # sample std: sqrt(1/3)
    assert advantages == pytest.approx([0.75**0.5, -(0.75**0.5), -(0.75**0.5), 0.75**0.5], abs=1e-5)
    (advantages,) = group_advantages([[1.0, 0.0, 0.0, 1.0]], "group", std="population")
    assert advantages == pytest.approx([1.0, -1.0, -1.0, 1.0], abs=1e-5)


def test_batch_and_none_scaling():
    totals = [[1.0, 3.0], [0.0, 0.0]]
    none = group_advantages(totals, "none")
    assert none == [[-1.0, 1.0], [0.0, 0.0]]
    batch_std = math.sqrt(sum((x - 1.0) ** 2 for x in (1.0, 3.0, 0.0, 0.0)) / 4)
    batch = group_advantages(totals, "batch", std="population")
    assert batch[0] == pytest.approx([-1 / batch_std, 1 / batch_std], rel=1e-5)
    with pytest.raises(ValueError, match="scaling"):
        group_advantages(totals, "rank")  # type: ignore[arg-type]


def test_only_final_reaches_the_advantage():
    spec = {
        "components": [
            {"name": "a", "provider": "keyed", "term": "score"},
            {"name": "b", "provider": "keyed", "term": "bonus", "weight": 0.0},
        ]
    }
    batch = worker(spec).evaluate([group("g", "value=1", "value=3")])
    finals = [[c.final for c in g.candidates] for g in batch.groups]
    assert [[c.advantage for c in g.candidates] for g in batch.groups] == group_advantages(finals, "group")


# -- metrics -----------------------------------------------------------------------------------


def test_metric_names_follow_the_hierarchy():
    batch = worker(ONE).evaluate([group("g", "value=1", "value=3")])
    assert batch.metrics["train/reward_provider/keyed/sample_count"] == 2
    assert batch.metrics["train/reward_provider/keyed/length"] == pytest.approx(7.0)
    assert batch.metrics["train/reward/mean"] == 2.0
    for name in batch.metrics:
        assert name.startswith("train/") and "//" not in name


def test_invalid_namespace_is_refused():
    with pytest.raises(rewardkit.RewardkitError, match="namespace"):
        worker(ONE, namespace="eval")


# -- the transaction ---------------------------------------------------------------------------


def batch_of_trajectories() -> list[tuple[str, list[dict[str, Any]]]]:
    batch = [group("g1", "value=1", "value=2"), group("g2", "value=3", "skip")]
    batch[0][1][0]["reward"] = {"final": 42.0}  # a prior reward-stage value that must survive
    return batch


def test_process_writes_rewards_and_advantages():
    batch = batch_of_trajectories()
    result = worker(ONE).process(batch)
    trajectories = [t for _, ts in batch for t in ts]
    assert [t["reward"]["final"] for t in trajectories] == [1.0, 2.0, 3.0, 0.0]
    assert [t["advantage"] for t in trajectories] == [c.advantage for _, c in result.candidates()]


@pytest.mark.parametrize(
    "stage", ["score", "compose", "write_reward", "annotate", "write_advantage", "report"]
)
def test_a_failure_at_any_stage_leaves_the_batch_exactly_as_before(
    stage: str, monkeypatch: pytest.MonkeyPatch
):
    w = worker(ONE)
    batch = batch_of_trajectories()
    before = copy.deepcopy(batch)
    calls = {"n": 0}

    def fail_on_second(original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            if calls["n"] >= 2:
                raise RuntimeError(f"injected failure in {stage}")
            return original(*args, **kwargs)

        return wrapper

    def fail_after(original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            original(*args, **kwargs)
            raise RuntimeError(f"injected failure in {stage}")

        return wrapper

    targets = {
        "score": ("_score_admitted", fail_on_second),
        "compose": ("_compose_chunk", fail_after),
        "write_reward": ("_write_reward", fail_on_second),
        "annotate": ("_annotate", fail_after),
        "write_advantage": ("_write_advantage", fail_on_second),
        "report": ("_report", fail_after),
    }
    attribute, wrap = targets[stage]
    monkeypatch.setattr(w, attribute, wrap(getattr(w, attribute)))
    with pytest.raises(RuntimeError, match=f"injected failure in {stage}"):
        w.process(batch)
    assert batch == before


def test_a_batch_failing_in_scoring_is_left_untouched_and_others_are_not_written():
    batch = [group("g1", "value=1", "value=2"), group("g2", "value=3", "error")]
    before = copy.deepcopy(batch)
    with pytest.raises(CompositionError):
        worker(ONE).process(batch)
    assert batch == before


# -- Reward: threads, asyncio, back-pressure ---------------------------------------------------


def config(**rewards: Any) -> dict[str, Any]:
    return {"rl": {"group_size": 2, "reward": {"provider": "keyed", "catalog": CATALOG}}, "rewards": rewards}


def many_groups(n: int) -> list[tuple[str, list[dict[str, Any]]]]:
    return [group(f"g{i}", f"value={i}", f"value={i + 1}") for i in range(n)]


def test_score_and_ascore_agree_and_are_ordered():
    reward = rewardkit.load(config(concurrency=4))
    groups = many_groups(40)
    threaded = reward.score(groups)
    asynchronous = asyncio.run(reward.ascore(groups))
    assert [g.group_id for g in threaded.groups] == [f"g{i}" for i in range(40)]
    assert threaded.groups == asynchronous.groups
    reward.close()


def test_limiter_refuses_a_request_larger_than_the_limit():
    with pytest.raises(RequestTooLarge, match=r"exceeds rewards\.max_inflight=4"):
        InflightLimiter(4).acquire(5, None)


def test_limiter_times_out_with_a_clear_error():
    limiter = InflightLimiter(4)
    limiter.acquire(4, None)
    with pytest.raises(BackpressureTimeout, match="deadline passed") as caught:
        limiter.acquire(1, time.monotonic() + 0.05)
    assert caught.value.waited_s >= 0.04
    assert limiter.in_flight == 4 and limiter.waiting == 0


def test_limiter_try_acquire_takes_free_capacity_only_with_nobody_waiting_and_never_waits():
    limiter = InflightLimiter(4)
    assert limiter.try_acquire(3) and limiter.in_flight == 3
    assert not limiter.try_acquire(2) and limiter.in_flight == 3  # does not fit
    waiter = threading.Thread(target=limiter.acquire, args=(2, time.monotonic() + 5))
    waiter.start()
    while limiter.waiting < 1:
        time.sleep(0.001)
    assert not limiter.try_acquire(1), "a request that fits does not overtake one waiting before it"
    limiter.release(3)
    waiter.join(5)
    assert limiter.in_flight == 2 and limiter.try_acquire(2) and limiter.in_flight == 4


def test_limiter_admits_in_arrival_order():
    limiter = InflightLimiter(4)
    limiter.acquire(4, None)
    order: list[str] = []

    def wait(name: str, weight: int) -> None:
        limiter.acquire(weight, time.monotonic() + 5)
        order.append(name)
        limiter.release(weight)

    big = threading.Thread(target=wait, args=("big", 4))
    big.start()
    while limiter.waiting < 1:
        time.sleep(0.001)
    small = threading.Thread(target=wait, args=("small", 1))
    small.start()
    while limiter.waiting < 2:
        time.sleep(0.001)
    limiter.release(4)
    big.join(5)
    small.join(5)
    assert order == ["big", "small"], "a small request does not overtake the large one ahead of it"


def test_callers_past_max_inflight_wait_rather_than_fail():
    reward = rewardkit.load(config(max_inflight=2, concurrency=8, deadline_s=30))
    batch = reward.score(many_groups(30))
    assert len(batch.groups) == 30 and reward.limiter.in_flight == 0
    reward.close()


def test_score_fails_with_a_timeout_when_capacity_never_frees():
    reward = rewardkit.load(config(max_inflight=2))
    reward.limiter.acquire(2, None)  # someone else holds all capacity
    with pytest.raises(BackpressureTimeout):
        reward.score(many_groups(1), deadline_s=0.05)


def test_a_group_larger_than_max_inflight_is_refused_at_once():
    reward = rewardkit.load(config(max_inflight=1))
    with pytest.raises(RequestTooLarge):
        reward.score(many_groups(1))


def test_resume_check_refuses_another_identity(monkeypatch: pytest.MonkeyPatch, fresh_plugins: None):
    recorded = rewardkit.load(config()).providers
    monkeypatch.setenv("WORKER_FIXTURE_REVISION", "2")
    from rewardkit.seam.plugins import reset_plugins

    reset_plugins()
    current = rewardkit.load(config())
    with pytest.raises(rewardkit.IdentityMismatchError) as caught:
        current.check_resume(recorded)
    assert recorded[0].identity in str(caught.value) and current.providers[0].identity in str(caught.value)


def test_scaling_and_group_size_are_checked_at_construction():
    with pytest.raises(PreflightError, match="advantage scaling"):
        worker(ONE, scaling="grp")  # type: ignore[arg-type]
    for size in (0, True, "4"):
        with pytest.raises(PreflightError, match="group size"):
            worker(ONE, group_size=size)  # type: ignore[arg-type]


def test_limiter_refuses_non_positive_weights():
    with pytest.raises(ValueError, match="positive number of rollouts"):
        InflightLimiter(2).acquire(0, None)


def test_a_validation_selection_without_catalog_uses_the_training_catalog():
    reward = rewardkit.load(
        {
            "rl": {
                "reward": {"provider": "keyed", "catalog": CATALOG},
                "validation": {"reward": {"provider": "keyed-ref"}},
            }
        }
    )
    assert reward.validation().selection.catalog == CATALOG


def test_a_bad_spec_names_the_config_key():
    with pytest.raises(rewardkit.ConfigError, match=r"rl\.reward\.spec.*wieght"):
        rewardkit.load({"rl": {"reward": {"spec": {"components": [{"provider": "keyed", "wieght": 1}]}}}})
