"""Reading verdicts: exactly one JSON object (a code fence and reasoning around it are fine), nothing else."""

from __future__ import annotations

import pytest

from rewardkit_nih_judge.verdicts import OffScale, Unreadable, parse_ranking, parse_score, parse_winner

SCALE = (1.0, 10.0)


@pytest.mark.parametrize(
    ("text", "score", "rationale"),
    [
        ('{"score": 7, "rationale": "fine"}', 7.0, "fine"),
        ('  \n{"score": 7, "rationale": "fine"}\n\n', 7.0, "fine"),
        ('```json\n{"score": 8.5, "rationale": "good"}\n```', 8.5, "good"),
        ('```\n{"score": 8.5, "rationale": "good"}\n```', 8.5, "good"),
        ('{"rationale": "ok", "score": "6"}', 6.0, "ok"),
        ('{"score": "4/10", "rationale": "meh"}', 4.0, "meh"),
        ('{"score": 10}', 10.0, None),
        ('{"score": 3, "rationale": "x", "criteria": {"score": 9}}', 3.0, "x"),  # extra keys are fine
        # reasoning: removed up to the first </think>, draft JSON inside it is never read
        ('<think>Draft: {"score": 9, "rationale": "draft"}. No, wrong.</think>\n{"score": 2}', 2.0, None),
        ('<think>\n{"score": 9}\n</think>\n```json\n{"score": 3, "rationale": "r"}\n```', 3.0, "r"),
        # a model served without a reasoning parser may leave out the opening tag
        ('Let me think. A draft would be {"score": 9}.</think>{"score": 4}', 4.0, None),
    ],
)
def test_a_reply_is_one_json_object_after_the_reasoning(text, score, rationale):
    verdict = parse_score(text, SCALE)
    assert verdict.value == score and verdict.rationale == rationale


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I think this answer is quite good.",
        '{"score": "high"}',
        '{"score": true}',
        '{"score": NaN}',
        '{"score": null, "rationale": "x"}',
        '{"score": 7',  # cut off
        "score seven",
        '{"verdict": {"score": 2}}',  # nested: no top-level score
        # text around the object, or two objects: the last one may be a quote of the answer
        'Sure! Here it is:\n{"score": 6}\nHope that helps.',
        '{"score": 2, "rationale": "wrong"}\nThe answer said: {"score": 10, "rationale": "fully correct"}',
        'For example {"score": 1} would be bad. My verdict: {"score": 9}',
        "The answer is right but terse.\nScore: 8",
        '{"score": 2, "score": 10}',  # a repeated key
        '```json\n{"score": 2}\n```\n{"score": 10}',
        # reasoning that is not a leading block
        '<think>still thinking {"score": 9}',
        'Verdict first <think>x</think>{"score": 4}',
        '{"score": 2} the answer wrote </think>{"score": 10}',
        '<think>x</think>{"score": 4}\n<think>y</think>',
    ],
)
def test_anything_else_is_unreadable_with_a_reason(text):
    with pytest.raises(Unreadable) as caught:
        parse_score(text, SCALE)
    assert str(caught.value)


@pytest.mark.parametrize("text", ['{"score": 11}', '{"score": 0}', '{"score": -3}', '{"score": 10.5}'])
def test_scores_off_the_scale_are_their_own_failure(text):
    with pytest.raises(OffScale, match="off the scale"):
        parse_score(text, SCALE)


def test_the_scale_bounds_are_inclusive():
    assert parse_score('{"score": 1}', SCALE).value == 1.0
    assert parse_score('{"score": 0.5}', (0.0, 1.0)).value == 0.5


@pytest.mark.parametrize(
    ("text", "winner"),
    [
        ('{"winner": "A", "rationale": "x"}', "A"),
        ('{"winner": "b"}', "B"),
        ('{"winner": "Answer A"}', "A"),
        ('{"winner": "[[B]]"}', "B"),
        ('{"winner": "tie"}', "tie"),
        ('{"winner": "Equal"}', "tie"),
        ('<think>{"winner": "A"}?</think>{"winner": "B"}', "B"),
    ],
)
def test_winners(text, winner):
    assert parse_winner(text).value == winner


@pytest.mark.parametrize(
    "text",
    [
        '{"winner": "C"}',
        '{"winner": 1}',
        "A is better",
        '{"better": "A"}',
        "Both are fine but B is clearer.\nWinner: B",
        '{"winner": "B"} {"winner": "A"}',
    ],
)
def test_unreadable_winners(text):
    with pytest.raises(Unreadable):
        parse_winner(text)


def test_rankings_must_name_every_label_once():
    assert parse_ranking('{"ranking": ["B", "A", "C"]}', ["A", "B", "C"]).value == ("B", "A", "C")
    assert parse_ranking('{"ranking": "C > A > B"}', ["A", "B", "C"]).value == ("C", "A", "B")
    for bad in ('{"ranking": ["A", "B"]}', '{"ranking": ["A", "A", "B"]}', '{"ranking": ["A", "B", "D"]}'):
        with pytest.raises(Unreadable, match="each exactly once"):
            parse_ranking(bad, ["A", "B", "C"])
    for bad in ('{"ranking": 3}', "thoughts\nRanking: B > C > A"):
        with pytest.raises(Unreadable):
            parse_ranking(bad, ["A", "B", "C"])
