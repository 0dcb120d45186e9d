"""The conformance kit on both providers: sample groups, and what each candidate must get."""

from __future__ import annotations

from rewardkit_testing import Case, RewardProviderTests, Sample


class TestFinalAnswer(RewardProviderTests):
    provider_name = "final-answer"

    def cases(self) -> list[Case]:
        return [
            Case(
                prompt="What is the capital of France?",
                reference="Paris",
                samples=[
                    Sample("France's capital is on the Seine.\nAnswer: Paris", value=1.0),
                    Sample("paris", value=1.0),
                    Sample("Answer: Lyon", value=0.0),
                    Sample("   ", status="skipped"),
                ],
            )
        ]


class TestKeywordCoverage(RewardProviderTests):
    provider_name = "keyword-coverage"
    params = {"case_sensitive": True}

    def cases(self) -> list[Case]:
        return [
            Case(
                reference=["red", "blue"],
                samples=[
                    Sample("red and blue", terms={"coverage": 1.0, "all_found": 1.0}),
                    Sample("Red and blue", terms={"coverage": 0.5, "all_found": 0.0}),
                    Sample("red and blue and", finish_reason="length", status="skipped"),
                ],
            ),
            Case(reference=[], samples=[Sample("red", status="skipped")]),
            Case(reference="red", samples=[Sample("red", status="error")]),
        ]
