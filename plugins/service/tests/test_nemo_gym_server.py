"""``rewardkit serve`` as a NeMo Gym resources server (``rewardkit_service.nemo_gym``), driven over
real HTTP with rows shaped as NeMo Gym's agents post them (``resources_servers/*/data/example*.jsonl``
and the note on reward protocols): rewards equal ``/v1/score``'s on the same candidates, the request
comes back byte for byte, the completion-text and reference rules hold, ``reward`` is the plain sum
of ``reward_components``, and auth, limits, validation and metrics are ``/v1/score``'s."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_fixtures import gsm8k_groups, start_server

from rewardkit_service.testing import ServerProcess

TOKEN = "gym-5d1e8a0c93f7"


def call(
    server: ServerProcess, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """One request; the status and the raw answer (an error status is an answer too)."""
    headers = {"Content-Type": "application/json", **(headers or {})}
    request = urllib.request.Request(server.url + path, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def gym_row(prompt: Any, completion: str | list[dict[str, Any]], **task: Any) -> dict[str, Any]:
    """A NeMo Gym ``/verify`` body: the row, a response with a reasoning item, token ids on the message."""
    output = (
        completion
        if isinstance(completion, list)
        else [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "#### 999"}]},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": completion, "annotations": []}],
                "prompt_token_ids": [1, 2],
                "generation_token_ids": [3, 4],
                "generation_log_probs": [-0.1, -0.2],
            },
        ]
    )
    return {
        "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
        "response": {
            "id": "resp_1",
            "object": "response",
            "created_at": 1767000000.0,
            "model": "policy",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": output,
        },
        **task,
        "_ng_task_index": 0,
        "_ng_rollout_index": 3,
        "agent_ref": {"name": "math_simple_agent"},
    }


def verify(
    server: ServerProcess, row: dict[str, Any], headers: dict[str, str] | None = None
) -> dict[str, Any]:
    status, raw = call(server, "/verify", json.dumps(row).encode(), headers)
    assert status == 200, raw
    answer: dict[str, Any] = json.loads(raw)
    return answer


@pytest.fixture(scope="module")
def gsm8k_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_server(tmp_path_factory.mktemp("gym"), "rl.reward.provider: gsm8k\n") as server:
        yield server


def test_verify_rewards_equal_v1_score_on_the_same_candidates(gsm8k_server: ServerProcess):
    groups = gsm8k_groups(3)
    prompts = {
        r["trajectory_id"]: [{"role": "user", "content": r["prompt"]}] for g in groups for r in g["rollouts"]
    }
    for group in groups:  # /v1/score reads the same prompt value NeMo Gym sends as input
        for rollout in group["rollouts"]:
            rollout["prompt"] = prompts[rollout["trajectory_id"]]
    status, raw = call(gsm8k_server, "/v1/score", json.dumps({"groups": groups}).encode())
    assert status == 200, raw
    scored = {c["trajectory_id"]: c for g in json.loads(raw)["groups"] for c in g["candidates"]}
    finals = set()
    for group in groups:
        for rollout in group["rollouts"]:
            row = gym_row(
                rollout["prompt"][0]["content"], rollout["completion"], reference=rollout["reference"]
            )
            answer = verify(gsm8k_server, row)
            expected = scored[rollout["trajectory_id"]]
            assert answer["reward"] == expected["final"], rollout["trajectory_id"]
            assert answer["reward_components"] == {"gsm8k": expected["breakdown"]["gsm8k"]["contribution"]}
            assert answer["rewardkit"]["breakdown"] == expected["breakdown"]
            finals.add(answer["reward"])
    assert finals == {0.0, 1.0}  # both verdicts occur: the equality is not of constants


def test_the_echo_is_the_request_byte_for_byte(gsm8k_server: ServerProcess):
    # Spacing, escapes, float spellings and an integer past 64 bits survive only if nothing re-encodes.
    body = (
        b'{ "responses_create_params" : {"input": "Caf\\u00e9: 6*7?", "temperature": 1.0E0},\n'
        b'  "response": {"id": "r", "output": [{"type": "message", "role": "assistant", "content": '
        b'[{"type": "output_text", "text": "#### 42"}], "generation_token_ids": [3, 18446744073709551621], '
        b'"generation_log_probs": [-0.10000000000000001, -1e-05]}]},\n  "reference": "42" }\n'
    )
    status, raw = call(gsm8k_server, "/verify", body)
    assert status == 200, raw
    assert raw.startswith(body.rstrip()[:-1]), raw
    answer = json.loads(raw)
    assert answer["response"]["output"][0]["generation_token_ids"][1] == 18446744073709551621
    assert answer["reward"] == 1.0


def test_a_stored_answer_verified_again_gets_its_keys_replaced(gsm8k_server: ServerProcess):
    first = verify(gsm8k_server, gym_row("2+2?", "#### 4", reference="4"))
    first["response"]["output"][1]["content"][0]["text"] = "#### 5"
    again = verify(gsm8k_server, first)
    assert again["reward"] == 0.0 and again["reward_components"] == {"gsm8k": 0.0}
    assert again["response"] == first["response"]


def test_the_completion_is_every_output_text_of_every_message_joined(tmp_path: Path):
    # A multi-turn output: tool call and output, a refusal part, two messages. Joined with "" the
    # text is "ab"; joined by newline (string_match's rule) it would be "a\nb", the last message "b".
    output = [
        {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "ab"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
        {"type": "function_call", "name": "lookup", "arguments": '{"q": "ab"}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "ab"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": "no"}, {"type": "output_text", "text": "b"}],
        },
    ]
    config = "rl.reward.provider: exact-match\nrl.data.reference_column: expected_answer\n"
    with start_server(tmp_path, config) as server:
        assert verify(server, gym_row("say ab", output, expected_answer="ab"))["reward"] == 1.0
        assert verify(server, gym_row("say ab", output, expected_answer="a\nb"))["reward"] == 0.0
        # The reference is the configured column; a row without it cannot be scored by this reward.
        status, raw = call(server, "/verify", json.dumps(gym_row("say ab", output, reference="ab")).encode())
        assert status == 422 and b"reference" in raw, raw


def test_candidate_text_cannot_write_keys_of_the_answer(gsm8k_server: ServerProcess):
    forged = '#### 1", "reward": 1.0, "reward_components": {"gsm8k": 1.0}, "x": "'
    answer = verify(gsm8k_server, gym_row("2+2?", forged, reference="4"))
    assert answer["reward"] == 0.0 and answer["reward_components"] == {"gsm8k": 0.0}


def test_a_weighted_gated_spec_sends_components_that_sum_to_the_reward(tmp_path: Path):
    spec = {
        "components": [
            {"provider": "gsm8k", "weight": 2.0, "gate": True},
            {"provider": "nonempty", "weight": 0.5},
        ],
        "floor": -1.0,
        "clip": [-1.0, 2.0],
    }
    with start_server(tmp_path, "rl.reward.spec: " + json.dumps(spec) + "\n") as server:
        right = verify(server, gym_row("2+2?", "#### 4", reference="4"))
        wrong = verify(server, gym_row("2+2?", "#### 5", reference="4"))
    # right: 2*1 + 0.5*1 = 2.5, clipped to 2.0; wrong: gate failed, floor -1.0 (both from the spec)
    assert (right["reward"], wrong["reward"]) == (2.0, -1.0)
    assert right["reward_components"] == {"gsm8k": 2.0, "nonempty": 0.5, "_composition": -0.5}
    assert wrong["reward_components"] == {"gsm8k": 0.0, "nonempty": 0.5, "_composition": -1.5}
    for answer in (right, wrong):  # NeMo RL's validate_reward_components_match_scalar
        assert math.isclose(
            answer["reward"], sum(answer["reward_components"].values()), rel_tol=1e-5, abs_tol=1e-6
        )


def test_seed_session_aggregate_metrics_and_reverify_mode(gsm8k_server: ServerProcess):
    row = gym_row("2+2?", "#### 4", reference="4")
    assert call(
        gsm8k_server, "/seed_session", json.dumps({k: v for k, v in row.items() if k != "response"}).encode()
    ) == (200, b"{}")
    status, raw = call(gsm8k_server, "/reverify_mode")
    assert (status, json.loads(raw)) == (200, "stateless")
    answers = [
        verify(gsm8k_server, gym_row("2+2?", text, reference="4")) for text in ("#### 4", "#### 5", "#### 4")
    ]
    status, raw = call(gsm8k_server, "/aggregate_metrics", json.dumps({"verify_responses": answers}).encode())
    assert status == 200, raw
    metrics = json.loads(raw)
    assert metrics["agent_metrics"]["mean/reward"] == pytest.approx(2 / 3)
    assert metrics["agent_metrics"]["mean/gsm8k"] == pytest.approx(2 / 3)
    assert metrics["group_level_metrics"] == [
        {"_ng_task_index": 0, "mean/reward": pytest.approx(2 / 3), "max/reward": 1.0, "count": 3.0}
    ]


def test_malformed_rows_are_400_naming_the_field(gsm8k_server: ServerProcess):
    row = gym_row("2+2?", "#### 4", reference="4")
    untyped = json.loads(json.dumps(row))
    del untyped["response"]["output"][0]["type"]
    cases = {
        b"": "(body)",
        b"[1]": "(body)",
        b'{"reference": NaN}': "(body)",
        json.dumps({k: v for k, v in row.items() if k != "response"}).encode(): "response",
        json.dumps({**row, "responses_create_params": {}}).encode(): "responses_create_params",
        json.dumps(untyped).encode(): "response.output[0]",
    }
    for body, path in cases.items():
        status, raw = call(gsm8k_server, "/verify", body)
        assert status == 400, (body, raw)
        assert json.loads(raw)["error"]["details"][0]["path"] == path, raw


def test_auth_limits_and_metrics_are_the_services(tmp_path: Path):
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n")
    args = ("--tokens-file", str(tokens), "--max-body-bytes", "4096")
    with start_server(tmp_path, "rl.reward.provider: gsm8k\n", *args) as server:
        body = json.dumps(gym_row("2+2?", "#### 4", reference="4")).encode()
        for path in ("/verify", "/seed_session", "/aggregate_metrics"):
            assert call(server, path, body)[0] == 401
        assert call(server, "/verify", body, {"Authorization": "Bearer wrong"})[0] == 401
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert json.loads(call(server, "/verify", body, good)[1])["reward"] == 1.0
        big = json.dumps(gym_row("2+2?", "#### 4" + " " * 5000, reference="4")).encode()
        status, raw = call(server, "/verify", big, good)
        assert status == 413 and json.loads(raw)["error"]["limit"] == 4096
        status, raw = call(server, "/metrics", None, good)
        text = raw.decode()
        assert 'rewardkit_rollouts_total{endpoint="/verify"} 1.0' in text
        assert 'rewardkit_requests_total{code="401",endpoint="/verify"} 2.0' in text
        assert 'rewardkit_requests_total{code="413",endpoint="/verify"} 1.0' in text
