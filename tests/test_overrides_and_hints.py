"""Issue 33, items 4, 5 and 8: overrides anywhere on the command line and list indices in dotted keys,
error hints that name keys the config shape has, a failed plugin named when its name is asked for,
and the reference column recorded under one canonical key."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from helpers import fake_distribution

from rewardkit import ConfigError, UnknownNameError, load_config, load_plugins, resolve_catalog
from rewardkit.cli import build_parser, main
from rewardkit.job.score_job import manifest_path
from rewardkit.scoring.composition import CompositionError, RewardSpec, compose

ROOT = Path(__file__).resolve().parents[1]
ROLLOUTS = ROOT / "examples" / "gsm8k" / "rollouts.jsonl"
SPEC = {"components": [{"provider": "exact-match"}, {"provider": "format", "weight": 0.5}]}


def composed() -> dict:
    return {"rl": {"reward": {"spec": json.loads(json.dumps(SPEC))}}}


# -- item 5: list indices in dotted keys ------------------------------------------------------------


def test_a_digit_segment_indexes_a_list_and_leaves_the_callers_list_alone() -> None:
    base = composed()
    config = load_config(
        base, ["rl.reward.spec.components.1.weight=2", "rl.reward.spec.components.0.params={a: 1}"]
    )
    spec = config.rl.reward.spec
    assert spec is not None
    assert spec["components"] == [
        {"provider": "exact-match", "params": {"a": 1}},
        {"provider": "format", "weight": 2},
    ]
    assert base == composed(), "the mapping given is not changed"
    # The whole element can be replaced too, and the last of two overrides wins.
    config = load_config(
        base, ["rl.reward.spec.components.0={provider: nonempty}", "rl.reward.spec.components.0.weight=3"]
    )
    assert config.rl.reward.spec is not None
    assert config.rl.reward.spec["components"][0] == {"provider": "nonempty", "weight": 3}


@pytest.mark.parametrize(
    ("override", "key", "words"),
    [
        (
            "rl.reward.spec.components.2.weight=2",
            "rl.reward.spec.components.2",
            "out of range: .* has 2 item",
        ),
        (
            "rl.reward.spec.components.first.weight=2",
            "rl.reward.spec.components.first",
            "is a list; index it",
        ),
        ("rl.reward.spec.onError.0=zero", "rl.reward.spec.onError.0", "is not set, so it has no index 0"),
        (
            "rl.reward.spec.components.1.weight.0=1",
            "rl.reward.spec.components.1.weight.0",
            "is 0.5, not a list",
        ),
    ],
)
def test_a_bad_index_is_an_error_naming_the_key(override: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(composed(), [override])
    message = str(caught.value)
    assert message.startswith(f"override {override!r}: {key}:"), message
    assert re.search(words, message), message
    assert "valid tuple" not in message


def test_an_index_into_a_spec_a_provider_config_has_not_got_says_so() -> None:
    with pytest.raises(ConfigError, match=r"rl\.reward\.spec\.components is not set, so it has no index 0"):
        load_config({"rl.reward.provider": "gsm8k"}, ["rl.reward.spec.components.0.weight=2"])


def test_a_digit_key_of_a_mapping_stays_a_key() -> None:
    config = load_config({"rl.reward.provider": "x", "rl.reward.params": {"0": 1}}, ["rl.reward.params.0=2"])
    assert config.rl.reward.params == {"0": 2}


# -- item 5: overrides anywhere on the command line -------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["score", "c.yaml", "a=1", "--out", "o.jsonl", "b=2", "--resume", "c=3"], ["a=1", "b=2", "c=3"]),
        (["score", "c.yaml", "--out", "o.jsonl", "a=1"], ["a=1"]),
    ],
)
def test_overrides_may_follow_options_in_order(argv: list[str], expected: list[str]) -> None:
    assert build_parser().parse_args(argv).overrides == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["score", "c.yaml", "--out", "o.jsonl", "--bogus"],
        ["providers", "a=1"],
        ["score", "c.yaml", "--out", "o", "x"],
    ],
)
def test_what_is_not_an_override_is_still_unrecognized(
    argv: list[str], capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(argv)
    assert caught.value.code == 2
    assert f"unrecognized arguments: {argv[-1]}" in capsys.readouterr().err


def test_score_applies_an_override_given_after_out(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "scored.jsonl"
    config = ROOT / "examples" / "gsm8k" / "config.yaml"
    assert main(["score", str(config), "--out", str(out), "rl.reward.provider=nonempty"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 48 and {row["final"] for row in rows} == {1.0}
    assert list(rows[0]["breakdown"]) == ["nonempty"]


# -- item 4: the onError hint names keys that exist -------------------------------------------------


def test_the_on_error_hint_gives_a_config_that_loads_and_scores_through() -> None:
    with pytest.raises(CompositionError) as caught:
        compose(RewardSpec.single("exact-match"), {"exact-match": {"status": "error", "reason": "boom"}})
    message = str(caught.value)
    assert "rl.reward.spec.onError" in message
    # The rewrite it offers for a one-provider config is a valid configuration that scores through.
    offered = re.search(r"write it as (rl\.reward\.spec: \{.*\}), params", message)
    assert offered is not None, message
    config = load_config(yaml.safe_load(offered.group(1)) | {"rl.group_size": 2})
    spec = RewardSpec.parse(config.rl.reward.spec)
    assert spec.on_error == "zero" and spec.names == ("exact-match",)
    result = compose(spec, {"exact-match": {"status": "error", "reason": "boom"}})
    assert result.total == 0.0


@pytest.mark.parametrize("key", ["onError", "on_error", "floor", "clip"])
def test_a_spec_key_under_a_provider_config_says_where_it_goes(key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"rl.reward.provider": "exact-match", f"rl.reward.{key}": "zero"})
    message = str(caught.value)
    assert f"rl.reward.spec.{key}" in message and "did you mean" not in message
    assert "rl.reward.spec: {components: [{provider: NAME" in message


# -- item 8b: a failed plugin is named when a name it might provide is asked for -------------------

GOOD = """
from functools import partial
from rewardkit import RewardProviderSpec, RewardProviderResult, hookimpl, map_candidates

def score(candidate, context):
    return RewardProviderResult({"task": 1})

@hookimpl
def register_reward_providers(register):
    register(RewardProviderSpec("acme-good", partial(map_candidates, score), (), "1", ("task",)))
"""
RAISING = """
from rewardkit import hookimpl

@hookimpl
def register_reward_providers(register):
    raise RuntimeError("the licence server is down")
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("REWARDKIT_STRICT_PLUGINS", raising=False)
    yield tmp_path
    for module in [name for name in sys.modules if name.startswith("fake_")]:
        del sys.modules[module]


def test_an_unknown_provider_names_the_plugin_that_failed_to_import(
    site: Path, capsys: pytest.CaptureFixture
) -> None:
    fake_distribution(site, "acme-good", {"good": "fake_good"}, {"fake_good": GOOD})
    fake_distribution(
        site, "acme-judge", {"judge": "fake_judge"}, {"fake_judge": "raise ImportError('no aiohttp')"}
    )
    assert "acme-good" in resolve_catalog().names()
    with pytest.raises(UnknownNameError) as caught:
        resolve_catalog().entry("exact-matc")
    message = str(caught.value)
    assert message.startswith("provider 'exact-matc' is not available: plugin 'judge' from distribution ")
    assert "acme-judge 1.0 failed to load: ImportError: no aiohttp" in message
    assert "did you mean" not in message
    # The same through the CLI: one line, no traceback.
    capsys.readouterr()
    assert main(["show", "acme-judge-rubric"]) == 2
    err = capsys.readouterr().err
    assert "plugin 'judge' from distribution acme-judge 1.0 failed to load" in err and "Traceback" not in err


def test_an_unknown_name_names_a_plugin_whose_hook_failed_and_every_failed_plugin(site: Path) -> None:
    fake_distribution(site, "acme-bad", {"bad": "fake_bad"}, {"fake_bad": RAISING})
    fake_distribution(
        site, "acme-broken", {"broken": "fake_broken"}, {"fake_broken": "raise ImportError('x')"}
    )
    with pytest.raises(UnknownNameError) as caught:
        resolve_catalog().entry("acme-judge")
    message = str(caught.value)
    assert "plugin 'broken' from distribution acme-broken 1.0 failed to load: ImportError: x" in message
    assert (
        "plugin 'bad' from distribution acme-bad 1.0 failed to register: register_reward_providers raised "
        "RuntimeError: the licence server is down"
    ) in message
    with pytest.raises(UnknownNameError, match=r"catalog 'acme' is not available: plugin 'b"):
        resolve_catalog("acme")
    assert load_plugins().failures, "the import failure is still listed"


def test_with_nothing_failed_the_unknown_name_still_suggests(fresh_plugins: None) -> None:
    with pytest.raises(
        UnknownNameError, match=r"unknown provider 'exact-matc'; did you mean 'exact-match'\?"
    ):
        resolve_catalog().entry("exact-matc")


# -- item 8c: the manifest records the reference column under one key -------------------------------


@pytest.mark.parametrize("name", ["reference_column", "response_column"])
def test_the_manifest_records_the_reference_column_as_reference_column(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "rl.group_size": 4,
                "rl.data": {"rollouts_path": str(ROLLOUTS), "prompt_column": "question", name: "answer"},
                "rl.reward.provider": "gsm8k",
            }
        )
    )
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(config), "--out", str(out)]) == 0
    job = json.loads(manifest_path(out).read_text())["job"]
    assert job["reference_column"] == "answer" and "response_column" not in job
