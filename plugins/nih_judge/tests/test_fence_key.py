"""The fence markers: unpredictable to a candidate, stable where the verdict cache needs them.

With ``cache_path`` the key lives in ``<cache_path>.fence-key`` and a rerun in another process
builds the same prompts, so the cache hits; with ``fence_secret_env`` the operator's secret (never
shown) decides; otherwise each process has its own key.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest
from nih_judge_helpers import bind, judge_params, rollouts

import rewardkit
from rewardkit.contracts.errors import PreflightError, RewardkitError
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_nih_judge.testing import announced

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture

SECRET = "fence-PLANTED-SECRET-8d1e0c7b55aa"
KEY_SUFFIX = ".fence-key"  # documented: the key lives in <cache_path>.fence-key

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import rewardkit
    config, groups = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    with rewardkit.load(config) as reward:
        batch = reward.score([(g, rows) for g, rows in groups])
    print(json.dumps(batch.metrics))
    """
)


def config(params: dict) -> dict:
    return {"rl": {"group_size": 2, "reward": {"provider": "nih-rubric", "params": params}}}


GROUPS = [("q", rollouts("42", "41"))]


def in_another_process(params: dict, env: dict | None = None) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(config(params)), json.dumps(GROUPS)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "REWARDKIT_STRICT_PLUGINS": "1", **(env or {})},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def markers(judge, since: int = 0) -> list[dict[str, str]]:
    return [announced(body) for body in judge.requests[since:]]


def test_the_verdict_cache_hits_on_a_repeated_request_in_another_process(judge, tmp_path):
    cache = tmp_path / "cache" / "verdicts.sqlite"
    key_file = tmp_path / "cache" / ("verdicts.sqlite" + KEY_SUFFIX)
    params = judge_params(judge, rubric="be right", cache_path=str(cache))
    with rewardkit.load(config(params)) as reward:
        assert not key_file.exists(), "loading made the key"
        first = reward.score(GROUPS)
    assert len(judge.requests) == 2 and first.metrics["train/reward_provider/nih-rubric/cache_miss"] == 1.0
    assert all(set(found) == {"task", "answer"} for found in markers(judge)), "the prompts were not fenced"
    assert key_file.exists() and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    again = in_another_process(params)
    assert len(judge.requests) == 2, "the other process asked the judge again: its prompts differ"
    assert again["train/reward_provider/nih-rubric/cache_hit"] == 1.0
    # the key is per provider: a second judge sharing the cache file fences with other markers
    other = bind("nih-rubric", judge, rubric="be right", cache_path=str(cache), model="judge-2")
    other.score_group("q", GROUPS[0][1])
    assert markers(judge, 2)[0]["task"] != markers(judge)[0]["task"]
    other.provider.close()


def test_without_a_cache_or_secret_each_process_has_its_own_markers(judge):
    params = judge_params(judge, rubric="be right")
    for _ in range(2):
        bound = resolve_catalog().bind("nih-rubric", params)
        bound.score_group("q", GROUPS[0][1])
        bound.provider.close()
    here = markers(judge)
    assert here[:2] == here[2:]  # one process: the same request is the same prompt
    in_another_process(params)
    assert markers(judge, 4)[0]["task"] != here[0]["task"]


def test_an_operator_secret_decides_the_markers_and_is_never_shown(judge, monkeypatch, caplog):
    monkeypatch.setenv("NIH_FENCE_SECRET", SECRET)
    monkeypatch.setenv("NIH_OTHER_SECRET", "another-secret-value-1234")
    params = judge_params(judge, rubric="be right", fence_secret_env="NIH_FENCE_SECRET")
    with rewardkit.load(config(params)) as reward:
        batch = reward.score(GROUPS)
        seen = [repr(reward.worker.providers), json.dumps(reward.worker.spec_identity)]
    in_another_process(params)  # the same secret in another process: the same markers
    assert markers(judge)[:2] == markers(judge)[2:4]
    other = {**params, "fence_secret_env": "NIH_OTHER_SECRET"}
    in_another_process(other)
    assert markers(judge)[4]["task"] != markers(judge)[0]["task"]
    seen += [json.dumps(judge.requests), json.dumps(batch.to_jsonl_rows()), json.dumps(batch.metrics)]
    seen += [resolve_catalog().bind("nih-rubric", params).identity, caplog.text]
    assert all(SECRET not in text for text in seen)
    assert (
        resolve_catalog().bind("nih-rubric", params).identity
        != resolve_catalog().bind("nih-rubric", {**params, "fence_secret_env": None}).identity
    )  # the reference (a name) is part of the identity, like api_key_env


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("NIH_FENCE_UNSET", None, "does not hold a secret of at least 16 characters"),
        ("NIH_FENCE_SHORT", "short", "does not hold a secret of at least 16 characters"),
        ("not a name: " + SECRET, None, "must be the NAME of an environment variable"),
    ],
)
def test_a_fence_secret_reference_that_holds_no_secret_is_refused_at_load(judge, monkeypatch, variable, value,
                                                                           message):  # fmt: skip
    if value is None:
        monkeypatch.delenv(variable, raising=False)
    else:
        monkeypatch.setenv(variable, value)
    params = judge_params(judge, rubric="be right", fence_secret_env=variable)
    with pytest.raises(PreflightError, match=message) as caught:
        rewardkit.load(config(params))
    assert SECRET not in str(caught.value)


def test_a_key_file_that_holds_no_key_is_an_infrastructure_error(judge, tmp_path):
    cache = tmp_path / "verdicts.sqlite"
    (tmp_path / ("verdicts.sqlite" + KEY_SUFFIX)).write_text("not hex\n")
    params = judge_params(judge, rubric="be right", cache_path=str(cache))
    with rewardkit.load(config(params)) as reward, pytest.raises(RewardkitError, match="does not hold a key"):
        reward.score(GROUPS)
    assert judge.requests == []
