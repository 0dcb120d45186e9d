"""The distribution's entry point is found, its providers resolve by name, and they pass the kit."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, ClassVar

import pytest
from nih_judge_helpers import judge_params

from rewardkit.seam.catalog import resolve_catalog
from rewardkit_nih_judge.compare import make_compare_judge
from rewardkit_nih_judge.rubric import make_rubric_judge
from rewardkit_nih_judge.testing import ScriptedJudge
from rewardkit_testing import Case, RewardProviderTests, Sample


def test_providers_resolve_by_name_from_this_distribution():
    catalog = resolve_catalog()
    rubric, compare = catalog.entry("nih-rubric"), catalog.entry("nih-compare")
    assert rubric.spec.factory is make_rubric_judge and compare.spec.factory is make_compare_judge
    assert rubric.owner.distribution == compare.owner.distribution == "rewardkit-nih-judge"
    assert rubric.spec.needs == compare.spec.needs == ("prompt",)
    assert rubric.spec.terms == compare.spec.terms == ("score",)


def test_the_fence_and_the_failure_policy_are_part_of_the_revision():
    catalog = resolve_catalog()
    for name in ("nih-rubric", "nih-compare"):
        spec = catalog.entry(name).spec
        # revision 1 read the last JSON object and erred on off-scale; 2 read only a reply that was one
        # object; 3 reads the object between the question's verdict lines and asks with a JSON schema;
        # 4 charges a failed verdict only when it reproduces beside a canary drawn per request; 5
        # finds imitating lines on skeletons (look-alike letters, variation selectors) and breaks
        # more chat-template control-token families; 6 waits out a 429 instead of failing on it
        # (never charged), and the rubric judge names a canary when the transport fails; 7 charges
        # a failed request (5xx, timeout, dropped connection) when it reproduces beside a canary
        assert spec.revision == "7", name
        assert "HMAC" in spec.semantic_identity["fence"]
        assert "reproduction" in spec.semantic_identity["failure_policy"]["off_scale"]
        charges = {
            "verdict_unreadable",
            "off_scale",
            "verdict_refused",
            "too_long_for_judge",
            "request_failed",
        }
        assert charges <= set(spec.diagnostics)


def test_rewardkit_providers_lists_both():
    rows = json.loads(
        subprocess.run(
            [sys.executable, "-m", "rewardkit.cli", "providers", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    listed = {row["name"]: row for row in rows if row["distribution"] == "rewardkit-nih-judge"}
    assert sorted(listed) == ["nih-compare", "nih-rubric"]
    params = listed["nih-rubric"]["params"]
    operator_only = ("base_url", "api", "api_key_env", "rubric_path", "cache_path", "max_concurrency")
    for name in (*operator_only, "timeout_s"):
        assert params[name]["operator_only"], name
    assert "position_flips" in listed["nih-compare"]["diagnostics"]


class _AgainstScriptedJudge(RewardProviderTests):
    server: ClassVar[ScriptedJudge | None] = None
    extra: ClassVar[dict[str, Any]] = {}

    @pytest.fixture(autouse=True)
    def _judge(self):
        with ScriptedJudge(lambda body: {"score": 6, "winner": "tie", "rationale": "kit"}) as server:
            type(self).params = judge_params(server, **self.extra)
            yield

    def cases(self) -> list[Case]:
        texts = ["Paris is the capital of France.", "Lyon.", "I do not know."]
        return [Case(prompt="What is the capital of France?", samples=[Sample(text) for text in texts])]


class TestRubricConformance(_AgainstScriptedJudge):
    provider_name = "nih-rubric"
    extra: ClassVar[dict[str, Any]] = {"rubric": "be right"}


class TestCompareConformance(_AgainstScriptedJudge):
    provider_name = "nih-compare"
