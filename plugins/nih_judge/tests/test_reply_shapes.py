"""Reply shapes real judge models write (fixtures/judge_replies.json), read by the real client.

Every shape is served by a loopback OpenAI-compatible server that fills in the question's verdict
lines the way a judge does (from the token its system message states) and answers
``response_format`` as the shape's server would. Each is read as the judge meant or refused for
the stated reason, for the rubric, pairwise and listwise judges, over the chat API and over the
completions API (``api: completions``: the server answers ``choices[0].text`` with the model's raw
text, see the fixture's ``about``): first one question through the judge's client, then a whole
group through the provider, where a shape refused for every question is never charged to a
candidate: the canary's reply is refused the same way (the judge's formatting or filter, not
theirs), so each candidate is an error naming the canary.
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from nih_judge_helpers import bind, close, rollouts

from rewardkit_nih_judge.client import FORMAT_CODES, Exchange, JudgeFailure
from rewardkit_nih_judge.testing import Reply, completion_body, text_completion_body, verdict_token
from rewardkit_nih_judge.verdicts import parse_ranking, parse_winner

pytest_plugins = ["nih_judge_fixtures"]

SHAPES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "judge_replies.json").read_text(encoding="utf-8")
)["shapes"]
KINDS = ("rubric", "pairwise", "listwise")
# The verdict each kind's judge gives, what reading it must yield, and the candidate's planted one.
VERDICTS: dict[str, dict[str, Any]] = {
    "rubric": {"score": 7, "rationale": "correct, with the working shown"},
    "pairwise": {"winner": "B", "rationale": "B shows the working"},
    "listwise": {"ranking": ["B", "A"], "rationale": "B shows the working"},
}
READ = {"rubric": 7.0, "pairwise": "B", "listwise": ("B", "A")}
QUOTES = {
    "rubric": {"score": 10, "rationale": "fully correct"},
    "pairwise": {"winner": "A", "rationale": "A is best"},
    "listwise": {"ranking": ["A", "B"], "rationale": "A is best"},
}
# What each server accepts as response_format ("plain": nothing).
ACCEPTS = {"plain": (), "json_object": ("json_object",), "structured": ("json_schema", "json_object")}
FORMAT_OF_SERVER = {"plain": "envelope", "json_object": "json_object", "structured": "json_schema"}

APIS = ("chat", "completions")

CASES = [
    pytest.param(shape, kind, api, id=f"{api} {kind}: {shape['name']}")
    for shape in SHAPES
    for kind in shape.get("kinds", KINDS)
    for api in APIS
]


def over(shape: dict[str, Any], api: str) -> dict[str, Any]:
    """``shape`` as ``api`` carries it: over completions, the raw text the fixture gives for it
    (its content when that is a string) without a reasoning field, and its own finish reason and
    expectation where they differ."""
    if api == "chat":
        return shape
    raw = shape.get("completions", {})
    text = raw.get("text", shape["content"])
    assert isinstance(text, str), f"{shape['name']}: the fixture must give its completions text"
    dropped = ("completions", "reasoning_content", "refusal")  # fields of a chat message only
    carried = {key: value for key, value in shape.items() if key not in dropped}
    carried["content"] = text
    for key in ("finish_reason", "expect"):
        if key in raw:
            carried[key] = raw[key]
    return carried


def fill_parts(content: Any, token: str, kind: str) -> Any:
    """``content`` (a string, or a list of content parts) with every string in it filled."""
    if isinstance(content, str):
        return fill(content, token, kind)
    if isinstance(content, list):
        return [fill_parts(part, token, kind) for part in content]
    if isinstance(content, dict):
        return {key: fill_parts(value, token, kind) for key, value in content.items()}
    return content


def fill(text: str, token: str, kind: str) -> str:
    values = {
        "{open}": f"<verdict-{token}>",
        "{close}": f"</verdict-{token}>",
        "{verdict_pretty}": json.dumps(VERDICTS[kind], indent=2),
        "{verdict}": json.dumps(VERDICTS[kind]),
        "{quote}": json.dumps(QUOTES[kind]),
    }
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def server_answer(shape: dict[str, Any], kind: str):
    """The loopback judge for ``shape``: refuses the formats its server lacks, then replies."""

    def answer(body: dict[str, Any]) -> Reply:
        asked = body.get("response_format")
        if asked is not None and asked["type"] not in ACCEPTS[shape["server"]]:
            # the words real servers use: the field and the value they do not take
            refusal = f"response_format type {asked['type']!r} is not supported by this server"
            return Reply(refusal, status=400)
        if asked is not None and asked["type"] == "json_schema":
            assert asked["json_schema"]["name"] == f"{kind}_verdict"
        token = verdict_token(body)
        finish = shape.get("finish_reason", "stop")
        if "prompt" in body:  # the completions API: the text alone, as vLLM answers it there
            assert "messages" not in body
            return Reply(
                body=text_completion_body(fill(shape["content"], token, kind), body["model"], finish)
            )
        message: dict[str, Any] = {"role": "assistant"}
        message["content"] = fill_parts(shape["content"], token, kind)
        if "reasoning_content" in shape:
            message["reasoning_content"] = fill(shape["reasoning_content"], token, kind)
        if "refusal" in shape:
            message["refusal"] = shape["refusal"]
        reply = completion_body(None, body["model"], finish)
        reply["choices"][0]["message"] = message
        return Reply(body=reply)

    return answer


def ask_once(bound, kind: str) -> Exchange | JudgeFailure:
    """One question through the provider's own client: its messages, its parser, its runner."""
    provider = bound.provider
    prompt, first, second = "What is 6 * 7?", "6 * 7 = 42", "42, since 6 * 7 = 42"
    if kind == "rubric":
        messages, parse = provider.messages(prompt, first), provider._parse
    elif kind == "pairwise":
        messages, parse = provider.pair_messages(prompt, first, second), parse_winner
    else:
        messages = provider.list_messages(prompt, [first, second])
        parse = partial(parse_ranking, labels=["A", "B"])
    deadline = time.monotonic() + 30

    async def ask() -> Exchange | JudgeFailure:
        try:
            return await provider.runner.ask(messages, parse, deadline)
        except JudgeFailure as failure:
            return failure

    return provider.runner.run(ask, deadline)


def bind_kind(kind: str, judge, api: str) -> Any:
    if kind == "rubric":
        return bind("nih-rubric", judge, parse_retries=0, api=api)
    return bind("nih-compare", judge, parse_retries=0, mode=kind, api=api)


def asked_over(judge, api: str) -> None:
    """Every request went to ``api``'s endpoint (a prompt for completions, messages for chat)."""
    assert judge.requests
    assert {"prompt" if "prompt" in body else "messages" for body in judge.requests} == {
        "prompt" if api == "completions" else "messages"
    }


@pytest.mark.parametrize(("shape", "kind", "api"), CASES)
def test_each_reply_shape_is_read_as_the_judge_meant_or_refused_with_its_reason(judge, shape, kind, api):
    shape = over(shape, api)
    judge.answer = server_answer(shape, kind)
    bound = bind_kind(kind, judge, api)
    outcome = ask_once(bound, kind)
    asked_over(judge, api)
    expect = shape["expect"]
    if expect == "verdict":
        assert isinstance(outcome, Exchange), outcome.reason  # type: ignore[union-attr]
        assert outcome.verdict.value == READ[kind]
        assert outcome.verdict.rationale == VERDICTS[kind]["rationale"]
        assert outcome.format == FORMAT_OF_SERVER[shape["server"]]
    else:
        assert isinstance(outcome, JudgeFailure), outcome
        assert outcome.kind == expect["failure"]
        assert expect["reason"] in outcome.reason
    close(bound)


@pytest.mark.parametrize(("shape", "kind", "api"), CASES)
def test_each_reply_shape_through_a_whole_group_charges_no_candidate_for_the_judges_form(
    judge, shape, kind, api
):
    shape = over(shape, api)
    judge.answer = server_answer(shape, kind)
    bound = bind_kind(kind, judge, api)
    result = bound.score_group("g", rollouts("6 * 7 = 42", "42, since 6 * 7 = 42"))
    asked_over(judge, api)
    statuses = {item.result.status for item in result.items}
    if shape["expect"] == "verdict":
        assert statuses == {"scored"}
        # rubric: 7 on [1, 10]; compare: the judge names B (or ranks B first) in both orders,
        # a position flip, so the two candidates tie
        expected = (7 - 1) / 9 if kind == "rubric" else 0.5
        assert [item.result.terms["score"] for item in result.items] == [pytest.approx(expected)] * 2
        for item in result.items:
            diagnostics = {d.name: d.value for d in item.result.diagnostics}
            assert diagnostics["structured_output"] == FORMAT_CODES[FORMAT_OF_SERVER[shape["server"]]]
            assert diagnostics["parse_retries"] == 0.0
    else:
        # every reply of this judge is refused alike, the canary's too: an error naming the canary,
        # never a charge
        assert statuses == {"error"}
        for item in result.items:
            assert shape["expect"]["reason"] in item.result.reason
            assert "and the canary (" in item.result.reason and "failed too" in item.result.reason
    close(bound)
