"""The one-pass path for cheap pointwise providers says exactly what the general path says.

For generated batches (good ones, and ones with every kind of bad rollout and provider answer) and
several specs, the two paths return equal results or raise the same error with the same message.
"""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewardkit
from rewardkit.contracts.errors import RequestCancelled
from rewardkit.scoring import cancellation
from rewardkit.scoring.worker import RewardWorker

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import pointwise_fixtures  # noqa: E402 - a test module beside this one

SPECS: dict[str, dict[str, Any]] = {
    "one provider": {"components": [{"provider": "scripted"}]},
    "zero on error, a gate and a weight": {
        "onError": "zero",
        "components": [
            {"provider": "scripted-ref", "weight": 0.5},
            {"provider": "nonempty", "gate": True, "weight": 0.0},
        ],
    },
    "none on error, floor and clip": {
        "onError": "none",
        "floor": -3.0,
        "clip": [-2.0, 2.0],
        "components": [
            {"provider": "scripted", "gate": True, "threshold": 0.25},
            {"provider": "scripted-prompt", "weight": 2.0},
            {"provider": "exact-match", "weight": 1.0},
        ],
    },
}


@pytest.fixture(scope="module")
def workers() -> dict[tuple[str, int | None], RewardWorker]:
    made = {}
    for name, spec in SPECS.items():
        for group_size in (None, 2):
            config = {
                "rl": {
                    "group_size": group_size or 1,
                    "reward": {"spec": spec, "catalog": "pointwise_fixtures:catalog"},
                },
            }
            reward = rewardkit.load(config)
            worker = RewardWorker(
                reward.worker.spec, reward.catalog, group_size=group_size, namespace="train"
            )
            assert worker._pointwise is not None, "every provider here is cheap and pointwise"
            made[name, group_size] = worker
    return made


def words() -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(pointwise_fixtures.WORDS), st.sampled_from(["", "  ", "a b"]))


def rollout() -> st.SearchStrategy[dict[str, Any]]:
    fields = {
        "trajectory_id": st.one_of(st.sampled_from(["t1", "t2", "t3", "t4"]), st.sampled_from(["", None, 5])),
        "completion": st.one_of(words(), st.sampled_from([None, 3])),
        "prompt": st.sampled_from(["p", "p", "q", {"k": [1, 2]}, None]),
        "reference": st.sampled_from(["r", "r", "r2", ["x", 1], {"a": 1.5}, 2, None]),
        "completion_token_count": st.sampled_from([None, 0, 12, -1, "7", True]),
        "finish_reason": st.sampled_from([None, "stop", "length", 1]),
        "group_id": st.sampled_from(["g0", "g1", "g2", 0]),
    }
    return st.fixed_dictionaries({}, optional=fields)


def group() -> st.SearchStrategy[Any]:
    rollouts = st.lists(rollout(), min_size=0, max_size=4)
    return st.one_of(
        st.tuples(st.sampled_from(["g0", "g1", "g2", "", 7]), rollouts),
        st.builds(lambda g, r: {"group_id": g, "rollouts": r}, st.sampled_from(["g0", "g1", "g2"]), rollouts),
        st.builds(lambda g, r: (g, tuple(r)), st.sampled_from(["g0", "g1", "g2"]), rollouts),
    )


VALID = ["v=0.5", "v=-2.25", "i=3", "skip", "fail", "crash", "diag=2.5", "idiag=4", "ref", "yes", "a"]


def clean_group(completions: list[str] = VALID) -> st.SearchStrategy[Any]:
    """A well-formed group, so that provider answers and results (not only errors about rollouts)
    get compared often; ``completions`` are the words its completions are drawn from."""

    def build(group_id: str, completions: list[str], prompt: Any, reference: Any) -> Any:
        return (
            group_id,
            [
                {
                    "trajectory_id": f"{group_id}/{k}",
                    "completion": c,
                    "prompt": prompt,
                    "reference": reference,
                }
                for k, c in enumerate(completions)
            ],
        )

    return st.builds(
        build,
        st.sampled_from(["g0", "g1", "g2", "g3", "g4"]),
        st.lists(st.sampled_from(completions), min_size=2, max_size=2),
        st.sampled_from(["p", "q"]),
        st.sampled_from(["r", "a", ["x", 1], {"a": 1.5}]),
    )


def outcome(run: Any) -> tuple[Any, ...]:
    try:
        scored = run()
        # Equal, and equal as JSON too (where 4 and 4.0 differ).
        return ("scored", scored, json.dumps(scored.to_jsonl_rows()), json.dumps(scored.metrics))
    except Exception as error:  # the comparison is the point: any error, with its message
        return ("raised", type(error).__name__, str(error), getattr(error, "rule", None))


def both(worker: RewardWorker, batch: list[Any], max_chunk_weight: int | None) -> tuple[Any, Any]:
    admitted: list[list[int]] = [[], []]

    def admit(which: int) -> Any:
        def enter(weight: int) -> Any:
            admitted[which].append(weight)
            return nullcontext()

        return enter

    general = outcome(lambda: worker.finish(worker._stage(batch, None, admit(0), max_chunk_weight)))
    one_pass = outcome(
        lambda: worker._pointwise.score(batch, admit(1), max_chunk_weight, nullcontext)  # type: ignore[union-attr]
    )
    if general[0] == "scored":
        assert admitted[0] == admitted[1], "the same chunks are admitted"
    return general, one_pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    spec=st.sampled_from(sorted(SPECS)),
    group_size=st.sampled_from([None, 2]),
    batch=st.lists(
        st.one_of(group(), clean_group(), clean_group(list(pointwise_fixtures.WORDS))), min_size=0, max_size=5
    ),
    max_chunk_weight=st.sampled_from([None, 1, 3]),
)
def test_the_one_pass_path_says_what_the_general_path_says(
    workers, spec, group_size, batch, max_chunk_weight
):
    general, one_pass = both(workers[spec, group_size], batch, max_chunk_weight)
    assert one_pass == general


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    spec=st.sampled_from(sorted(SPECS)),
    batch=st.lists(clean_group(), min_size=1, max_size=6, unique_by=lambda group: group[0]),
)
def test_clean_batches_score_the_same_on_both_paths(workers, spec, batch):
    general, one_pass = both(workers[spec, 2], batch, None)
    assert one_pass == general
    if spec == "zero on error, a gate and a weight":
        assert general[0] == "scored", general  # this spec scores through every scripted answer


def test_reward_score_takes_the_one_pass_path_for_cheap_pointwise_providers(workers):
    reward = rewardkit.load({"rl": {"group_size": 2, "reward": {"provider": "exact-match"}}})
    assert reward.worker._pointwise is not None
    batch = [
        (
            "g",
            [
                {"trajectory_id": "a", "completion": "x", "reference": "x"},
                {"trajectory_id": "b", "completion": "y", "reference": "x"},
            ],
        )
    ]
    scored = reward.score(batch)
    assert [c.final for _, c in scored.candidates()] == [1.0, 0.0]
    assert [c.advantage for _, c in scored.candidates()] == pytest.approx([0.7071, -0.7071], abs=1e-3)
    reward.close()


def test_providers_that_are_not_cheap_and_pointwise_take_the_general_path():
    config = {"rl": {"group_size": 2, "reward": {"provider": "keyed", "catalog": "worker_fixtures:catalog"}}}
    reward = rewardkit.load(config)
    assert reward.worker._pointwise is None  # map_candidates, but not declared cheap
    reward.close()


def test_a_cancelled_request_scores_no_further_group(workers):
    worker = workers["one provider", 2]
    batch = [
        (
            f"g{k}",
            [
                {"trajectory_id": "a", "completion": "cancel" if k == 0 else "v=1"},
                {"trajectory_id": "b", "completion": "v=0.5"},
            ],
        )
        for k in range(3)
    ]
    pointwise_fixtures.CALLS["count"] = 0
    with (
        cancellation.entered(cancellation.CancelScope()),
        pytest.raises(RequestCancelled, match="scripted cancel"),
    ):
        worker.evaluate(batch)
    assert pointwise_fixtures.CALLS["count"] == 2  # the first group only


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_a_scorer_that_returns_nothing_breaks_the_contract_on_both_paths(workers, spec):
    # Also after a shared result was checked in an earlier group: the memo of checked results
    # must never take None for one of them.
    def rows(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
        return [{"trajectory_id": t, "completion": c, "prompt": "p", "reference": "r"} for t, c in pairs]

    batch = [("g0", rows(("a", "yes"), ("b", "yes"))), ("g1", rows(("c", "yes"), ("d", "none")))]
    general, one_pass = both(workers[spec, 2], batch, None)
    assert one_pass == general
    assert general[0] == "raised" and general[3] == "result-type", general
