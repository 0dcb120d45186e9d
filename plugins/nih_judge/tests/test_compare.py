"""``nih-compare`` against a scripted server: position bias cancels, ties and failures are explicit."""

from __future__ import annotations

import pytest
from nih_judge_helpers import bind, close, rollouts

from rewardkit_nih_judge.compare import pair_schedule
from rewardkit_nih_judge.testing import Reply, listed, pair

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture


def diagnostics(item):
    return {d.name: d.value for d in item.result.diagnostics}


def longer_wins(body):
    first, second = pair(body)
    if len(first) == len(second):
        return {"winner": "tie", "rationale": "same length"}
    return {"winner": "A" if len(first) > len(second) else "B", "rationale": "longer"}


def test_a_judge_that_always_prefers_the_first_answer_gives_identical_candidates_equal_scores(judge):
    judge.answer = lambda body: {"winner": "A", "rationale": "the first one"}
    bound = bind("nih-compare", judge)
    result = bound.score_group("g", rollouts("same", "same", "same", "same"))
    assert [item.result.terms["score"] for item in result.items] == [0.5] * 4
    for item in result.items:
        assert diagnostics(item)["position_flips"] == 1.0 and diagnostics(item)["comparisons"] == 6.0
    # the same biased judge on different answers cannot tell them apart either: no fake ranking
    judge.reset()
    result = bound.score_group("g", rollouts("a", "bb", "ccc"))
    assert [item.result.terms["score"] for item in result.items] == [0.5] * 3
    close(bound)


def test_every_pair_is_asked_in_both_orders(judge):
    judge.answer = longer_wins
    bound = bind("nih-compare", judge)
    result = bound.score_group("g", rollouts("aaa", "a", "aa"))
    assert [item.result.terms["score"] for item in result.items] == [1.0, 0.0, 0.5]
    shown = sorted(pair(body) for body in judge.requests)
    assert shown == sorted(
        [("aaa", "a"), ("a", "aaa"), ("aaa", "aa"), ("aa", "aaa"), ("a", "aa"), ("aa", "a")]
    )
    assert all(diagnostics(item)["position_flips"] == 0.0 for item in result.items)
    close(bound)


def test_ties_are_half_a_win_and_reported(judge):
    judge.answer = longer_wins
    bound = bind("nih-compare", judge)
    result = bound.score_group("g", rollouts("xx", "yy", "z"))
    assert [item.result.terms["score"] for item in result.items] == [0.75, 0.75, 0.0]
    assert diagnostics(result.items[0])["ties"] == 0.5  # 2 of its 4 verdicts were ties
    assert diagnostics(result.items[2])["ties"] == 0.0
    close(bound)


def test_a_failed_comparison_that_does_not_reproduce_is_replaced_for_its_two_candidates_only(judge):
    def answer(body):
        first, second = pair(body)
        if {first, second} == {"bad", "worse"}:
            return "cannot decide"
        return longer_wins(body)

    judge.answer = answer
    bound = bind("nih-compare", judge, parse_retries=0)
    result = bound.score_group("g", rollouts("bad", "worse", "fine!!"))
    # each of the two is compared again with the other answer ("fine!!"), which reads: neither is
    # charged, and that comparison takes the place of the failed one in its score
    assert [item.result.status for item in result.items] == ["scored"] * 3
    assert [item.result.terms["score"] for item in result.items] == [0.0, 0.0, 1.0]
    for item in result.items[:2]:
        assert "failed comparisons replaced by one with another answer" in item.result.reason
    assert "replaced" not in result.items[2].result.reason
    close(bound)


def test_a_group_of_one_is_skipped(judge):
    bound = bind("nih-compare", judge)
    (item,) = bound.score_group("g", rollouts("alone")).items
    assert item.result.status == "skipped" and judge.requests == []
    close(bound)


@pytest.mark.parametrize(("count", "cap", "pairs"), [(4, 28, 6), (8, 28, 28), (10, 28, 20), (10, 5, 10)])
def test_the_schedule_is_round_robin_when_it_fits_and_balanced_rings_when_not(count, cap, pairs):
    schedule = pair_schedule(count, cap)
    assert len(schedule) == pairs and len(set(schedule)) == pairs
    assert all(i < j for i, j in schedule)
    per_candidate = [sum(index in pair for pair in schedule) for index in range(count)]
    assert len(set(per_candidate)) == 1, per_candidate  # everyone gets as many comparisons


def test_a_big_group_is_judged_on_the_capped_schedule(judge):
    judge.answer = longer_wins
    bound = bind("nih-compare", judge, max_comparisons=10)
    result = bound.score_group("g", rollouts(*("x" * (n + 1) for n in range(10))))
    assert len(judge.requests) == 20  # 10 pairs (one ring), both orders
    scores = [item.result.terms["score"] for item in result.items]
    # ring neighbours only: the longest meets its neighbour and, round the ring, the shortest
    assert scores[0] == 0.0 and scores[5] == 0.5 and scores[-1] == 1.0
    close(bound)


def test_listwise_ranks_the_group_twice_and_cancels_position_bias(judge):
    def by_length(body):
        answers = listed(body)
        return {
            "ranking": sorted(answers, key=lambda label: -len(answers[label])),
            "rationale": "longest first",
        }

    judge.answer = by_length
    bound = bind("nih-compare", judge, mode="listwise")
    result = bound.score_group("g", rollouts("bb", "a", "dddd", "ccc"))
    assert [item.result.terms["score"] for item in result.items] == pytest.approx([1 / 3, 0.0, 1.0, 2 / 3])
    assert len(judge.requests) == 2
    assert list(listed(judge.requests[0]).values()) != list(listed(judge.requests[1]).values())
    judge.reset()
    judge.answer = lambda body: {"ranking": list(listed(body))}  # always the order shown
    result = bound.score_group("g", rollouts("same", "same", "same"))
    assert [item.result.terms["score"] for item in result.items] == [0.5, 0.5, 0.5]
    assert diagnostics(result.items[0])["position_flips"] == 1.0
    close(bound)


def test_listwise_failure_fails_the_group_with_the_reason(judge):
    judge.answer = lambda body: Reply("overloaded", status=503)
    bound = bind("nih-compare", judge, mode="listwise", retries=1)
    result = bound.score_group("g", rollouts("a", "b"))
    assert [item.result.status for item in result.items] == ["error", "error"]
    assert "the ranking of the group failed" in result.items[0].result.reason
    assert "503" in result.items[0].result.reason
    close(bound)
