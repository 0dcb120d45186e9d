"""Service params are the operator's: what a Reward Service client may select, the parameter
schemas that decide it, and a service that does not start open by accident.

The provider here (``policy_fixtures:guarded_catalog``) has one operator-only param of every kind
and logs every construction and every scoring to ``GUARDED_LOG``, so "nothing ran" is checked
rather than assumed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from policy_fixtures import GuardedParams
from service_fixtures import fixtures_pythonpath, start_server

import rewardkit
from rewardkit.config import ServiceAllow, load_config
from rewardkit.contracts.errors import ConfigError, PreflightError, SelectionRefused
from rewardkit.contracts.params import (
    UNSANDBOXED_ENV,
    derive_params_model,
    operator_only_reason,
    schema_document,
)
from rewardkit.scoring.composition import RewardSpec
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_service.auth import is_loopback
from rewardkit_service.policy import SelectionPolicy
from rewardkit_service.testing import ServerProcess

CATALOG = "policy_fixtures:guarded_catalog"
CONFIGURED = {"scale": 2.0, "timeout_s": 10.0}
SERVER = f"""
rl.reward.provider: guarded
rl.reward.params: {{scale: 2.0, timeout_s: 10.0}}
rl.reward.catalog: {CATALOG}
rl.group_size: 2
"""
ALLOWING = (
    SERVER
    + """
rewards.service.allow:
  providers: {guarded: {params: [scale]}, nonempty: {}}
"""
)
FORBIDDEN = [
    ("timeout_s", 1e9, "resource"),
    ("workers", 100000, "resource"),
    ("memory_mb", 4096, "resource"),
    ("isolation", "none", "isolation"),
    ("judge_url", "http://attacker.example", "url"),
    ("api_key_env", "AWS_SECRET_ACCESS_KEY", "credential"),
    ("cache_dir", "/etc", "path"),
]
GROUPS = [
    {
        "group_id": "g",
        "rollouts": [{"trajectory_id": "a", "completion": "abc"}, {"trajectory_id": "b", "completion": "de"}],
    }
]


def post(url: str, body: Any) -> tuple[int, dict[str, Any]]:
    async def go() -> tuple[int, dict[str, Any]]:
        async with aiohttp.ClientSession() as session, session.post(url, json=body) as reply:
            return reply.status, json.loads(await reply.read())

    return asyncio.run(go())


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    folder = tmp_path_factory.mktemp("guarded")
    log = folder / "guarded.log"
    process = start_server(folder, ALLOWING, env={"GUARDED_LOG": str(log)})
    try:
        yield process, log
    finally:
        assert process.stop() == 0, process.output


def client_config(url: str, **reward: Any) -> dict[str, Any]:
    selection = {"provider": "guarded", "params": dict(CONFIGURED), "catalog": CATALOG, **reward}
    return {"rl": {"reward": {**selection, "service": url}, "group_size": 2}}


# -- the parameter schema ------------------------------------------------------------------------


def test_schemas_are_derived_from_scorer_annotations_and_checked_strictly():
    catalog = resolve_catalog()
    document = catalog.entry("exact-match").describe()["params"]
    assert document == {
        "case_sensitive": {"expects": "true or false", "default": False},
        "collapse_whitespace": {"expects": "true or false", "default": True},
    }
    assert (
        catalog.entry("countdown").describe()["params"]["policy"]["expects"] == "one of ['strict', 'lenient']"
    )
    for name, params, wanted in (
        ("exact-match", {"case_sensitive": "true"}, "param case_sensitive must be true or false; got 'true'"),
        ("constant", {"value": "1.5"}, "param value must be a number; got '1.5'"),
        ("countdown", {"policy": "lax"}, "param policy must be one of ['strict', 'lenient']; got 'lax'"),
    ):
        with pytest.raises(PreflightError) as caught:
            catalog.bind(name, params)
        assert wanted in str(caught.value)
    assert catalog.bind("constant", {"value": 2}).params == {"value": 2}  # an integer is a number


def test_declared_maxima_are_checked_at_load_naming_the_param_and_the_limit():
    catalog = resolve_catalog(CATALOG)
    with pytest.raises(
        PreflightError, match=r"param timeout_s must be a number in \(0, 60\]; got 1000000000.0"
    ):
        catalog.bind("guarded", {"timeout_s": 1e9})
    with pytest.raises(PreflightError, match=r"param workers must be an integer in \[1, 8\]; got 100000"):
        catalog.bind("guarded", {"workers": 100000})
    with pytest.raises(PreflightError, match=r"rejected params \['wrokers'\]: unknown params"):
        catalog.bind("guarded", {"wrokers": 2})


def test_operator_only_params_are_marked_or_recognised_by_name():
    assert {name: operator_only_reason(GuardedParams, name) for name, _, _ in FORBIDDEN} == {
        name: reason for name, _, reason in FORBIDDEN
    }
    assert operator_only_reason(GuardedParams, "scale") is None
    plain = derive_params_model(resolve_catalog(CATALOG).entry("plain").spec.factory, "plain")
    assert plain is not None
    assert {name: operator_only_reason(plain, name) for name in plain.model_fields} == {
        "scale": None,
        "base_url": "url",
        "api_key_env": "credential",
        "workers": "resource",
        "cache_path": "path",
    }
    assert schema_document(GuardedParams)["timeout_s"] == {
        "expects": "a number in (0, 60]",
        "default": 5.0,
        "operator_only": "resource",
    }


def test_an_unsandboxed_value_needs_the_operator_setting_in_process_too(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.delenv(UNSANDBOXED_ENV, raising=False)
    config = {"rl": {"reward": {"provider": "guarded", "params": {"isolation": "none"}, "catalog": CATALOG}}}
    with pytest.raises(
        PreflightError, match=f"isolation='none' runs untrusted completions.*{UNSANDBOXED_ENV}=1"
    ):
        rewardkit.load(config)
    monkeypatch.setenv(UNSANDBOXED_ENV, "yes")  # only "1" opts in
    with pytest.raises(PreflightError, match=UNSANDBOXED_ENV):
        rewardkit.load(config)
    monkeypatch.setenv(UNSANDBOXED_ENV, "1")
    with caplog.at_level(logging.WARNING, logger="rewardkit.contracts.params"):
        rewardkit.load(config)
    assert "WITHOUT a sandbox" in caplog.text and "isolation='none'" in caplog.text


# -- the policy, without HTTP ------------------------------------------------------------------


def policy(allow: dict[str, Any] | None = None, spec: dict[str, Any] | None = None) -> SelectionPolicy:
    configured = RewardSpec.parse(spec) if spec else RewardSpec.single("guarded", CONFIGURED)
    return SelectionPolicy(resolve_catalog(CATALOG), [configured], ServiceAllow.model_validate(allow or {}))


def refused(check: SelectionPolicy, provider: str | None, params: Any, spec: Any = None) -> str:
    with pytest.raises(SelectionRefused) as caught:
        check.admit(provider, params, spec)
    return caught.value.field


def test_by_default_only_the_configured_reward_is_admitted():
    check = policy()
    assert check.admit("guarded", {"timeout_s": 10, "scale": 2}, None).to_json()["components"][0][
        "params"
    ] == {
        "timeout_s": 10,
        "scale": 2,
    }  # the same selection, numbers spelt differently: admitted as sent
    spec = {"components": [{"provider": "guarded", "params": CONFIGURED, "term": "size"}]}
    assert check.admit(None, None, spec).components[0].term == "size"
    assert refused(check, "guarded", {"scale": 3.0, "timeout_s": 10.0}) == "provider"
    assert refused(check, "nonempty", {}) == "provider"
    assert refused(check, "guarded", {}) == "provider"  # not the configured params either


def test_the_validation_reward_is_configured_too():
    validation = RewardSpec.single("exact-match", {"case_sensitive": True})
    check = SelectionPolicy(
        resolve_catalog(CATALOG), [RewardSpec.single("guarded", CONFIGURED), validation], ServiceAllow()
    )
    assert check.admit("exact-match", {"case_sensitive": True}, None) == validation
    assert refused(check, "exact-match", {}) == "provider"


@pytest.mark.parametrize(("name", "value", "reason"), FORBIDDEN)
def test_a_forbidden_param_is_refused_even_when_the_allow_list_names_the_provider(name, value, reason):
    check = policy({"providers": {"guarded": {"params": ["scale", "label"]}}})
    assert refused(check, "guarded", {name: value}) == f"params.{name}"
    spec = {"components": [{"provider": "nonempty"}, {"provider": "guarded", "params": {name: value}}]}
    assert refused(check, None, None, spec) == f"spec.components[1].params.{name}"
    with pytest.raises(SelectionRefused, match=f"operator-only \\({reason}\\)"):
        check.admit("guarded", {"scale": 3.0, name: value}, None)


def test_allowed_params_work_and_what_the_client_leaves_out_is_the_operators():
    check = policy({"providers": {"guarded": {"params": ["scale"]}}})
    admitted = check.admit("guarded", {"scale": 3.0}, None)
    assert admitted.components[0].params == {"scale": 3.0, "timeout_s": 10.0}  # the operator's timeout
    assert (
        check.admit("guarded", {"scale": 3.0, "timeout_s": 10}, None).components[0].params["timeout_s"] == 10
    )
    assert check.admit("guarded", {"isolation": "sandbox"}, None)  # the value already in force is no change
    assert refused(check, "guarded", {"label": "other"}) == "params.label"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"onError": "zero"}, "spec.onError"),
        ({"on_error": "none"}, "spec.on_error"),
        ({"floor": -5}, "spec.floor"),
        ({"clip": [0, 1]}, "spec.clip"),
        ({"weight": 3}, "spec.components[0].weight"),
        ({"gate": True}, "spec.components[0].gate"),
        ({"threshold": 0.5}, "spec.components[0].threshold"),
    ],
)
def test_spec_fields_are_the_operators_unless_the_allow_list_says_so(spec, field):
    component_fields = {"weight", "gate", "threshold"}
    component = {"provider": "guarded", **{k: v for k, v in spec.items() if k in component_fields}}
    request = {"components": [component], **{k: v for k, v in spec.items() if k not in component_fields}}
    strict = policy({"providers": {"guarded": {}}})
    assert refused(strict, None, None, request) == field
    name = "onError" if field.endswith("on_error") else field.rsplit(".", 1)[-1]
    permissive = policy({"providers": {"guarded": {}}, "spec_fields": [name]})
    assert permissive.admit(None, None, request)


def test_omitted_spec_fields_take_the_operators_values():
    configured = {
        "components": [{"provider": "guarded", "params": CONFIGURED, "weight": 2}],
        "onError": "zero",
    }
    check = policy({"providers": {"guarded": {}, "nonempty": {}}, "components": "any"}, configured)
    admitted = check.admit(None, None, {"components": [{"provider": "guarded"}, {"provider": "nonempty"}]})
    assert admitted.on_error == "zero" and admitted.components[0].weight == 2
    assert admitted.components[0].params == CONFIGURED
    assert (
        refused(check, None, None, {"components": [{"provider": "guarded"}], "onError": "raise"})
        == "spec.onError"
    )


def test_an_allow_list_naming_an_operator_only_or_unknown_param_is_refused_at_start_up():
    for allow, message in (
        ({"providers": {"guarded": {"params": ["timeout_s"]}}}, "operator-only \\(resource\\)"),
        ({"providers": {"plain": {"params": ["base_url"]}}}, "operator-only \\(url\\)"),
        ({"providers": {"guarded": {"params": ["scael"]}}}, "has no param 'scael'"),
        ({"providers": {"no-such": {}}}, "no provider 'no-such'"),
    ):
        with pytest.raises(ConfigError, match=message) as caught:
            policy(allow)
        assert caught.value.key is not None and caught.value.key.startswith(
            "rewards.service.allow.providers."
        )


def test_the_allow_list_config_names_the_nearest_key():
    base = {"rl.reward.provider": "gsm8k"}
    config = load_config({**base, "rewards.service.allow.providers.math.params": ["max_answer_chars"]})
    assert config.rewards.service.allow.providers["math"].params == ["max_answer_chars"]
    with pytest.raises(ConfigError, match="did you mean params"):
        load_config({**base, "rewards.service.allow.providers": {"math": {"parms": []}}})
    with pytest.raises(ConfigError, match=r"rewards\.service\.allow\.spec_fields"):
        load_config({**base, "rewards.service.allow.spec_fields": ["colour"]})


# -- over HTTP -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value", "reason"), FORBIDDEN)
def test_a_forbidden_param_is_403_naming_it_and_nothing_runs(guarded, name, value, reason):
    server, log = guarded
    before = events(log)
    for path in ("/v1/score", "/v1/resolve"):
        body = {"provider": "guarded", "params": {"scale": 3.0, name: value}}
        if path == "/v1/score":
            body["groups"] = GROUPS
        status, answer = post(server.url + path, body)
        assert status == 403, answer
        error = answer["error"]
        assert error["code"] == "selection_refused" and error["details"][0]["path"] == f"params.{name}"
        assert f"'{name}'" in error["message"] and reason in error["message"]
    assert events(log) == before  # nothing was built, nothing was scored


def test_the_configured_reward_and_allowed_params_still_work_over_http(guarded):
    server, log = guarded
    status, answer = post(server.url + "/v1/score", {"groups": GROUPS})
    assert status == 200 and [c["final"] for c in answer["groups"][0]["candidates"]] == [6.0, 4.0]
    status, answer = post(
        server.url + "/v1/score", {"groups": GROUPS, "provider": "guarded", "params": {"scale": 1.0}}
    )
    assert status == 200 and [c["final"] for c in answer["groups"][0]["candidates"]] == [3.0, 2.0]
    built = [event["params"] for event in events(log) if event["event"] == "built"]
    assert {"scale": 1.0, "timeout_s": 10.0} in built  # the operator's timeout, the client's scale
    status, answer = post(server.url + "/v1/score", {"groups": GROUPS, "provider": "constant"})
    assert status == 403 and answer["error"]["details"][0]["path"] == "provider"


def test_remote_reward_reports_a_refusal_at_load_and_works_when_it_matches(guarded):
    server, _ = guarded
    with rewardkit.load(client_config(server.url)) as remote:
        assert [c.final for _, c in remote.score(GROUPS).candidates()] == [6.0, 4.0]
    with pytest.raises(SelectionRefused) as caught:
        rewardkit.load(client_config(server.url, params={**CONFIGURED, "workers": 64}))
    assert caught.value.field == "params.workers"
    assert "operator-only (resource)" in str(caught.value) and server.url in str(caught.value)
    spec = {"components": [{"provider": "guarded", "params": CONFIGURED}], "onError": "zero"}
    with pytest.raises(SelectionRefused, match=r"spec\.onError: onError is the operator's"):
        rewardkit.load({"rl": {"reward": {"spec": spec, "service": server.url}, "group_size": 2}})


def test_a_service_whose_allow_list_names_an_operator_only_param_does_not_start(tmp_path):
    config = SERVER + "rewards.service.allow.providers: {guarded: {params: [scale, timeout_s]}}\n"
    with pytest.raises(RuntimeError) as caught:
        start_server(tmp_path, config)
    assert "rewards.service.allow.providers.guarded.params" in str(caught.value)
    assert "operator-only (resource)" in str(caught.value) and "startup failed" in str(caught.value)


# -- the component set is the operator's ----------------------------------------------------------

GATED = {
    "components": [
        {"provider": "nonempty", "gate": True},
        {"provider": "guarded", "params": CONFIGURED, "weight": 2},
    ],
    "floor": -1,
}
GATED_SERVER = f"""
rl.reward.spec: {json.dumps(GATED)}
rl.reward.catalog: {CATALOG}
rl.group_size: 2
rewards.service.allow:
  providers: {{guarded: {{params: [scale]}}, nonempty: {{}}, plain: {{}}}}
"""
ANY_SERVER = GATED_SERVER + "  components: any\n"
GATED_GROUPS = [
    {
        "group_id": "g",
        "rollouts": [{"trajectory_id": "a", "completion": "abc"}, {"trajectory_id": "b", "completion": ""}],
    }
]
# (what is wrong, the request's components, the component named, the field, finals with components: any).
# Configured: "abc" scores 1 (nonempty) + 2 * 6 (guarded) = 13; "" fails the gate and takes the floor, -1.
CHANGES = [
    ("dropped", [{"provider": "guarded"}], "'nonempty'", "spec.components", [12.0, 0.0]),
    (
        "added",
        [{"provider": "nonempty"}, {"provider": "guarded"}, {"provider": "plain"}],
        "'plain'",
        "spec.components[2].provider",
        [16.0, -1.0],
    ),
    (
        "renamed",
        [{"provider": "nonempty", "name": "lenient"}, {"provider": "guarded"}],
        "'nonempty' (provider 'nonempty') is renamed 'lenient'",
        "spec.components[0].name",
        [13.0, 0.0],  # the new name gets the defaults: no gate
    ),
]


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    folder = tmp_path_factory.mktemp("gated")
    log = folder / "guarded.log"
    process = start_server(folder, GATED_SERVER, env={"GUARDED_LOG": str(log)})
    try:
        yield process, log
    finally:
        assert process.stop() == 0, process.output


@pytest.fixture(scope="module")
def gated_any(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_server(tmp_path_factory.mktemp("gated-any"), ANY_SERVER)
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output


def finals(answer: dict[str, Any]) -> list[float]:
    return [candidate["final"] for candidate in answer["groups"][0]["candidates"]]


def test_the_component_set_setting_defaults_to_fixed_and_is_checked():
    base = {"rl.reward.provider": "gsm8k"}
    assert load_config(base).rewards.service.allow.components == "fixed"
    assert load_config(
        {**base, "rewards.service.allow.components": "any"}
    ).rewards.service.allow.components == ("any")
    with pytest.raises(ConfigError, match="'fixed' or 'any'") as caught:
        load_config({**base, "rewards.service.allow.components": "free"})
    assert caught.value.key == "rewards.service.allow.components"


def test_a_single_provider_selection_may_not_replace_or_shed_configured_components():
    check = policy({"providers": {"guarded": {"params": ["scale"]}, "nonempty": {}}})
    with pytest.raises(SelectionRefused) as caught:
        check.admit("nonempty", {}, None)
    assert caught.value.field == "provider"
    assert "'nonempty' (provider 'nonempty') is added" in caught.value.reason
    assert "'guarded' (provider 'guarded') is dropped" in caught.value.reason
    assert check.admit("guarded", {"scale": 3.0}, None)  # the same component, an allowed param
    gated_check = policy({"providers": {"guarded": {}, "nonempty": {}}}, GATED)
    with pytest.raises(SelectionRefused, match="'nonempty' \\(provider 'nonempty'\\) is dropped") as caught:
        gated_check.admit("guarded", {}, None)  # the gate shed by selecting the other component alone
    assert caught.value.field == "provider"
    same_name = {"components": [{"name": "nonempty", "provider": "plain"}, {"provider": "guarded"}]}
    assert refused(gated_check, None, None, same_name) == "spec.components[0].provider"
    loose = policy({"providers": {"guarded": {}, "nonempty": {}, "plain": {}}, "components": "any"}, GATED)
    assert [c.name for c in loose.admit("guarded", {}, None).components] == ["guarded"]
    assert loose.admit(None, None, same_name).components[0].provider == "plain"


def test_an_allow_listed_provider_no_client_can_add_is_warned_about_at_start_up(caplog):
    with caplog.at_level(logging.WARNING, logger="rewardkit_service"):
        policy({"providers": {"guarded": {}, "plain": {}}})
    assert "lists plain" in caplog.text and "components: any" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rewardkit_service"):
        policy({"providers": {"guarded": {}, "plain": {}}, "components": "any"})
        policy({"providers": {"guarded": {}}})
    assert caplog.text == ""


@pytest.mark.parametrize(("wrong", "components", "named", "path", "_"), CHANGES, ids=[c[0] for c in CHANGES])
def test_a_changed_component_set_is_403_naming_the_component_and_nothing_runs(
    gated, wrong, components, named, path, _
):
    server, log = gated
    before = events(log)
    spec = {"components": components}
    for endpoint, body in (
        ("/v1/score", {"groups": GATED_GROUPS, "spec": spec}),
        ("/v1/resolve", {"spec": spec}),
    ):
        status, answer = post(server.url + endpoint, body)
        assert status == 403, answer
        error = answer["error"]
        assert error["code"] == "selection_refused" and error["details"][0]["path"] == path
        assert named in error["message"] and wrong in error["message"]
        assert "rewards.service.allow.components" in error["message"]
    assert events(log) == before  # nothing was built, nothing was scored


@pytest.mark.parametrize(("wrong", "components", "_", "__", "expected"), CHANGES, ids=[c[0] for c in CHANGES])
def test_the_same_change_is_200_with_components_any(gated_any, wrong, components, _, __, expected):
    status, answer = post(
        gated_any.url + "/v1/score", {"groups": GATED_GROUPS, "spec": {"components": components}}
    )
    assert status == 200, answer
    assert finals(answer) == expected


@pytest.mark.parametrize("setting", ["fixed", "any"])
def test_an_unchanged_component_set_is_200_whatever_the_setting(gated, gated_any, setting):
    url = gated[0].url if setting == "fixed" else gated_any.url
    status, answer = post(url + "/v1/score", {"groups": GATED_GROUPS})
    assert status == 200 and finals(answer) == [13.0, -1.0], answer
    # The configured components, named, reordered, with an allowed param: the gate stays the operator's.
    components = [
        {"provider": "guarded", "params": {"scale": 1.0}},
        {"name": "nonempty", "provider": "nonempty"},
    ]
    status, answer = post(url + "/v1/score", {"groups": GATED_GROUPS, "spec": {"components": components}})
    assert status == 200 and finals(answer) == [7.0, -1.0], answer


def test_remote_reward_reports_a_dropped_component_at_load(gated):
    server, _ = gated
    spec = {"components": [GATED["components"][1]], "floor": -1}
    with pytest.raises(SelectionRefused) as caught:
        rewardkit.load({"rl": {"reward": {"spec": spec, "service": server.url}, "group_size": 2}})
    assert caught.value.field == "spec.components" and "'nonempty' (provider 'nonempty') is dropped" in str(
        caught.value
    )
    with rewardkit.load(
        {"rl": {"reward": {"spec": GATED, "service": server.url}, "group_size": 2}}
    ) as remote:
        assert [c.final for _, c in remote.score(GATED_GROUPS).candidates()] == [13.0, -1.0]


# -- no open service by accident ---------------------------------------------------------------


def test_loopback_addresses_are_recognised():
    assert (
        is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("[::1]") and is_loopback("localhost")
    )
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("10.77.0.1")


def test_serving_in_process_on_any_address_without_tokens_is_refused_before_binding():
    from rewardkit_service.app import ServiceSettings
    from rewardkit_service.server import ServeRefused, serve

    config = load_config({"rl.reward.provider": "gsm8k"})
    for host in ("0.0.0.0", "::"):
        with pytest.raises(ServeRefused, match=f"refusing to serve on {host} without authentication"):
            serve(config, ServiceSettings(), host=host, port=0)


def test_the_start_up_line_says_the_address_and_whether_auth_is_on(tmp_path):
    with start_server(tmp_path, "rl.reward.provider: gsm8k\n") as server:
        assert server.url.startswith("http://127.0.0.1:") and server.auth == "OFF"
    with start_server(tmp_path, "rl.reward.provider: gsm8k\n", env={"REWARDKIT_TOKENS": "t-1f2e"}) as server:
        assert server.auth == "on" and "(auth: on)" in server.output


NETNS = """
set -e
ip link set lo up
# a dummy interface; where the kernel has no dummy module, one end of a veth pair
ip link add dummy0 type dummy 2>/dev/null || ip link add dummy0 type veth peer name dummy1
ip addr add 10.77.0.1/24 dev dummy0
ip link set dummy0 up
ip link set dummy1 up 2>/dev/null || true
exec "$@"
"""


def _in_private_network(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["unshare", "-n", "sh", "-c", NETNS, "sh", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": fixtures_pythonpath(), **env},
    )


needs_netns = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None,
    reason="a private network namespace needs root, unshare and ip",
)

# Inside the namespace: start the server, wait for its start-up line, print it, stop it.
_PROBE = """
import sys
from rewardkit_service.testing import ServerProcess
server = ServerProcess(sys.argv[1], host="10.77.0.1", args=sys.argv[2:]).start()
print("LINE", server.url, server.auth)
print("STOP", server.stop())
"""


@needs_netns
def test_serve_refuses_a_non_loopback_address_without_tokens(tmp_path):
    config = tmp_path / "service.yaml"
    config.write_text("rl.reward.provider: gsm8k\n")
    serve = [
        sys.executable,
        "-m",
        "rewardkit.cli",
        "serve",
        str(config),
        "--host",
        "10.77.0.1",
        "--port",
        "0",
    ]
    done = _in_private_network(serve, {"REWARDKIT_TOKENS": ""}, 60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refusing to serve on 10.77.0.1 without authentication" in done.stderr
    assert "--insecure-no-auth" in done.stderr and "listening" not in done.stdout
    probe = [sys.executable, "-c", _PROBE, str(config)]
    opened = _in_private_network([*probe, "--insecure-no-auth"], {"REWARDKIT_TOKENS": ""}, 120)
    assert "LINE http://10.77.0.1:" in opened.stdout and " OFF" in opened.stdout, (
        opened.stdout + opened.stderr
    )
    guarded_run = _in_private_network(probe, {"REWARDKIT_TOKENS": "tok-9a8b7c"}, 120)
    assert "LINE http://10.77.0.1:" in guarded_run.stdout and " on\n" in guarded_run.stdout, (
        guarded_run.stderr
    )
    assert "STOP 0" in guarded_run.stdout


def test_the_rerun_budget_is_the_operators_and_kept_when_a_client_leaves_it_out():
    configured = {
        "components": [{"provider": "guarded", "params": CONFIGURED}],
        "reruns": {"per_batch": 5},
    }
    check = policy({"providers": {"guarded": {}}, "spec_fields": ["floor", "onError", "clip"]}, configured)
    admitted = check.admit(None, None, {"components": [{"provider": "guarded"}]})
    assert admitted.reruns.per_batch == 5
    same = {"components": [{"provider": "guarded"}], "reruns": {"per_batch": 5}}
    assert check.admit(None, None, same).reruns == admitted.reruns
    costlier = {"components": [{"provider": "guarded"}], "reruns": {"per_batch": 100}}
    assert refused(check, None, None, costlier) == "spec.reruns"
