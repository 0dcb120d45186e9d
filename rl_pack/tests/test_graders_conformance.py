"""The conformance kit (``rewardkit_testing``) on each OpenAI grader provider, with grades worked out by
hand; the model graders ask a scripted judge on loopback (rewardkit-nih-judge's ``ScriptedJudge``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rewardkit_testing import Case, RewardProviderTests, Sample

testing = pytest.importorskip("rewardkit_nih_judge.testing")

EXACT = {
    "type": "string_check",
    "input": "{{ sample.output_text }}",
    "reference": "{{ item.answer }}",
    "operation": "eq",
}
MESSAGES = [{"role": "user", "content": "Answer {{ item.answer }}? {{ sample.output_text }}"}]


def says_yes(body: dict[str, Any]) -> dict[str, Any]:
    """Score 1 (the first label, or the top of the range) for "yes", else 0 or the second label."""
    yes = testing.graded(body) == "yes"
    labels = "1 = pass" in testing.user_text(body)
    return {"score": (1 if yes else 2) if labels else (1 if yes else 0), "rationale": "-"}


@pytest.fixture(scope="module", autouse=True)
def judge() -> Iterator[Any]:
    with testing.ScriptedJudge(says_yes) as server:
        TestScoreModel.params = {**TestScoreModel.params, "judge": {"base_url": server.base_url}}
        TestLabelModel.params = {**TestLabelModel.params, "judge": {"base_url": server.base_url}}
        yield server


class TestStringCheck(RewardProviderTests):
    provider_name = "openai-string-check"
    params = {"grader": EXACT}

    def cases(self) -> list[Case]:
        return [Case(prompt="q", reference="4", samples=[Sample("4", value=1.0), Sample("5", value=0.0)])]


class TestTextSimilarity(RewardProviderTests):
    provider_name = "openai-text-similarity"
    params = {"grader": {**EXACT, "type": "text_similarity", "evaluation_metric": "rouge_1"}}
    params["grader"].pop("operation")

    def cases(self) -> list[Case]:
        # "a b" against "a c": one unigram of two shared each way
        return [
            Case(prompt="q", reference="a c", samples=[Sample("a b", value=0.5), Sample("a c", value=1.0)])
        ]


class TestPython(RewardProviderTests):
    provider_name = "openai-python"
    params = {
        "grader": {"type": "python", "source": "def grade(s, i):\n    return len(s['output_text']) / 4\n"}
    }

    def cases(self) -> list[Case]:
        return [
            Case(
                prompt="q",
                reference={"answer": "x"},
                samples=[Sample("ab", value=0.5), Sample("abcd", value=1.0)],
            )
        ]


class TestMulti(RewardProviderTests):
    provider_name = "openai-multi"
    params = {"grader": {"type": "multi", "graders": {"a": EXACT}, "calculate_output": "1 - a"}}

    def cases(self) -> list[Case]:
        return [Case(prompt="q", reference="4", samples=[Sample("4", value=0.0), Sample("5", value=1.0)])]


class TestScoreModel(RewardProviderTests):
    provider_name = "openai-score-model"
    params: dict[str, Any] = {"grader": {"type": "score_model", "model": "judge", "input": MESSAGES}}

    def cases(self) -> list[Case]:
        return [Case(prompt="q", reference="x", samples=[Sample("yes", value=1.0), Sample("no", value=0.0)])]


class TestLabelModel(RewardProviderTests):
    provider_name = "openai-label-model"
    params: dict[str, Any] = {
        "grader": {
            "type": "label_model", "model": "judge", "input": MESSAGES,
            "labels": ["pass", "fail"], "passing_labels": ["pass"],
        }
    }  # fmt: skip

    def cases(self) -> list[Case]:
        return [Case(prompt="q", reference="x", samples=[Sample("yes", value=1.0), Sample("no", value=0.0)])]
