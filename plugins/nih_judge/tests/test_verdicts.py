"""Reading verdicts: JSON with fences and text around it, the trailing-line fallback, refusals."""

from __future__ import annotations

import pytest
from rewardkit_nih_judge.verdicts import OffScale, Unreadable, parse_ranking, parse_score, parse_winner

SCALE = (1.0, 10.0)


@pytest.mark.parametrize(
    ("text", "score", "rationale"),
    [
        ('{"score": 7, "rationale": "fine"}', 7.0, "fine"),
        ('```json\n{"score": 8.5, "rationale": "good"}\n```', 8.5, "good"),
        ('Sure! Here it is:\n{"rationale": "ok", "score": "6"}\nHope that helps.', 6.0, "ok"),
        ('For example {"score": 1} would be bad. My verdict: {"score": 9, "rationale": "r"}', 9.0, "r"),
        ('{"score": "4/10", "rationale": "meh"}', 4.0, "meh"),
        ("The answer is right but terse.\nScore: 8", 8.0, "The answer is right but terse."),
        ("reasoning...\n**Score:** 3/10", 3.0, "reasoning..."),
        ('{"score": 10}', 10.0, None),
        ('{"verdict": {"score": 2}}', None, None),  # nested: no top-level score -> unreadable
    ],
)
def test_scores_are_read_from_json_and_from_a_trailing_line(text, score, rationale):
    if score is None:
        with pytest.raises(Unreadable):
            parse_score(text, SCALE)
        return
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
    ],
)
def test_unreadable_replies_are_refused_with_a_reason(text):
    with pytest.raises(Unreadable) as caught:
        parse_score(text, SCALE)
    assert str(caught.value)


@pytest.mark.parametrize("text", ['{"score": 11}', '{"score": 0}', "Score: -3", '{"score": 10.5}'])
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
        ("Both are fine but B is clearer.\nWinner: B", "B"),
    ],
)
def test_winners(text, winner):
    assert parse_winner(text).value == winner


@pytest.mark.parametrize("text", ['{"winner": "C"}', '{"winner": 1}', "A is better", '{"better": "A"}'])
def test_unreadable_winners(text):
    with pytest.raises(Unreadable):
        parse_winner(text)


def test_rankings_must_name_every_label_once():
    assert parse_ranking('{"ranking": ["B", "A", "C"]}', ["A", "B", "C"]).value == ("B", "A", "C")
    assert parse_ranking('{"ranking": "C > A > B"}', ["A", "B", "C"]).value == ("C", "A", "B")
    assert parse_ranking("thoughts\nRanking: B > C > A", ["A", "B", "C"]).value == ("B", "C", "A")
    for bad in ('{"ranking": ["A", "B"]}', '{"ranking": ["A", "A", "B"]}', '{"ranking": ["A", "B", "D"]}'):
        with pytest.raises(Unreadable, match="each exactly once"):
            parse_ranking(bad, ["A", "B", "C"])
    with pytest.raises(Unreadable):
        parse_ranking('{"ranking": 3}', ["A", "B", "C"])
