"""The conformance kit applied to every provider of rewardkit-rl, with inputs each one scores.

The reward-model providers need torch and tiny models built by their tests: their kit classes
live in test_reward_models.py (tox env rm).
"""

from __future__ import annotations

import sys

from rewardkit.seam.catalog import resolve_catalog
from rewardkit_testing import Case, RewardProviderTests, Sample

IN_TEST_REWARD_MODELS = {"reward-model", "reward-model-ensemble"}
# The OpenAI grader providers' kit classes live in test_graders_conformance.py (two need a judge server).
IN_TEST_GRADERS = {
    "openai-string-check", "openai-text-similarity", "openai-score-model",
    "openai-label-model", "openai-python", "openai-multi",
}  # fmt: skip


class TestFormat(RewardProviderTests):
    provider_name = "format"

    def cases(self) -> list[Case]:
        return [
            Case(
                samples=[
                    Sample("<think>2 + 2 is 4</think><answer>4</answer>", value=1.0),
                    Sample("<answer>4</answer>", value=0.0),
                    Sample("4", value=0.0),
                ]
            )
        ]


class TestOverlong(RewardProviderTests):
    provider_name = "overlong"
    params = {"max_tokens": 100, "buffer_tokens": 20}

    def cases(self) -> list[Case]:
        return [
            Case(
                samples=[
                    Sample("short", completion_token_count=50, value=0.0),
                    Sample("in the buffer", completion_token_count=90, value=-0.5),
                    Sample("at the limit", completion_token_count=100, value=-1.0),
                    Sample("no count recorded", completion_token_count=None, status="skipped"),
                ]
            )
        ]


class TestRepetition(RewardProviderTests):
    provider_name = "repetition"

    def cases(self) -> list[Case]:
        return [
            Case(
                samples=[
                    Sample("the cat sat on the mat", value=0.0),
                    Sample("the cat sat the cat sat the cat sat", value=-4 / 7),
                    Sample("", value=0.0),
                ]
            )
        ]


class TestMultipleChoice(RewardProviderTests):
    provider_name = "multiple-choice"

    def cases(self) -> list[Case]:
        return [
            Case(
                prompt="Which is a prime? (A) 4 (B) 5 (C) 6",
                reference="B",
                samples=[
                    Sample("The answer is B.", value=1.0),
                    Sample("Answer: (C)", value=0.0),
                    Sample("I am not sure", value=0.0),
                ],
            )
        ]


class TestMath(RewardProviderTests):
    provider_name = "math"
    params = {"workers": 1}

    def cases(self) -> list[Case]:
        return [
            Case(
                reference="\\frac{1}{2}",
                samples=[
                    Sample("The final answer is \\boxed{0.5}", value=1.0),
                    Sample("so \\boxed{\\frac{2}{4}}", value=1.0),
                    Sample("\\boxed{3}", value=0.0),
                    Sample("no answer at all", value=0.0),
                ],
            ),
            Case(name="empty reference", reference="", samples=[Sample("\\boxed{1}", status="skipped")]),
        ]


class TestCodeTests(RewardProviderTests):
    provider_name = "code-tests"
    params = {"timeout_s": 2.0, "concurrency": 2}

    def cases(self) -> list[Case]:
        return [
            Case(
                name="MBPP asserts",
                reference={"test_list": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]},
                samples=[
                    Sample("def add(a, b):\n    return a + b\n", terms={"pass_rate": 1.0, "all_passed": 1.0}),
                    Sample("def add(a, b):\n    return 3\n", terms={"pass_rate": 0.5, "all_passed": 0.0}),
                    Sample("def add(a, b):\n    return a - b\n", terms={"pass_rate": 0.0, "all_passed": 0.0}),
                    Sample("def add(a, b):\n    return 1 / 0\n", terms={"pass_rate": 0.0, "all_passed": 0.0}),
                ],
            ),
            Case(
                name="stdin and stdout",
                reference={"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]},
                samples=[
                    Sample("a, b = map(int, input().split())\nprint(a + b)\n", value=1.0),
                    Sample("print(3)\n", value=0.5),
                ],
            ),
        ]


def test_every_provider_of_the_pack_has_a_conformance_class():
    tested = {
        cls.provider_name
        for cls in vars(sys.modules[__name__]).values()
        if isinstance(cls, type) and issubclass(cls, RewardProviderTests) and "cases" in vars(cls)
    }
    pack = {
        entry.spec.name for entry in resolve_catalog().entries() if entry.owner.distribution == "rewardkit-rl"
    }
    missing = pack - tested - IN_TEST_REWARD_MODELS - IN_TEST_GRADERS
    assert not missing, f"rewardkit-rl providers without kit cases: {sorted(missing)}"
