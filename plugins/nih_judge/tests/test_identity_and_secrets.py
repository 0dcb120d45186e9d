"""Identity covers the judge and every setting that changes a verdict; the key's value shows up nowhere."""

from __future__ import annotations

import io
import json
import logging

import pytest
import yaml
from nih_judge_helpers import judge_params, rollouts

import rewardkit
from rewardkit.contracts.errors import RewardkitError
from rewardkit.job.score_job import run_score
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_nih_judge.testing import Reply, graded

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture

SECRET = "nvapi-PLANTED-SECRET-5f0c2a9e"


def identity(name: str, params: dict) -> str:
    return resolve_catalog().bind(name, params).identity


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("NIH_TEST_KEY", SECRET)
    monkeypatch.setenv("NIH_OTHER_KEY", "another-secret")
    return "NIH_TEST_KEY"


def test_every_setting_is_in_the_identity(judge, key, tmp_path):
    base = judge_params(judge, rubric="r", api_key_env=key)
    changes = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "other-judge",
        "judge_revision": "2025-01-31",
        "rubric": "another rubric",
        "template": "{prompt} / {completion}",
        "scale": [0, 5],
        "temperature": 0.5,
        "max_tokens": 64,
        "timeout_s": 11.0,
        "deadline_s": 31.0,
        "retries": 5,
        "backoff_s": 0.02,
        "max_concurrency": 2,
        "parse_retries": 0,
        "json_mode": "off",
        "api": "completions",
        "api_key_env": "NIH_OTHER_KEY",
        "cache_path": str(tmp_path / "c.db"),
    }
    hashes = {identity("nih-rubric", base)}
    for name, value in changes.items():
        hashes.add(identity("nih-rubric", {**base, name: value}))
        assert len(hashes) == 2, f"changing {name} did not change the identity"
        hashes.discard(identity("nih-rubric", {**base, name: value}))
    compare = judge_params(judge)
    assert identity("nih-compare", compare) != identity("nih-compare", {**compare, "mode": "listwise"})
    assert identity("nih-compare", compare) != identity("nih-compare", {**compare, "max_comparisons": 3})
    # equal configurations are one identity: [1, 10] and [1.0, 10.0], an explicit default
    assert identity("nih-rubric", {**base, "scale": [1, 10]}) == identity("nih-rubric", base)
    assert identity("nih-rubric", {**base, "retries": 3}) == identity("nih-rubric", base)


def test_a_changed_rubric_file_changes_the_identity_under_the_same_path(judge, tmp_path):
    rubric = tmp_path / "rubric.md"
    rubric.write_text("Reward correct arithmetic.")
    params = judge_params(judge, rubric_path=str(rubric))
    before = identity("nih-rubric", params)
    normal = resolve_catalog().normalise("nih-rubric", params)
    assert len(normal["judge_content_sha256"]) == 64  # recorded with the run's params
    rubric.write_text("Reward correct arithmetic and units.")
    assert identity("nih-rubric", params) != before
    assert (
        resolve_catalog().normalise("nih-rubric", params)["judge_content_sha256"]
        != normal["judge_content_sha256"]
    )
    # the same text inline is the same judge content (the path is a separate param)
    inline = judge_params(judge, rubric="Reward correct arithmetic and units.")
    assert (
        resolve_catalog().normalise("nih-rubric", inline)["judge_content_sha256"]
        == resolve_catalog().normalise("nih-rubric", params)["judge_content_sha256"]
    )


def test_the_planted_secret_is_used_but_appears_in_no_identity_log_metric_error_or_result(
    judge, key, tmp_path, caplog
):
    down = False  # the server fails every request (the canary's too), so the batch fails

    def echo(body):
        # a careless server: echoes the credentials it received into what it answers
        header = judge.headers[-1].get("Authorization", "")
        if down or graded(body) == "fail":
            return Reply(f"bad request from {header}", status=500)
        return {"score": 5, "rationale": f"you sent {header}"}

    judge.answer = echo
    params = judge_params(judge, rubric="r", api_key_env=key, retries=1)
    spec = {"components": [{"provider": "nih-rubric", "params": params}], "onError": "none"}
    config = {"rl": {"group_size": 2, "reward": {"spec": spec}}}
    seen: list[str] = []
    with caplog.at_level(logging.DEBUG):
        with rewardkit.load(config) as reward:
            batch = reward.score([("q", rollouts("ok", "fail"))])
            seen += [json.dumps([record.__dict__ for record in reward.providers], default=str)]
            seen += [json.dumps(reward.worker.spec_identity), repr(reward.worker.providers)]
        seen += [json.dumps(batch.to_jsonl_rows()), json.dumps(batch.metrics), repr(batch)]
        # an error that fails the batch (a candidate whose request fails beside a passing canary
        # is charged, not an error: the judge must fail for everyone)
        strict = {"rl": {"group_size": 2, "reward": {"provider": "nih-rubric", "params": params}}}
        down = True
        with rewardkit.load(strict) as reward, pytest.raises(RewardkitError) as caught:
            reward.score([("q", rollouts("fail", "fail"))])
        down = False
        seen.append(str(caught.value))
        # the main job's files: results, manifest, summary
        rows = tmp_path / "rollouts.jsonl"
        rows.write_text(
            "\n".join(json.dumps({"group_id": "q", "completion": c, "prompt": "p"}) for c in ("ok", "fail"))
        )
        config_file = tmp_path / "config.yaml"
        config_file.write_text(
            yaml.safe_dump({**config, "rl": {**config["rl"], "data": {"rollouts_path": str(rows)}}})
        )
        out, stdout, stderr = tmp_path / "out.jsonl", io.StringIO(), io.StringIO()
        assert run_score(str(config_file), [], str(out), stdout=stdout, stderr=stderr) == 0
    seen += [
        out.read_text(),
        (tmp_path / "out.jsonl.run.json").read_text(),
        stdout.getvalue(),
        stderr.getvalue(),
    ]
    seen.append(caplog.text)
    assert any(f"Bearer {SECRET}" == h.get("Authorization") for h in judge.headers), "the key was not sent"
    assert all(SECRET not in text for text in seen), next(text for text in seen if SECRET in text)[:300]
    # what the careless server echoed is shown with the variable's name instead
    rows_text, error_text = seen[3], str(caught.value)
    assert "you sent Bearer <value of $NIH_TEST_KEY>" in rows_text
    assert "500" in error_text and "bad request from Bearer <value of $NIH_TEST_KEY>" in error_text
