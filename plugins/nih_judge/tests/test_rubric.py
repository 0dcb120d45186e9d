"""``nih-rubric`` against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json

import pytest
from nih_judge_helpers import bind, close, rollouts

import rewardkit
from rewardkit.contracts.errors import RewardkitError
from rewardkit_nih_judge.testing import Reply, announced, graded, user_text

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture


def scores_by_answer(body):
    """A deterministic judge: the answer text is the score it gets."""
    answer = graded(body)
    return {"score": float(answer), "rationale": f"graded {answer}"}


def test_scores_are_normalised_and_the_rationale_is_the_reason(judge):
    judge.answer = scores_by_answer
    bound = bind("nih-rubric", judge, scale=[0, 4])
    result = bound.score_group("g", rollouts("0", "1", "4", "3"))
    assert [item.result.terms["score"] for item in result.items] == [0.0, 0.25, 1.0, 0.75]
    assert [item.result.reason for item in result.items] == ["graded 0", "graded 1", "graded 4", "graded 3"]
    diagnostics = {d.name: d.value for d in result.items[2].result.diagnostics}
    assert diagnostics == {
        "raw_score": 4.0,
        "judge_calls": 1.0,
        "parse_retries": 0.0,
        "verdict_unreadable": 0.0,  # the charge diagnostics are 0 when nothing was charged: rates
        "off_scale": 0.0,
        "verdict_refused": 0.0,
        "too_long_for_judge": 0.0,
        "request_failed": 0.0,
        "structured_output": 2.0,  # asked with the verdict's JSON schema, which the server took
        "rate_wait_s": 0.0,  # no budget or 429 held the request
        "shared_result": 0.0,  # its own verdict, not a copy of an equal answer's
    }
    body = judge.requests[0]
    assert body["model"] == "judge" and body["temperature"] == 0.0 and body["max_tokens"] == 512
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["rationale", "score"]
    assert schema["properties"]["score"] == {"type": "number"}
    system = body["messages"][0]["content"]
    assert "from 0 (worst) to 4 (best)" in system and '"score"' in system
    assert "Correctness counts twice" in user_text(body) and "What is 6 * 7?" in user_text(body)
    close(bound)


def test_chat_prompts_and_custom_templates_reach_the_judge(judge, tmp_path):
    rubric = tmp_path / "rubric.md"
    rubric.write_text("Reward brevity {completion} stays literal.")
    bound = bind(
        "nih-rubric", judge, rubric=None, rubric_path=str(rubric), template="Q: {prompt}\nA: {completion}"
    )
    messages = [{"role": "system", "content": "be terse"}, {"role": "user", "content": "hi"}]
    bound.score_group("g", rollouts("hello {prompt}", prompt=messages))
    body = judge.requests[0]
    markers = announced(body)
    assert sorted(markers) == ["answer", "task"]
    task, answer = markers["task"], markers["answer"]
    # each fenced slot stands on lines of its own, inside its fence
    assert body["messages"][1]["content"] == (
        f"Q:\n<data-{task}>\nsystem: be terse\nuser: hi\n</data-{task}>\n"
        f"A:\n<data-{answer}>\nhello {{prompt}}\n</data-{answer}>"
    )
    # a template without {rubric}: the rubric goes to the system message, braces untouched
    system = body["messages"][0]["content"]
    assert "Rubric:\nReward brevity {completion} stays literal.\n\nFenced data:" in system
    close(bound)


def test_an_unreadable_verdict_is_asked_again_in_the_same_conversation(judge):
    replies = iter(["I like it a lot.", '```json\n{"score": 9, "rationale": "second try"}\n```'])
    judge.answer = lambda body: next(replies)
    bound = bind("nih-rubric", judge)
    (item,) = bound.score_group("g", rollouts("42")).items
    assert item.result.status == "scored" and item.result.terms["score"] == pytest.approx(8 / 9)
    assert item.result.reason == "second try"
    assert {d.name: d.value for d in item.result.diagnostics}["parse_retries"] == 1.0
    again = judge.requests[1]["messages"]
    assert [m["role"] for m in again] == ["system", "user", "assistant", "user"]
    assert again[2]["content"] == "I like it a lot." and "could not be read" in again[3]["content"]
    close(bound)


def test_a_verdict_that_stays_unreadable_is_an_error_with_the_reason_never_zero(judge):
    judge.answer = lambda body: Reply("Looks fine to me", finish_reason="length")
    bound = bind("nih-rubric", judge, parse_retries=2)
    (item,) = bound.score_group("g", rollouts("42")).items
    assert item.result.status == "error" and not item.result.terms
    assert "unreadable verdict after 3 asks" in item.result.reason
    assert "cut at max_tokens" in item.result.reason and "Looks fine to me" in item.result.reason
    # nothing the judge said was readable, not even the canary's (alone in its group, the task's own
    # text given as an answer): infrastructure, not charged, and the reason names the canary
    assert "and the canary (the task's own text, given as an answer to the same task) failed too" in (
        item.result.reason
    )
    assert len(judge.requests) == 6  # 3 asks for the answer, 3 for the canary
    assert graded(judge.requests[-1]) == "What is 6 * 7?"
    close(bound)


def test_a_judge_off_the_scale_for_everything_is_asked_again_then_an_error(judge):
    judge.answer = lambda body: {"score": 11, "rationale": "great"}
    bound = bind("nih-rubric", judge)
    (item,) = bound.score_group("g", rollouts("42")).items
    assert item.result.status == "error"
    assert "off-scale verdict after 2 asks: score 11 is off the scale [1, 10]" in item.result.reason
    assert len(judge.requests) == 4  # the answer and the canary, each asked twice
    assert "off the scale" in judge.requests[1]["messages"][-1]["content"]  # the re-ask says why
    close(bound)


def test_429_with_retry_after_and_500s_are_retried(judge):
    script = iter([Reply("slow down", status=429, headers={"Retry-After": "0.3"}), Reply("boom", status=500)])
    judge.answer = lambda body: next(script, {"score": 5})
    bound = bind("nih-rubric", judge, retries=3)
    (item,) = bound.score_group("g", rollouts("42")).items
    assert item.result.status == "scored" and item.result.terms["score"] == pytest.approx(4 / 9)
    assert len(judge.requests) == 3
    close(bound)


def test_retries_stop_at_the_deadline(judge):
    # The server asks for a wait longer than what is left of the group's deadline: nothing is sent
    # again, the canary included (the endpoint is paused for everyone), and the error names both.
    judge.answer = lambda body: Reply("busy", status=429, headers={"Retry-After": "30"})
    bound = bind("nih-rubric", judge, retries=10, deadline_s=2.0)
    result = bound.score_group("g", rollouts("1", "2"))
    for item in result.items:
        assert item.result.status == "error"
        assert "the group's deadline (2 s) passes before the request can start" in item.result.reason
        assert "429" in item.result.reason and "the canary (" in item.result.reason
    assert len(judge.requests) == 2  # one per candidate, no retry
    # Retries that fit are made until the deadline, never past it: a bounded count.
    judge.reset()
    judge.answer = lambda body: Reply("down", status=503, headers={"Retry-After": "0.4"})
    bound = bind("nih-rubric", judge, retries=10, deadline_s=1.0)
    (item,) = bound.score_group("g", rollouts("1")).items
    assert item.result.status == "error" and "503" in item.result.reason
    assert 1 <= len(judge.requests) <= 6  # at most 3 tries of the candidate, then of the canary
    close(bound)


def test_an_answer_slower_than_the_timeout_is_an_error(judge):
    judge.answer = lambda body: Reply(json.dumps({"score": 5}), delay_s=5.0)
    bound = bind("nih-rubric", judge, timeout_s=0.3, retries=1)
    (item,) = bound.score_group("g", rollouts("42")).items
    assert item.result.status == "error" and "no answer within 0.3 s" in item.result.reason
    assert "the canary (the task's own text, given as an answer" in item.result.reason
    assert len(judge.requests) == 4  # the first try and one retry, then the canary's two
    close(bound)


def test_concurrency_never_exceeds_max_concurrency_even_across_groups(judge):
    judge.latency_s = 0.15
    spec = {
        "provider": "nih-rubric",
        "params": {"base_url": judge.base_url, "model": "judge", "rubric": "r", "max_concurrency": 3},
    }
    config = {"rl": {"group_size": 6, "reward": spec}, "rewards": {"concurrency": 4}}
    # distinct answers in every group: equal ones would be asked once (cacheable at temperature 0)
    groups = [(f"q{g}", rollouts(*(f"{g}.{k}" for k in range(6)))) for g in range(4)]
    with rewardkit.load(config) as reward:
        batch = reward.score(groups)
    assert len(judge.requests) == 24
    assert judge.max_in_flight == 3, judge.max_in_flight
    finals = [candidate.final for _, candidate in batch.candidates()]
    assert finals == [pytest.approx(6 / 9)] * 24  # the default scripted judge says 7


# What servers without structured output answer (OpenAI-compatible proxies, vLLM, TGI): each names
# the field it refuses.
REFUSALS = (
    "response_format json_schema is not supported by this model",
    "1 validation error for ChatCompletionRequest\nguided_json: extra fields not permitted",
    "structured_outputs backend is not available on this server",
)


@pytest.mark.parametrize("refusal", REFUSALS)
def test_a_server_that_refuses_structured_output_is_asked_without_it(judge, refusal):
    def answer(body):
        if "response_format" in body:
            return Reply(refusal, status=400)
        return '{"score": 7}'

    judge.answer = answer
    bound = bind("nih-rubric", judge)
    first = bound.score_group("g", rollouts("1"))
    second = bound.score_group("g", rollouts("2"))
    assert [i.result.status for i in (*first.items, *second.items)] == ["scored", "scored"]
    # json_schema refused, then json_object refused, then neither: remembered for the endpoint
    asked = [body.get("response_format", {}).get("type") for body in judge.requests]
    assert asked == ["json_schema", "json_object", None, None]
    assert {d.name: d.value for d in second.items[0].result.diagnostics}["structured_output"] == 0.0
    judge.reset()
    strict = bind("nih-rubric", judge, json_mode="on")
    (item,) = strict.score_group("g", rollouts("1")).items
    assert item.result.status == "error" and "400" in item.result.reason
    assert "json_mode on: the server refused json_object" in item.result.reason
    close(bound)
    close(strict)


def test_a_server_with_json_object_only_is_asked_with_it(judge):
    def answer(body):
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply("Unknown response_format type: json_schema", status=422)
        return '{"score": 4}'

    judge.answer = answer
    bound = bind("nih-rubric", judge, json_mode="on")
    result = bound.score_group("g", rollouts("1", "2"))
    assert [item.result.status for item in result.items] == ["scored", "scored"]
    assert {d.name: d.value for d in result.items[0].result.diagnostics}["structured_output"] == 1.0
    close(bound)


def test_every_request_in_flight_when_the_server_refuses_is_asked_again_not_failed(judge):
    # Eight questions are in flight when the first refusal comes back: each is refused for the
    # format it carried and must be sent again without it, not fail the batch.
    def answer(body):
        if "response_format" in body:
            return Reply("'response_format' is not supported", status=400, delay_s=0.2)
        return '{"score": 7}'

    judge.answer = answer
    bound = bind("nih-rubric", judge, max_concurrency=8)
    result = bound.score_group("g", rollouts(*"12345678"))
    assert [item.result.status for item in result.items] == ["scored"] * 8
    assert judge.max_in_flight == 8
    formats = [body.get("response_format", {}).get("type") for body in judge.requests]
    assert formats.count(None) == 8  # one plain request per question, every one answered
    assert formats.count("json_schema") == 8  # all eight were in flight with the schema
    judge.reset()
    bound.score_group("g", rollouts("9"))
    assert ["response_format" in body for body in judge.requests] == [False]  # remembered
    close(bound)


def test_a_400_about_anything_else_is_no_refusal_of_structured_output(judge):
    judge.answer = lambda body: Reply("temperature must be at most 2", status=400)
    bound = bind("nih-rubric", judge)
    (item,) = bound.score_group("g", rollouts("1")).items
    assert item.result.status == "error" and "temperature must be at most 2" in item.result.reason
    # the candidate's request, then the canary's (refused alike): no step down of the format
    assert [body["response_format"]["type"] for body in judge.requests] == ["json_schema", "json_schema"]
    close(bound)


def test_on_error_decides_what_a_failed_verdict_becomes(judge):
    judge.answer = lambda body: "no idea"
    params = {"base_url": judge.base_url, "model": "judge", "rubric": "r", "parse_retries": 0}
    groups = [("q", rollouts("1", "2"))]
    with (
        rewardkit.load(
            {"rl": {"group_size": 2, "reward": {"provider": "nih-rubric", "params": params}}}
        ) as reward,
        pytest.raises(RewardkitError, match="unreadable verdict"),
    ):
        reward.score(groups)
    spec = {"components": [{"provider": "nih-rubric", "params": params}], "onError": "zero"}
    with rewardkit.load({"rl": {"group_size": 2, "reward": {"spec": spec}}}) as reward:
        batch = reward.score(groups)
    rows = batch.to_jsonl_rows()
    assert [row["final"] for row in rows] == [0.0, 0.0]
    assert "unreadable verdict" in json.dumps(rows)


def test_a_200_without_a_message_is_an_error_naming_the_url(judge):
    judge.answer = lambda body: Reply(body={"object": "chat.completion", "choices": []})
    bound = bind("nih-rubric", judge)
    (item,) = bound.score_group("g", rollouts("42")).items
    assert item.result.status == "error"
    assert (
        f"{judge.base_url}/chat/completions answered 200 without choices[0].message.content"
        in item.result.reason
    )
    close(bound)
