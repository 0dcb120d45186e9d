"""Bad configurations fail at ``load`` naming the param; construction calls nothing; a dead URL is named."""

from __future__ import annotations

import socket
import threading

import pytest
from nih_judge_helpers import bind, judge_params, rollouts

import rewardkit
from rewardkit.contracts.errors import PreflightError, RewardkitError
from rewardkit.seam.catalog import resolve_catalog

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture


def load(name: str, params: dict) -> rewardkit.Reward:
    return rewardkit.load({"rl": {"group_size": 2, "reward": {"provider": name, "params": params}}})


def test_a_missing_api_key_variable_is_named_at_load(judge, monkeypatch):
    monkeypatch.delenv("NIH_JUDGE_TEST_KEY", raising=False)
    params = judge_params(judge, rubric="r", api_key_env="NIH_JUDGE_TEST_KEY")
    with pytest.raises(
        PreflightError,
        match=r"param api_key_env names the environment variable NIH_JUDGE_TEST_KEY, which is not set",
    ):
        load("nih-rubric", params)
    with pytest.raises(PreflightError, match="api_key_env"):
        load("nih-compare", {**params, "rubric": None})
    assert judge.requests == []


def test_a_key_given_where_its_variable_name_belongs_is_refused_and_not_shown(judge):
    planted = "nvapi-PLANTED-0123456789abcdef"
    with pytest.raises(PreflightError) as caught:
        load("nih-rubric", judge_params(judge, rubric="r", api_key_env=planted))
    assert "NAME of an environment variable" in str(caught.value)
    assert planted not in str(caught.value)


def test_a_rubric_file_that_does_not_exist_is_named_at_load(judge, tmp_path):
    missing = tmp_path / "nowhere" / "rubric.md"
    with pytest.raises(PreflightError, match=r"param rubric_path .*no rubric file at .*nowhere/rubric.md"):
        load("nih-rubric", judge_params(judge, rubric_path=str(missing)))


@pytest.mark.parametrize("scale", [[10, 1], [5, 5], [-1, -2]])
def test_a_scale_whose_lo_is_not_below_hi_is_refused_at_load(judge, scale):
    with pytest.raises(PreflightError, match=r"param scale must be \[lo, hi\]"):
        load("nih-rubric", judge_params(judge, rubric="r", scale=scale))


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("nih-rubric", {}, "give the rubric inline"),
        ("nih-rubric", {"rubric": "r", "rubric_path": "/etc/hostname"}, "not both"),
        ("nih-rubric", {"rubric": "  "}, "empty rubric"),
        ("nih-rubric", {"rubric": "r", "template": "Grade {prompt}"}, r"must contain \{completion\}"),
        (
            "nih-rubric",
            {"rubric": "r", "template": "Grade the answer to {prompt}"},
            r"must contain \{completion\}: the answers are placed there, inside fences",
        ),
        ("nih-compare", {"template": "{first} only"}, r"must contain \{second\}"),
        ("nih-compare", {"mode": "listwise", "template": "{first} {second}"}, r"must contain \{answers\}"),
        ("nih-rubric", {"rubric": "r", "temperature": 0.7, "cache_path": "c.db"}, "temperature-0 judge"),
        ("nih-rubric", {"rubric": "r", "base_url": "localhost:8000"}, "param base_url"),
        ("nih-rubric", {"rubric": "r", "max_concurrency": 1000}, "param max_concurrency"),
        ("nih-rubric", {"rubric": "r", "retries": "3"}, "param retries must be an integer"),
        ("nih-compare", {"mode": "ranked"}, "param mode"),
        ("nih-rubric", {"rubric": "r", "rubrik": "typo"}, r"unknown params \['rubrik'\]"),
    ],
)
def test_other_bad_params_name_themselves(judge, name, params, message):
    with pytest.raises(PreflightError, match=message):
        load(name, judge_params(judge, **params))


def test_construction_makes_no_call_and_starts_nothing(judge, tmp_path):
    threads = threading.active_count()
    cache = tmp_path / "cache" / "verdicts.db"
    bound = bind("nih-rubric", judge, cache_path=str(cache))
    compare = bind("nih-compare", judge)
    assert judge.requests == [] and threading.active_count() == threads
    assert not cache.parent.exists(), "the factory created the cache"
    bound.score_group("g", rollouts("1"))
    assert len(judge.requests) == 1 and cache.exists()
    bound.provider.close()
    compare.provider.close()


def test_an_unreachable_base_url_is_a_clear_error_on_the_first_call_naming_the_url():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    params = {"base_url": url, "model": "judge", "rubric": "r", "retries": 1, "backoff_s": 0.01}
    reward = load("nih-rubric", params)  # loading calls nothing
    with reward, pytest.raises(RewardkitError) as caught:
        reward.score([("q", rollouts("1", "2"))])
    assert f"{url}/chat/completions" in str(caught.value)
    bound = resolve_catalog().bind("nih-rubric", params)
    result = bound.score_group("q", rollouts("1"))
    assert result.items[0].result.status == "error"
    assert f"POST {url}/chat/completions" in result.items[0].result.reason
    bound.provider.close()
