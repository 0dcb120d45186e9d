"""``code-tests`` and ``math`` params: declared schemas with documented maxima, ``isolation: none``
only with the operator's setting, and none of it settable by a Reward Service client.

The client tests send a completion that writes a file on the host if it runs unsandboxed; the
server has ``REWARDKIT_ALLOW_UNSANDBOXED=1`` (so only the selection policy stands between the
request and the host), and the file must not exist afterwards.
"""

from __future__ import annotations

import asyncio
import json
import logging
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import rewardkit
from rewardkit.contracts.errors import PreflightError, SelectionRefused
from rewardkit.contracts.params import UNSANDBOXED_ENV, operator_only_reason
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_rl.code import REVISION
from rewardkit_rl.code.compare import COMPARE_MODES
from rewardkit_rl.code.params import CodeTestsParams
from rewardkit_rl.verifiers import MathParams
from rewardkit_service.testing import ServerProcess, write_config

SERVER = """
rl.reward.provider: code-tests
rl.group_size: 1
rewards.service.allow:
  providers: {code-tests: {params: [compare, float_rel_tol]}, math: {}}
  components: any
"""
OPERATOR_ONLY = {
    "code-tests": {
        "timeout_s": ("resource", 1e9),
        "memory_mb": ("resource", 8192),
        "max_processes": ("resource", 256),
        "output_limit_bytes": ("resource", 64 << 20),
        "concurrency": ("resource", 100000),
        "isolation": ("isolation", "none"),
        "cgroup": ("isolation", "off"),
        # starved_cpu_share and starved_wait_share are deprecated and ignored (revision 4): a client
        # setting one changes nothing, identity included, so it is not refused.
    },
    "math": {
        "timeout_s": ("resource", 60),
        "workers": ("resource", 100000),
        "memory_limit_mb": ("resource", 65536),
        "max_answer_chars": ("resource", 100000),
    },
}
CASES = [
    (provider, name, value)
    for provider, fields in OPERATOR_ONLY.items()
    for name, (_, value) in fields.items()
]


def post(url: str, body: Any) -> tuple[int, dict[str, Any]]:
    async def go() -> tuple[int, dict[str, Any]]:
        async with aiohttp.ClientSession() as session, session.post(url, json=body) as reply:
            return reply.status, json.loads(await reply.read())

    return asyncio.run(go())


def escaping_group(marker: Path) -> dict[str, Any]:
    """One candidate that writes ``marker`` on the host when it runs outside a sandbox."""
    program = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n\ndef f():\n    return 1\n"
    rollout = {"trajectory_id": "a", "completion": program, "reference": {"test_list": ["assert f() == 1"]}}
    return {"group_id": "g", "rollouts": [rollout]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("code-service")
    process = ServerProcess(write_config(folder, SERVER), env={UNSANDBOXED_ENV: "1"}).start()
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output


# -- the schemas ----------------------------------------------------------------------------------


def test_code_tests_and_math_declare_schemas_with_documented_maxima():
    catalog = resolve_catalog()
    assert catalog.entry("code-tests").params_model is CodeTestsParams and REVISION == "5"
    assert catalog.entry("math").params_model is MathParams
    assert typing.get_args(CodeTestsParams.model_fields["compare"].annotation) == COMPARE_MODES
    for provider, model in (("code-tests", CodeTestsParams), ("math", MathParams)):
        for name, (reason, _) in OPERATOR_ONLY[provider].items():
            assert operator_only_reason(model, name) == reason, (provider, name)
            field = model.model_fields[name]
            if reason == "resource":
                assert any(getattr(item, "le", None) is not None for item in field.metadata), name
    assert [
        name for name in CodeTestsParams.model_fields if operator_only_reason(CodeTestsParams, name) is None
    ] == [
        "compare",
        "float_rel_tol",
        "float_abs_tol",
    ]
    maxima = {
        name: entry["expects"] for name, entry in catalog.entry("code-tests").describe()["params"].items()
    }
    assert maxima["timeout_s"] == "a positive number of seconds, at most 60"
    assert maxima["concurrency"] == "an integer or null in [1, 256]"


@pytest.mark.parametrize(
    ("provider", "params", "message"),
    [
        (
            "code-tests",
            {"timeout_s": 1e9},
            "param timeout_s must be a positive number of seconds, at most 60",
        ),
        (
            "code-tests",
            {"concurrency": 100000},
            r"param concurrency must be an integer or null in \[1, 256\]",
        ),
        ("code-tests", {"memory_mb": 10**6}, r"param memory_mb must be an integer in \[16, 8192\]"),
        ("code-tests", {"max_processes": 10**4}, r"param max_processes must be an integer in \[1, 256\]"),
        (
            "code-tests",
            {"output_limit_bytes": 1 << 40},
            r"output_limit_bytes must be an integer in \[1, 67108864\]",
        ),
        ("code-tests", {"timeout_s": "5"}, "param timeout_s must be a number; got '5'"),
        ("code-tests", {"concurrency": True}, "param concurrency must be an integer or null; got True"),
        ("code-tests", {"isolation": "docker"}, "param isolation must be 'bwrap' or 'none'; got 'docker'"),
        ("math", {"workers": 100000}, r"param workers must be an integer in \[0, 64\]; got 100000"),
        ("math", {"timeout_s": 1e9}, r"param timeout_s must be in \(0, 60\] seconds"),
        ("math", {"memory_limit_mb": 0}, r"param memory_limit_mb must be an integer in \[256, 65536\]"),
    ],
)
def test_a_param_over_its_maximum_or_of_the_wrong_type_fails_at_load(provider, params, message):
    with pytest.raises(PreflightError, match=message):
        rewardkit.load({"rl": {"reward": {"provider": provider, "params": params}}})


def test_isolation_none_needs_the_operator_setting_in_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    config = {"rl": {"reward": {"provider": "code-tests", "params": {"isolation": "none"}}}}
    monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)
    with pytest.raises(PreflightError, match=f"isolation='none'.*set {UNSANDBOXED_ENV}=1"):
        rewardkit.load(config)
    monkeypatch.setenv(UNSANDBOXED_ENV, "1")
    with caplog.at_level(logging.WARNING, logger="rewardkit.contracts.params"):
        rewardkit.load(config).close()
    assert "'code-tests' runs WITHOUT a sandbox" in caplog.text


def test_a_service_configured_with_isolation_none_without_the_setting_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)
    config = write_config(tmp_path, "rl.reward.provider: code-tests\nrl.reward.params: {isolation: none}\n")
    with pytest.raises(RuntimeError) as caught:
        ServerProcess(config).start()
    assert UNSANDBOXED_ENV in str(caught.value) and "startup failed" in str(caught.value)


# -- from a client --------------------------------------------------------------------------------


def test_the_escaping_completion_does_write_the_file_when_run_unsandboxed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The control for the tests below: unsandboxed, this completion really writes the file.
    monkeypatch.setenv(UNSANDBOXED_ENV, "1")
    marker = tmp_path / "escaped"
    config = {"rl": {"reward": {"provider": "code-tests", "params": {"isolation": "none"}}, "group_size": 1}}
    with rewardkit.load(config) as reward:
        batch = reward.score([escaping_group(marker)])
    assert batch.groups[0].candidates[0].final == 1.0 and marker.read_text() == "ran"


def test_isolation_none_from_a_client_is_403_and_runs_nothing(server: ServerProcess, tmp_path: Path):
    marker = tmp_path / "escaped"
    for path in ("/v1/score", "/v1/resolve"):
        body: dict[str, Any] = {"provider": "code-tests", "params": {"isolation": "none"}}
        if path == "/v1/score":
            body["groups"] = [escaping_group(marker)]
        status, answer = post(server.url + path, body)
        assert status == 403, answer
        assert answer["error"]["details"][0]["path"] == "params.isolation"
        assert "operator-only (isolation)" in answer["error"]["message"]
    spec = {"components": [{"provider": "code-tests", "params": {"isolation": "none", "compare": "exact"}}]}
    status, answer = post(server.url + "/v1/score", {"groups": [escaping_group(marker)], "spec": spec})
    assert status == 403 and answer["error"]["details"][0]["path"] == "spec.components[0].params.isolation"
    assert not marker.exists()


@pytest.mark.parametrize(("provider", "name", "value"), CASES)
def test_each_operator_only_param_from_a_client_is_403(server: ServerProcess, provider, name, value):
    status, answer = post(server.url + "/v1/resolve", {"provider": provider, "params": {name: value}})
    assert status == 403, answer
    assert answer["error"]["code"] == "selection_refused"
    assert answer["error"]["details"][0]["path"] == f"params.{name}"


def test_allowed_code_tests_params_still_work(server: ServerProcess):
    status, answer = post(
        server.url + "/v1/resolve",
        {"provider": "code-tests", "params": {"compare": "exact", "float_rel_tol": 0.01}},
    )
    assert status == 200, answer
    assert answer["spec"]["components"][0]["params"] == {"compare": "exact", "float_rel_tol": 0.01}
    status, answer = post(server.url + "/v1/resolve", {"provider": "math"})
    assert status == 200, answer


def test_remote_reward_reports_the_refused_param_at_load(server: ServerProcess):
    config = {
        "rl": {
            "reward": {"provider": "code-tests", "params": {"timeout_s": 60}, "service": server.url},
            "group_size": 1,
        }
    }
    with pytest.raises(SelectionRefused) as caught:
        rewardkit.load(config)
    assert caught.value.field == "params.timeout_s" and "operator-only (resource)" in str(caught.value)
    config["rl"]["reward"]["params"] = {}
    with rewardkit.load(config) as remote:  # exactly the server's reward: admitted
        assert remote.providers[0].provider == "code-tests"
