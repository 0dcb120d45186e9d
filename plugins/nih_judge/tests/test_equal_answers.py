"""Each distinct answer asked once (issue 46): ``nih-rubric`` at temperature 0 declares itself
``cacheable``, so 16 candidates holding 4 distinct answers to one task cost the judge 4 verdict
requests, and every candidate gets the score it would get alone. Sampled (temperature > 0), each
answer is a draw of its own: the judge is asked about every candidate."""

from __future__ import annotations

from typing import Any

from nih_judge_helpers import RUBRIC, judge_params, rollouts

import rewardkit
from rewardkit_nih_judge.testing import ScriptedJudge, graded

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture

DISTINCT = ["2", "5", "7", "9"]


def by_answer(body: dict[str, Any]) -> dict[str, Any]:
    return {"score": float(graded(body)), "rationale": f"graded {graded(body)}"}


def sixteen_of_four() -> list[tuple[str, list[dict[str, Any]]]]:
    """4 groups of 4 for one task; each group holds the answers in another order, one twice."""
    orders = ["2579", "9952", "7225", "5797"]
    return [(f"g{group}", rollouts(*order)) for group, order in enumerate(orders)]


def score(judge: ScriptedJudge, temperature: float) -> rewardkit.ScoredBatch:
    params = judge_params(judge, rubric=RUBRIC, scale=[0, 10], temperature=temperature)
    config = {"rl": {"group_size": 4, "reward": {"provider": "nih-rubric", "params": params}}}
    with rewardkit.load(config) as reward:
        return reward.score(sixteen_of_four())


def test_sixteen_candidates_of_four_answers_cost_four_verdict_requests(judge):
    judge.answer = by_answer
    batch = score(judge, temperature=0.0)
    assert sorted(graded(body) for body in judge.requests) == DISTINCT  # no canary: nothing failed
    candidates = [candidate for _, candidate in batch.candidates()]
    answers = "2579" + "9952" + "7225" + "5797"
    assert [candidate.final for candidate in candidates] == [int(answer) / 10 for answer in answers]
    assert [candidate.breakdown["nih-rubric"]["reason"] for candidate in candidates] == [
        f"graded {answer}" for answer in answers
    ]
    assert sum(candidate.diagnostics["nih-rubric"]["shared_result"] for candidate in candidates) == 12.0
    assert batch.metrics["train/reward_provider/nih-rubric/shared_result"] == 0.75

    # the same batch from a sampled judge: asked about all 16, the same scores (this stub is
    # deterministic), and nothing shared
    judge.reset()
    sampled = score(judge, temperature=0.7)
    assert len(judge.requests) == 16
    assert [candidate.final for _, candidate in sampled.candidates()] == [c.final for c in candidates]
    assert all("shared_result" not in c.diagnostics["nih-rubric"] for _, c in sampled.candidates())
