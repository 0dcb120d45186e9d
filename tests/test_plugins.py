"""Plugin loading: entry points one by one with error isolation, switches, duplicates, overrides."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from helpers import fake_distribution

from rewardkit import PluginLoadError, RegistrationError, UnknownNameError, load_plugins, resolve_catalog
from rewardkit.seam.catalog import serving_strategies, trainer_bindings

GOOD = """
from rewardkit import RewardProviderSpec, hookimpl, map_candidates, RewardProviderResult
from functools import partial

def score(candidate, context):
    return RewardProviderResult({"task": 0.5})

@hookimpl
def register_reward_providers(register):
    register(RewardProviderSpec("{name}", partial(map_candidates, score), (), "7", ("task",)))
"""

BROKEN = """
raise ImportError("needs a GPU driver")
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("REWARDKIT_STRICT_PLUGINS", raising=False)
    yield tmp_path
    for module in [name for name in sys.modules if name.startswith("fake_")]:
        del sys.modules[module]


def install_good_and_broken(site: Path) -> None:
    fake_distribution(
        site, "acme-good", {"good": "fake_good"}, {"fake_good": GOOD.replace("{name}", "acme-good")}
    )
    fake_distribution(site, "acme-broken", {"broken": "fake_broken"}, {"fake_broken": BROKEN})


def test_a_broken_plugin_is_reported_and_the_others_still_load(site: Path, caplog: pytest.LogCaptureFixture):
    install_good_and_broken(site)
    manager = load_plugins()
    rows = {row["name"]: row for row in manager.describe()}
    assert rows["good"]["status"] == "loaded" and rows["good"]["distribution"] == "acme-good"
    assert rows["broken"]["status"] == "failed"
    assert rows["broken"]["distribution"] == "acme-broken"
    assert "ImportError: needs a GPU driver" in rows["broken"]["error"]
    assert "acme-broken" in caplog.text and "'broken'" in caplog.text
    assert "acme-good" in resolve_catalog().names()


def test_strict_mode_makes_a_broken_plugin_fatal(site: Path, monkeypatch: pytest.MonkeyPatch):
    install_good_and_broken(site)
    monkeypatch.setenv("REWARDKIT_STRICT_PLUGINS", "1")
    with pytest.raises(
        PluginLoadError, match=r"'broken' from distribution acme-broken 1.0.*needs a GPU driver"
    ):
        load_plugins()


def test_allow_list_loads_only_named_plugins(site: Path, monkeypatch: pytest.MonkeyPatch):
    install_good_and_broken(site)
    monkeypatch.setenv("REWARDKIT_LOAD_PLUGINS", "good")
    names = {row["name"] for row in load_plugins().describe()}
    assert "good" in names and "broken" not in names
    assert "constant" in resolve_catalog().names(), "built-ins always load"


def test_empty_allow_list_loads_no_entry_points(site: Path, monkeypatch: pytest.MonkeyPatch):
    install_good_and_broken(site)
    monkeypatch.setenv("REWARDKIT_LOAD_PLUGINS", "")
    rows = load_plugins().describe()
    assert all(row["builtin"] for row in rows)
    assert "acme-good" not in resolve_catalog().names()


def test_block_list_skips_plugins_by_entry_point_or_distribution(site: Path, monkeypatch: pytest.MonkeyPatch):
    install_good_and_broken(site)
    monkeypatch.setenv("REWARDKIT_DISABLE_PLUGINS", "acme-broken")
    rows = {row["name"]: row for row in load_plugins().describe()}
    assert "broken" not in rows and rows["good"]["status"] == "loaded"


def test_loading_is_idempotent(site: Path):
    install_good_and_broken(site)
    first = load_plugins()
    assert load_plugins() is first
    assert len([row for row in first.describe() if row["name"] == "good"]) == 1


def test_duplicate_names_fail_naming_both_owners(site: Path):
    fake_distribution(
        site, "acme-one", {"one": "fake_one"}, {"fake_one": GOOD.replace("{name}", "shared-name")}
    )
    fake_distribution(
        site, "acme-two", {"two": "fake_two"}, {"fake_two": GOOD.replace("{name}", "shared-name")}
    )
    with pytest.raises(RegistrationError, match=r"'shared-name' is registered twice.*acme-one.*acme-two"):
        resolve_catalog()


def test_a_plugin_cannot_override_a_built_in(site: Path, caplog: pytest.LogCaptureFixture):
    fake_distribution(
        site, "acme-evil", {"evil": "fake_evil"}, {"fake_evil": GOOD.replace("{name}", "exact-match")}
    )
    assert resolve_catalog().entry("exact-match").owner.builtin, "the built-in wins"
    assert re.search(r"acme-evil.*override the built-in provider 'exact-match'", caplog.text)
    assert "REWARDKIT_DISABLE_PLUGINS=evil" in caplog.text
    assert load_plugins().refusals["evil"], "listed by `rewardkit plugins`"


def test_strict_mode_makes_overriding_a_built_in_fatal(site: Path, monkeypatch: pytest.MonkeyPatch):
    fake_distribution(
        site, "acme-evil", {"evil": "fake_evil"}, {"fake_evil": GOOD.replace("{name}", "exact-match")}
    )
    monkeypatch.setenv("REWARDKIT_STRICT_PLUGINS", "1")
    with pytest.raises(RegistrationError, match=r"acme-evil.*override the built-in provider 'exact-match'"):
        resolve_catalog()


WRONG_TYPE = """
from rewardkit import hookimpl

@hookimpl
def register_reward_providers(register):
    register({"name": "dict-is-not-a-spec"})
"""

RAISING = """
from functools import partial
from rewardkit import RewardProviderSpec, hookimpl, map_candidates, RewardProviderResult

def score(candidate, context):
    return RewardProviderResult({"task": 0.5})

@hookimpl
def register_reward_providers(register):
    register(RewardProviderSpec("half-registered", partial(map_candidates, score), (), "1", ("task",)))
    raise RuntimeError("the licence server is down")
"""


@pytest.mark.parametrize(
    "source,needle",
    [
        (
            WRONG_TYPE,
            r"RegistrationError: plugin 'bad' \(acme-bad 1.0\) registered .* expected RewardProviderSpec",
        ),
        (RAISING, "RuntimeError: the licence server is down"),
    ],
    ids=["registers-a-non-spec", "hook-raises"],
)
def test_a_plugin_whose_hook_fails_fails_alone(
    site: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture, source: str, needle: str
):
    fake_distribution(site, "acme-bad", {"bad": "fake_bad"}, {"fake_bad": source})
    install_good_and_broken(site)
    names = resolve_catalog().names()
    assert "acme-good" in names and "exact-match" in names, "the other plugins' providers stand"
    assert "half-registered" not in names, "what the failed hook registered is withdrawn"
    rows = {row["name"]: row for row in load_plugins().describe()}
    assert rows["bad"]["status"] == "failed" and rows["bad"]["distribution"] == "acme-bad"
    assert re.search(needle, rows["bad"]["error"]), rows["bad"]["error"]
    assert re.search(
        r"plugin 'bad' from distribution acme-bad 1.0 failed: register_reward_providers", caplog.text
    )
    assert rows["good"]["status"] == "loaded"
    from rewardkit.cli import main

    capsys.readouterr()
    assert main(["providers"]) == 0
    out, err = capsys.readouterr()
    assert "acme-good" in out and "Traceback" not in out + err


@pytest.mark.parametrize("source", [WRONG_TYPE, RAISING], ids=["registers-a-non-spec", "hook-raises"])
def test_strict_mode_makes_a_failing_hook_fatal(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, source: str
):
    fake_distribution(site, "acme-bad", {"bad": "fake_bad"}, {"fake_bad": source})
    monkeypatch.setenv("REWARDKIT_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError, match=r"'bad' from distribution acme-bad 1.0 failed"):
        resolve_catalog()
    from rewardkit.cli import main

    assert main(["providers"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rewardkit: error:") and "acme-bad" in err and "Traceback" not in err


def test_a_hook_without_a_spec_is_refused(site: Path, monkeypatch: pytest.MonkeyPatch):
    source = """
from rewardkit import hookimpl

@hookimpl
def register_rewards_providers(register):  # misspelt hook name
    pass
"""
    fake_distribution(site, "acme-typo", {"typo": "fake_typo"}, {"fake_typo": source})
    install_good_and_broken(site)
    rows = {row["name"]: row for row in load_plugins().describe()}
    assert rows["typo"]["status"] == "failed" and "register_rewards_providers" in rows["typo"]["error"]
    assert rows["good"]["status"] == "loaded", "one misspelt plugin does not stop the others"
    from rewardkit.seam.plugins import reset_plugins

    reset_plugins()
    monkeypatch.setenv("REWARDKIT_STRICT_PLUGINS", "1")
    monkeypatch.setenv("REWARDKIT_DISABLE_PLUGINS", "broken")
    with pytest.raises(PluginLoadError, match="register_rewards_providers"):
        load_plugins()


def test_an_entry_point_name_taken_by_another_distribution_is_reported(site: Path):
    fake_distribution(site, "acme-a", {"shared": "fake_a"}, {"fake_a": GOOD.replace("{name}", "from-a")})
    fake_distribution(site, "acme-b", {"shared": "fake_b"}, {"fake_b": GOOD.replace("{name}", "from-b")})
    rows = [row for row in load_plugins().describe() if row["name"] == "shared"]
    assert sorted(row["status"] for row in rows) == ["failed", "loaded"]
    failed = next(row for row in rows if row["status"] == "failed")
    assert "already taken by distribution acme-" in failed["error"]


def test_unknown_provider_lists_known_names_and_hints_a_plugin(fresh_plugins: None):
    with pytest.raises(UnknownNameError) as caught:
        resolve_catalog().entry("gsm9k")
    message = str(caught.value)
    assert "unknown provider 'gsm9k'" in message and "exact-match" in message and "plugin" in message


def test_serving_and_binding_registries_accept_specs(site: Path):
    source = """
from rewardkit import hookimpl, ServingStrategySpec, TrainerBindingSpec

@hookimpl
def register_serving_strategies(register):
    register(ServingStrategySpec("endpoint-x", lambda **kw: None, "an existing endpoint"))

@hookimpl
def register_trainer_bindings(register):
    register(TrainerBindingSpec("trainer-x", "fake_ext:bind", "a trainer"))
"""
    fake_distribution(site, "acme-ext", {"ext": "fake_ext"}, {"fake_ext": source})
    assert "endpoint-x" in serving_strategies()
    assert trainer_bindings().get("trainer-x").owner.distribution == "acme-ext"
    with pytest.raises(UnknownNameError, match="serving strategy 'vllm-nope'"):
        serving_strategies().get("vllm-nope")


def test_tracing_writes_hook_calls_to_stderr(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    monkeypatch.setenv("REWARDKIT_TRACE_PLUGINS", "1")
    resolve_catalog()
    assert "rewardkit-trace" in capsys.readouterr().err
