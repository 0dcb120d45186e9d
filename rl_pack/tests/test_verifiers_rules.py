"""multiple-choice, format, overlong and repetition: behaviour, params in preflight, registration."""

from __future__ import annotations

import pytest

from rewardkit import PreflightError, RewardContractError, resolve_catalog
from rewardkit.contracts import RewardCandidate, RewardContext
from rewardkit_rl.verifiers.format_tags import check_format
from rewardkit_rl.verifiers.multiple_choice import extract_choice, score_multiple_choice
from rewardkit_rl.verifiers.overlong import overlong_penalty
from rewardkit_rl.verifiers.repetition import repeated_fraction


def test_rl_pack_registers_its_verifiers() -> None:
    catalog = resolve_catalog()
    for name, owner in (("math", "rewardkit-rl"), ("format", "rewardkit-rl"), ("overlong", "rewardkit-rl")):
        assert name in catalog
        assert catalog.entry(name).owner.distribution == owner
    for name in ("multiple-choice", "repetition"):
        assert name in catalog


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("The answer is (B).", "B"),
        ("Answer: c", "C"),
        ("After checking, the correct option is D", "D"),
        ("\\boxed{A}", "A"),
        ("\\boxed{\\text{(E)}}", "E"),
        ("<answer>B</answer>", "B"),
        ("(C)", "C"),
        ("I choose A, no wait. The answer is B", "B"),
        ("A train leaves at noon.", None),
        ("The answer is Z", None),
        ("", None),
        # a phrasing that names several options states none (revision 2; audit: choice hedges)
        ("The answer is (B) or (C).", None),
        ("Answer: B, C", None),
        ("The answer is B/C", None),
        ("I choose B and C", None),
        ("The correct option is (D), or maybe (A).", None),
        ("The answer is **B** or **C**", None),
        ("The answer is option (A) or option (B)", None),
        ("The answer is B, I think C is also plausible", None),
        ("Answer: B or C. Let me redo it. Answer: B or D", None),
        ("The answer is (B). On reflection the answer is (B) or (C).", None),
        ("The answer is (B) (C).", None),
        ("The answer is (B). Or maybe (C).", None),
        ("Answer: B and/or C", None),
        ("The answer is B (or C)", None),
        # ... but not the article, the pronoun, the same letter, prose or a later single phrasing
        ("The answer is B, a prime number.", "B"),
        ("The answer is B, I think.", "B"),
        ("The answer is B or (B)", "B"),
        ("The answer is B. C is wrong.", "B"),
        ("The answer is B, and the reason is simple", "B"),
        ("The answer is (B) or, equivalently, 5", "B"),
        ("Answer: B or C. Checking again, the answer is C.", "C"),
        ("The answer is B. And C is wrong.", "B"),
        ("The answer is (B) (see above)", "B"),
        ("The answer is B, but C is close", "B"),
    ],
)
def test_multiple_choice_extraction(text: str, letter: str | None) -> None:
    assert extract_choice(text, "ABCDE") == letter


def test_multiple_choice_scoring_and_bad_reference() -> None:
    def score(text: str, reference: object) -> float:
        return score_multiple_choice(RewardCandidate("t", text), RewardContext(reference=reference)).terms[
            "task"
        ]

    assert score("The answer is (B)", "B") == 1.0
    assert score("The answer is (B)", "(b)") == 1.0
    assert score("The answer is (C)", "B") == 0.0
    assert score("The answer is (B) or (C).", "B") == 0.0
    assert score("The correct option is (D), or maybe (A).", "D") == 0.0
    hedged = score_multiple_choice(RewardCandidate("t", "Answer: B, C"), RewardContext(reference="B"))
    assert hedged.terms["task"] == 0.0 and hedged.diagnostics[0].value == 0.0  # extracted: no letter
    with pytest.raises(RewardContractError, match="one of the letters"):
        score("The answer is (B)", "banana")
    with pytest.raises(PreflightError, match="letters must be ASCII letters"):
        resolve_catalog().bind("multiple-choice", {"letters": "A1"})


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("<think>reasoning</think><answer>42</answer>", True),
        ("  <think>a</think>\n<answer>b</answer>\n", True),
        ("<answer>b</answer><think>a</think>", False),  # wrong order
        ("<think>a</think><think>a</think><answer>b</answer>", False),  # twice
        ("<think>a</think>", False),
        ("preamble <think>a</think><answer>b</answer>", False),
        ("<think>a<answer>b</answer></think>", False),  # nested, not in sequence
        ("</think>a<think><answer>b</answer>", False),
        ("", False),
        # every block must hold something (revision 2; audit: format-empty-blocks-only)
        ("<think></think>\n<answer></answer>", False),
        ("<think>a</think><answer> \n\t</answer>", False),
        ("<think>\u200b\u2060</think><answer>b</answer>", False),  # only invisible characters
        # ... that is a letter or a digit (revision 3): punctuation, symbols and blanks are empty
        ("<think>0</think><answer>.</answer>", False),
        ("<think>0</think><answer>x</answer>", True),
        ("<think>\u2800\u3164</think><answer>b</answer>", False),  # braille blank, Hangul filler
        ("<think>a</think><answer>\ufe0f\U000e0041 ...</answer>", False),
    ],
)
def test_format_default_tags(text: str, ok: bool) -> None:
    assert check_format(text, ("think", "answer"), False)[0] is ok


def test_format_options_and_preflight() -> None:
    assert check_format("x <reasoning>a</reasoning> y <final>b</final>", ("reasoning", "final"), True) == (
        True,
        2,
    )
    # an empty block fails with custom tags and with text allowed outside; it still counts as found
    assert check_format("x <reasoning></reasoning> y <final>b</final>", ("reasoning", "final"), True) == (
        False,
        2,
    )
    bound = resolve_catalog().bind("format", {"tags": ["plan", "answer"]})
    result = bound.score_group(
        "g",
        [
            {"trajectory_id": "a", "completion": "<plan>p</plan><answer>1</answer>"},
            {"trajectory_id": "b", "completion": "<plan> </plan><answer>1</answer>"},
        ],
    )
    assert [item.result.terms["format"] for item in result.items] == [1.0, 0.0]
    for params, message in (
        ({"tags": []}, "non-empty"),
        ({"tags": ["a b"]}, "invalid tag"),
        ({"tags": ["a", "a"]}, "distinct"),
    ):
        with pytest.raises(PreflightError, match=message):
            resolve_catalog().bind("format", params)


def test_multiple_choice_and_format_are_registered_at_their_revisions() -> None:
    # revision 2 of each: hedged phrasings and empty blocks score 0 (found by rewardkit audit);
    # revision 3: both read look-alike letters as what they imitate (rewardkit.contracts.text)
    from rewardkit_rl.verifiers import format_tags, multiple_choice

    catalog = resolve_catalog()
    assert catalog.entry("multiple-choice").spec.revision == multiple_choice.REVISION == "3"
    assert catalog.entry("format").spec.revision == format_tags.REVISION == "3"


def test_overlong_follows_dapo() -> None:
    assert overlong_penalty(50, 100, 20, False) == 0.0
    assert overlong_penalty(80, 100, 20, False) == 0.0
    assert overlong_penalty(90, 100, 20, False) == pytest.approx(-0.5)
    assert overlong_penalty(100, 100, 20, False) == pytest.approx(-1.0)
    assert overlong_penalty(101, 100, 20, False) == -1.0
    assert overlong_penalty(10, 100, 20, True) == -1.0  # the engine cut it at the budget


def test_overlong_skips_without_a_token_count_and_checks_params() -> None:
    bound = resolve_catalog().bind("overlong", {"max_tokens": 100, "buffer_tokens": 20})
    result = bound.score_group(
        "g",
        [
            {"trajectory_id": "a", "completion": "x"},
            {"trajectory_id": "b", "completion": "x", "completion_token_count": 95},
            {
                "trajectory_id": "c",
                "completion": "x",
                "completion_token_count": 10,
                "finish_reason": "length",
            },
        ],
    )
    statuses = [(item.result.status, dict(item.result.terms)) for item in result.items]
    assert statuses == [("skipped", {}), ("scored", {"overlong": -0.75}), ("scored", {"overlong": -1.0})]
    with pytest.raises(PreflightError, match=r"buffer_tokens .* exceeds"):
        resolve_catalog().bind("overlong", {"max_tokens": 10, "buffer_tokens": 20})
    with pytest.raises(PreflightError, match="max_tokens"):
        resolve_catalog().bind("overlong", {"buffer_tokens": 20})


def test_repetition() -> None:
    assert repeated_fraction("one two three four five", 3) == 0.0
    assert repeated_fraction("a b c a b c a b c", 3) == pytest.approx(4 / 7)
    assert repeated_fraction("short", 3) == 0.0
    assert repeated_fraction("", 1) == 0.0
    bound = resolve_catalog().bind("repetition", {"ngram_size": 1, "max_penalty": 0.5})
    result = bound.score_group("g", [{"trajectory_id": "a", "completion": "go go go go"}])
    assert result.items[0].result.terms["repetition"] == pytest.approx(-0.5 * 3 / 4)
    with pytest.raises(PreflightError, match="ngram_size"):
        resolve_catalog().bind("repetition", {"ngram_size": 0})


@pytest.mark.parametrize("name", ["multiple-choice", "format", "repetition"])
def test_junk_completions(name: str) -> None:
    bound = resolve_catalog().bind(name)
    junk = ["", "\x00\xff\ufffd", "<think>" * 100_000, "(A) " * 250_000, "\\boxed{" * 50_000]
    junk += ["Answer: A" + ", " * 200_000, "The answer is A" + " or maybe" * 50_000]  # separator floods
    rollouts = [
        {"trajectory_id": f"j{index}", "completion": text, "reference": "A"}
        for index, text in enumerate(junk)
    ]
    result = bound.score_group("g", rollouts)
    assert all(item.result.status == "scored" for item in result.items)
