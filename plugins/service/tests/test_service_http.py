"""The Reward Service over real HTTP on 127.0.0.1: endpoints, errors, vectors, OpenRLHF protocol,
auth, and the RemoteReward client against in-process scoring."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from service_fixtures import gsm8k_groups, start_server

import rewardkit
from rewardkit.contracts.errors import PreflightError, RewardContractError
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_service.client import RemoteReward, RemoteServiceError
from rewardkit_service.testing import ServerProcess
from rewardkit_testing.composition_vectors import check_vector, load_reward_vectors

CONFIG = """
rl.reward.provider: gsm8k
rl.group_size: 4
rewards.max_inflight: 256
rewards.service.allow:
  providers: {nonempty: {}, gsm8k: {}}
  spec_fields: [floor, gate, weight]
  components: any
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_server(tmp_path_factory.mktemp("svc"), CONFIG, "--max-body-bytes", "2000000")
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output


def request(
    method: str,
    url: str,
    body: Any = None,
    *,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    async def go() -> tuple[int, dict[str, str], bytes]:
        async with aiohttp.ClientSession() as session:
            data = raw if raw is not None else None if body is None else json.dumps(body).encode()
            async with session.request(method, url, data=data, headers=headers) as reply:
                return reply.status, dict(reply.headers), await reply.read()

    return asyncio.run(go())


def in_process(groups: list[dict[str, Any]], **rl: Any) -> rewardkit.Reward:
    return rewardkit.load({"rl": {"reward": {"provider": "gsm8k"}, "group_size": 4, **rl}})


# -- plain endpoints -----------------------------------------------------------------------------


def test_health_ready_and_providers_match_the_cli(server):
    assert request("GET", server.url + "/healthz")[0] == 200
    status, _, body = request("GET", server.url + "/readyz")
    assert (status, json.loads(body)) == (200, {"status": "ready"})
    status, _, body = request("GET", server.url + "/v1/providers")
    assert status == 200
    assert json.loads(body) == [entry.describe() for entry in resolve_catalog().entries()]


def test_openapi_documents_every_endpoint_with_the_validation_models(server):
    status, _, body = request("GET", server.url + "/openapi.json")
    document = json.loads(body)
    assert status == 200 and document["openapi"].startswith("3.1")
    assert set(document["paths"]) == {
        "/v1/score",
        "/v1/resolve",
        "/v1/compose",
        "/get_reward",
        "/v1/providers",
        "/metrics",
        "/openapi.json",
        "/healthz",
        "/readyz",
    }
    schemas = document["components"]["schemas"]
    score = schemas["ScoreRequest"]
    assert {"groups", "provider", "spec", "deadline_s"} <= set(score["properties"])
    assert score["additionalProperties"] is False
    assert schemas["Rollout"]["required"] == ["trajectory_id", "completion"]
    body_ref = document["paths"]["/v1/score"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body_ref == {"$ref": "#/components/schemas/ScoreRequest"}


def test_metrics_are_prometheus_text_with_every_family(server):
    request("POST", server.url + "/v1/score", {"groups": gsm8k_groups(2)})
    status, headers, body = request("GET", server.url + "/metrics")
    text = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    for family in (
        "rewardkit_requests_total",
        "rewardkit_rollouts_total",
        "rewardkit_failures_total",
        "rewardkit_wait_seconds_bucket",
        "rewardkit_score_seconds_count",
        "rewardkit_inflight_rollouts",
        "rewardkit_waiting_requests",
    ):
        assert family in text, family
    assert 'rewardkit_requests_total{code="200",endpoint="/v1/score"}' in text


# -- scoring -------------------------------------------------------------------------------------


def test_score_returns_finals_breakdown_advantages_and_identities(server):
    groups = gsm8k_groups(8)
    status, _, body = request("POST", server.url + "/v1/score", {"groups": groups, "deadline_s": 30})
    assert status == 200, body
    answer = json.loads(body)
    expected = in_process(groups).score(groups)
    assert [g["group_id"] for g in answer["groups"]] == [g["group_id"] for g in groups]
    for got, want in zip(answer["groups"], expected.groups):
        for candidate, reference in zip(got["candidates"], want.candidates):
            assert candidate["trajectory_id"] == reference.trajectory_id
            assert candidate["final"] == reference.final
            assert candidate["advantage"] == reference.advantage
            assert candidate["breakdown"] == reference.breakdown
    assert answer["providers"] == [record.to_json() for record in expected.providers]
    assert answer["metrics"] == expected.metrics


def test_a_request_may_name_another_provider_or_a_spec_the_allow_list_permits(server):
    group = {
        "group_id": "g",
        "rollouts": [
            {"trajectory_id": f"t{i}", "completion": c, "reference": "4"}
            for i, c in enumerate(["4", "A: 4", "", "x"])
        ],
    }
    spec = {
        "components": [{"provider": "nonempty", "gate": True}, {"provider": "gsm8k", "weight": 2}],
        "floor": -1,
    }
    status, _, body = request("POST", server.url + "/v1/score", {"groups": [group], "spec": spec})
    assert status == 200, body
    finals = [c["final"] for c in json.loads(body)["groups"][0]["candidates"]]
    local = rewardkit.load({"rl": {"reward": {"spec": spec}, "group_size": 4}}).score([group])
    assert finals == [c.final for _, c in local.candidates()]
    assert finals[2] == -1.0  # the empty completion fails the gate and takes the floor


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (
            {"groups": [{"group_id": "g", "rollouts": [{"trajectory_id": 3, "completion": "x"}]}]},
            "groups[0].rollouts[0].trajectory_id",
        ),
        (
            {"groups": [{"group_id": "g", "rollouts": [{"trajectory_id": "t"}]}]},
            "groups[0].rollouts[0].completion",
        ),
        (
            {
                "groups": [
                    {"group_id": "g", "rollouts": [{"trajectory_id": "t", "completion": "x", "colour": 1}]}
                ]
            },
            "groups[0].rollouts[0].colour",
        ),
        ({"groups": []}, "groups"),
        (
            {
                "groups": [{"group_id": "g", "rollouts": [{"trajectory_id": "t", "completion": "x"}]}],
                "deadline_s": -1,
            },
            "deadline_s",
        ),
        ({"grops": []}, "grops"),
    ],
)
def test_malformed_requests_get_400_naming_the_field_path(server, body, path):
    status, _, raw = request("POST", server.url + "/v1/score", body)
    error = json.loads(raw)["error"]
    assert status == 400 and error["code"] == "invalid_request"
    assert path in [detail["path"] for detail in error["details"]], error
    assert error["message"].startswith(path) or path in error["message"]


def test_broken_json_gets_400_and_wrong_methods_are_not_500(server):
    status, _, raw = request("POST", server.url + "/v1/score", raw=b'{"groups": [')
    assert status == 400 and "JSON" in json.loads(raw)["error"]["message"]
    status, _, _ = request("POST", server.url + "/v1/score", raw=b"")
    assert status == 400
    assert request("GET", server.url + "/v1/score")[0] == 405
    assert request("GET", server.url + "/nowhere")[0] == 404


def test_limits_are_refused_at_once_with_413_and_the_limit(server):
    rollouts = [{"trajectory_id": f"t{i}", "completion": "1", "reference": "1"} for i in range(257)]
    status, _, raw = request(
        "POST", server.url + "/v1/score", {"groups": [{"group_id": "big", "rollouts": rollouts}]}
    )
    error = json.loads(raw)["error"]
    assert status == 413 and error["limit"] == 256 and "257 rollouts" in error["message"]
    status, _, raw = request("POST", server.url + "/v1/score", raw=b"{" + b" " * 2_000_001 + b"}")
    assert status == 413 and json.loads(raw)["error"]["limit"] == 2_000_000


def test_contract_and_preflight_failures_are_422_with_the_reason(server):
    three = gsm8k_groups(1)[0]
    three["rollouts"] = three["rollouts"][:3]
    status, _, raw = request("POST", server.url + "/v1/score", {"groups": [three]})
    error = json.loads(raw)["error"]
    assert status == 422 and error["code"] == "contract_violation" and "p0" in error["message"]
    status, _, raw = request(
        "POST", server.url + "/v1/score", {"groups": gsm8k_groups(1), "provider": "no-such-provider"}
    )
    error = json.loads(raw)["error"]
    assert status == 422 and "no-such-provider" in error["message"] and "gsm8k" in error["message"]


# -- composition vectors through HTTP ------------------------------------------------------------


# the repository's vectors: the core may be installed from a wheel, away from testdata/
VECTORS = load_reward_vectors(Path(__file__).resolve().parents[3] / "testdata" / "reward_vectors.json")


@pytest.fixture(scope="module")
def compose_over_http(server):
    def compose_fn(spec: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
        status, _, raw = request(
            "POST", server.url + "/v1/compose", {"spec": spec, "candidates": [components]}
        )
        answer = json.loads(raw)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {answer['error']['message']}")
        return answer["results"][0]

    return compose_fn


@pytest.mark.parametrize("case", VECTORS, ids=[case["name"] for case in VECTORS])
def test_reward_vectors_through_the_service(case, compose_over_http):
    check_vector(case, compose_over_http)


# -- OpenRLHF ------------------------------------------------------------------------------------
# Here the protocol is tested from its documented shapes: a POST of {"query", "prompts", "labels"}
# lists, answered with "rewards", "scores" and "extra_logs". OpenRLHF's own remote-RM client is run
# against this endpoint in integrations/openrlhf (tox env `openrlhf`), where OpenRLHF is installed.


def test_get_reward_speaks_openrlhf_remote_rm_protocol(server):
    groups = gsm8k_groups(3)
    rollouts = [r for g in groups for r in g["rollouts"]]
    prompts = [f"Question: {r['prompt']}\nAnswer: " for r in rollouts]
    payload = {
        "query": [p + r["completion"] for p, r in zip(prompts, rollouts)],
        "prompts": prompts,
        "labels": [r["reference"] for r in rollouts],
    }
    status, _, raw = request("POST", server.url + "/get_reward", payload)
    assert status == 200, raw
    answer = json.loads(raw)
    assert set(answer) == {"rewards", "scores", "extra_logs"}
    local = rewardkit.load({"rl": {"reward": {"provider": "gsm8k"}}})
    expected = [
        c.final for _, c in local.score([(f"q{i}", [r]) for i, r in enumerate(rollouts)]).candidates()
    ]
    assert answer["rewards"] == expected == answer["scores"]
    assert 0 < sum(expected) < len(expected)  # real data: some right, some wrong
    assert all(len(values) == len(rollouts) for values in answer["extra_logs"].values())
    status, _, raw = request("POST", server.url + "/get_reward", {"query": ["a", "b"], "labels": ["1"]})
    assert status == 400 and "labels" in json.loads(raw)["error"]["message"]


def test_get_reward_refuses_a_reward_that_needs_candidate_fields_it_cannot_carry(tmp_path: Path):
    # `counted-or-skip` reads each completion's token count and skips a candidate without one, as
    # the rl pack's `overlong` does; OpenRLHF's body has none, so every query would be skipped
    # without a word. The service says so instead, naming the field.
    served = "\n".join(
        [
            "rl.reward.catalog: charges_fixtures:catalog",
            "rl.reward.spec:",
            "  components:",
            "    - {provider: nonempty}",
            "    - {provider: counted-or-skip, weight: 0.5}",
        ]
    )
    with start_server(tmp_path, served) as server:
        status, _, raw = request(
            "POST", server.url + "/get_reward", {"query": ["1 + 1 = 2"], "labels": ["2"]}
        )
        assert status == 422, raw
        error = json.loads(raw)["error"]
        assert error["code"] == "needs_candidate_fields"
        assert "completion_token_count" in error["message"] and "/v1/score" in error["message"]


def test_get_reward_cuts_responses_exactly_as_the_in_process_binding(server):
    from rewardkit_bindings.openrlhf import reward_func

    prompts = ["Q: 2+2?\nA: ", "Q: 3+3?\nA: ", "Q: 2+2?\nA:"]
    queries = [
        prompts[0] + "The answer is 4<|im_end|>",
        prompts[1] + "The answer is 7</s><pad>",
        prompts[2] + " #### 4\n\nQ: 2+2?\nA:",  # the model repeats the prompt after its answer
    ]
    labels = ["#### 4", "#### 6", "#### 4"]
    status, _, raw = request(
        "POST", server.url + "/get_reward", {"query": queries, "prompts": prompts, "labels": labels}
    )
    assert status == 200, raw
    config = {"rl": {"reward": {"provider": "gsm8k"}}}
    local = reward_func(queries, prompts, labels, config=config)
    assert json.loads(raw)["rewards"] == [float(x) for x in local["rewards"]] == [1.0, 0.0, 1.0]
    status, _, raw = request(
        "POST",
        server.url + "/get_reward",
        {"query": ["no prompt here"], "prompts": ["Q: 1?"], "labels": ["1"]},
    )
    assert status == 422 and "does not start with its prompt" in json.loads(raw)["error"]["message"]


# -- the client ----------------------------------------------------------------------------------


def test_remote_reward_equals_in_process_scoring(server):
    groups = gsm8k_groups(40)
    config = {"rl": {"reward": {"provider": "gsm8k", "service": server.url}, "group_size": 4}}
    with rewardkit.load(config) as remote:
        assert isinstance(remote, RemoteReward)
        local = in_process(groups)
        assert (
            remote.spec == local.spec and remote.providers == local.providers and remote.needs == local.needs
        )
        assert remote.score(groups) == local.score(groups)
        assert asyncio.run(remote.ascore(groups[:5])) == local.score(groups[:5])
        trajectories = [
            {"group_id": g["group_id"], "rollouts": [dict(r) for r in g["rollouts"]]} for g in groups
        ]
        remote.process(trajectories)
        assert (
            trajectories[0]["rollouts"][0]["reward"]["final"]
            == local.score(groups[:1]).groups[0].candidates[0].final
        )


def test_remote_reward_splits_large_calls_and_still_agrees(tmp_path):
    with start_server(tmp_path, CONFIG.replace("256", "16")) as small:
        groups = gsm8k_groups(12)  # 48 rollouts: three requests of 16
        for scaling in ("group", "batch"):
            config = {
                "rl": {
                    "reward": {"provider": "gsm8k", "service": small.url},
                    "group_size": 4,
                    "advantage_scaling": scaling,
                },
                "rewards": {"max_inflight": 16},
            }
            with rewardkit.load(config) as remote:
                got = remote.score(groups)
            want = in_process(groups, advantage_scaling=scaling).score(groups)
            assert got.groups == want.groups
            for name, value in want.metrics.items():
                assert got.metrics[name] == pytest.approx(value, rel=1e-12), name


def test_remote_reward_raises_the_servers_errors_as_rewardkit_errors(server):
    with pytest.raises(PreflightError, match="no-such"):
        rewardkit.load({"rl": {"reward": {"provider": "no-such", "service": server.url}}})
    with rewardkit.load(
        {"rl": {"reward": {"provider": "gsm8k", "service": server.url}, "group_size": 4}}
    ) as remote:
        group = gsm8k_groups(1)[0]
        group["rollouts"] = group["rollouts"][:2]
        with pytest.raises(RewardContractError, match="p0"):
            remote.score([group])


def test_remote_reward_fails_at_once_on_an_unreachable_service():
    config = {
        "rl": {"reward": {"provider": "gsm8k", "service": "http://127.0.0.1:9"}},
        "rewards": {"deadline_s": 0.5},
    }
    with pytest.raises(RemoteServiceError, match=r"http://127.0.0.1:9: the connection was refused"):
        rewardkit.load(config)


# -- auth ----------------------------------------------------------------------------------------

TOKENS = ("alpha-7f3c9e2b41d8", "beta-52ad90c6e1f4")


def test_auth_missing_wrong_and_right_tokens(tmp_path: Path):
    token_file = tmp_path / "tokens"
    token_file.write_text(f"# service tokens\n{TOKENS[1]}\n")
    with start_server(
        tmp_path, CONFIG, "--tokens-file", str(token_file), env={"REWARDKIT_TOKENS": TOKENS[0]}
    ) as svc:
        body = {"groups": gsm8k_groups(1)}
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Basic {TOKENS[0]}"},
            {"Authorization": f"Bearer {TOKENS[0]}x"},
        ):
            status, reply_headers, raw = request("POST", svc.url + "/v1/score", body, headers=headers)
            assert status == 401 and reply_headers.get("WWW-Authenticate") == "Bearer"
            assert json.loads(raw) == {
                "error": {"code": "unauthorized", "message": "unauthorized", "details": []}
            }
        for path in ("/v1/providers", "/metrics", "/openapi.json"):
            assert request("GET", svc.url + path)[0] == 401
        assert request("GET", svc.url + "/healthz")[0] == 200
        assert request("GET", svc.url + "/readyz")[0] == 200
        for token in TOKENS:
            status, _, raw = request(
                "POST", svc.url + "/v1/score", body, headers={"Authorization": f"Bearer {token}"}
            )
            assert status == 200, raw
        config = {"rl": {"reward": {"provider": "gsm8k", "service": svc.url}, "group_size": 4}}
        with pytest.raises(RemoteServiceError, match="unauthorized"):
            RemoteReward(rewardkit.config.load_config(config), token="nope")
        with RemoteReward(rewardkit.config.load_config(config), token=TOKENS[1]) as remote:
            assert remote.score(gsm8k_groups(2)) == in_process([]).score(gsm8k_groups(2))
        metrics = request("GET", svc.url + "/metrics", headers={"Authorization": f"Bearer {TOKENS[0]}"})[
            2
        ].decode()
        assert 'rewardkit_failures_total{cause="unauthorized"} 8.0' in metrics
    assert svc.output and all(token not in svc.output for token in TOKENS)


# -- the command ---------------------------------------------------------------------------------


def test_serve_refuses_a_bad_configuration_and_an_unknown_provider(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text("rl.reward.provider: gsm8k\nrewards.max_inflite: 3\n")
    done = subprocess.run(
        [sys.executable, "-m", "rewardkit.cli", "serve", str(bad), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "rewards.max_inflight" in done.stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("rl.reward.provider: no-such-provider\n")
    with pytest.raises(RuntimeError) as caught:
        ServerProcess(unknown, start_timeout_s=60).start()
    assert "no-such-provider" in str(caught.value) and "startup failed" in str(caught.value)
