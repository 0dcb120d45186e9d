"""The opt-in verdict cache: a rerun does not pay the judge twice; hits and misses are metrics."""

from __future__ import annotations

from nih_judge_helpers import bind, judge_params, rollouts

import rewardkit
from rewardkit_nih_judge.testing import pair

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture


def score(config, groups):
    with rewardkit.load(config) as reward:
        return reward.score(groups)


def test_a_rerun_reads_verdicts_from_the_cache(judge, tmp_path):
    cache = str(tmp_path / "judge-cache" / "verdicts.sqlite")
    params = judge_params(judge, rubric="r", cache_path=cache)
    config = {"rl": {"group_size": 3, "reward": {"provider": "nih-rubric", "params": params}}}
    groups = [("q1", rollouts("a", "b", "c")), ("q2", rollouts("a", "b", "c", prompt="Other?"))]
    first = score(config, groups)
    assert len(judge.requests) == 6
    assert first.metrics["train/reward_provider/nih-rubric/cache_miss"] == 1.0
    assert first.metrics["train/reward_provider/nih-rubric/cache_hit"] == 0.0
    second = score(config, groups)  # a new process would do the same: the cache is a file
    assert len(judge.requests) == 6, "the rerun asked the judge again"
    assert second.metrics["train/reward_provider/nih-rubric/cache_hit"] == 1.0
    assert second.metrics["train/reward_provider/nih-rubric/judge_calls"] == 0.0
    assert [c.final for _, c in second.candidates()] == [c.final for _, c in first.candidates()]
    assert [c.breakdown for _, c in second.candidates()] == [c.breakdown for _, c in first.candidates()]
    # half new: a new candidate misses, the known ones hit
    third = score(config, [("q1", rollouts("a", "b", "new"))])
    assert len(judge.requests) == 7
    assert abs(third.metrics["train/reward_provider/nih-rubric/cache_hit"] - 2 / 3) < 1e-12


def test_the_key_covers_the_judge_the_prompt_the_candidate_and_the_order(judge, tmp_path):
    cache = str(tmp_path / "verdicts.sqlite")
    bound = bind("nih-rubric", judge, cache_path=cache)
    bound.score_group("g", rollouts("x"))
    bound.score_group("g", rollouts("x", prompt="another task"))
    other_rubric = bind("nih-rubric", judge, cache_path=cache, rubric="another rubric")
    other_rubric.score_group("g", rollouts("x"))
    other_model = bind("nih-rubric", judge, cache_path=cache, model="judge-2")
    other_model.score_group("g", rollouts("x"))
    assert len(judge.requests) == 4
    bound.score_group("g", rollouts("x"))
    assert len(judge.requests) == 4
    judge.answer = lambda body: {"winner": "A" if pair(body)[0] == "p" else "B"}
    compare = bind("nih-compare", judge, cache_path=cache)
    compare.score_group("g", rollouts("p", "q"))
    compare.score_group("g", rollouts("q", "p"))  # the same two orders: both cached
    assert len(judge.requests) == 6
    for provider in (bound, other_rubric, other_model, compare):
        provider.provider.close()


def test_failures_are_not_cached(judge, tmp_path):
    replies = iter(["unsure"] * 4 + ['{"score": 3}'])
    judge.answer = lambda body: next(replies)
    bound = bind("nih-rubric", judge, cache_path=str(tmp_path / "c.sqlite"), parse_retries=1)
    # the answer and the canary unreadable: an error, nothing stored
    assert bound.score_group("g", rollouts("x")).items[0].result.status == "error"
    assert len(judge.requests) == 4
    assert bound.score_group("g", rollouts("x")).items[0].result.status == "scored"
    assert bound.score_group("g", rollouts("x")).items[0].result.status == "scored"
    assert len(judge.requests) == 5
    bound.provider.close()
