"""Every reader of candidate text runs in linear time (issue 40): answer extraction and every
pattern over a completion, in the calling process, where no worker timeout applies.

Each completion below is built to make one pattern family backtrack or search again from every
position (an unclosed ``\\color[``, white ``\\color`` switches, an unclosed ``\\(``, a line of
spaces before Minerva's closing sentence, "option" and a run of spaces, ...). Each is 1 MiB, ten
times the 100 KiB of the issue, and is scored through ``rewardkit.load(...).score(...)``; the
assertion is on the verdict. Python's regex engine exposes no step counter, so the work is bounded
by a hang guard instead of a timed assertion: a quadratic reader needs at least 100 times its
100 KiB time at 1 MiB (the worst one took 13 s at 100 KiB, so hours here), a linear one takes
milliseconds, and the guard (``faulthandler``, which also stops a regex that never yields to
Python) ends the run at 10 s with every thread's traceback. Nothing here starts a math worker:
each verdict is one the calling process decides.
"""

from __future__ import annotations

import faulthandler
from collections.abc import Iterator
from typing import Any

import pytest

import rewardkit

SIZE = 1 << 20  # characters of adversarial text in each completion
HANG_GUARD_S = 10.0


@pytest.fixture(autouse=True)
def hang_guard() -> Iterator[None]:
    faulthandler.dump_traceback_later(HANG_GUARD_S, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def ids(cases: list[tuple[str, str, float]]) -> list[str]:
    return [case[0] for case in cases]


def repeated(unit: str) -> str:
    """``unit`` repeated to ``SIZE`` characters."""
    return unit * (SIZE // len(unit) + 1)


def score_one(provider: str, params: dict[str, Any], completion: str, reference: object) -> dict[str, Any]:
    """The final reward and the provider's breakdown of one completion."""
    rollout = {"trajectory_id": "t", "completion": completion, "reference": reference}
    with rewardkit.load({"rl": {"reward": {"provider": provider, "params": params}}}) as reward:
        batch = reward.score([("g", [rollout])])
    [(_, candidate)] = list(batch.candidates())
    return {"final": candidate.final, **candidate.breakdown[provider]}


# (what the completion attacks, completion, reference "4": the verdict)
MATH_CASES = [
    ("an unclosed \\color[ model, again and again", repeated("\\color[") + " \\boxed{4}", 1.0),
    ("white \\color switches with no end of maths", "\\boxed{4}" + repeated("\\color{white}"), 1.0),
    ("white \\color switches, then the box they hide", repeated("\\color{white}x") + "\\boxed{4}", 0.0),
    ("\\textcolor with an unclosed colour", repeated("\\textcolor{") + "\\boxed{4}", 1.0),
    ("phantoms whose argument never closes", "\\boxed{4} " + repeated("\\phantom{"), 1.0),
    ("box commands that never close", repeated("\\boxed{") + "\\boxed{4}", 1.0),
    ("box commands and spaces that never open", repeated("\\boxed ") + "\\boxed{4}", 1.0),
    ("braces around the box", repeated("{") + "\\boxed{4}" + repeated("}"), 1.0),
    ("escaped braces", repeated("\\{") + "\\boxed{4}", 1.0),
    ("answer tags that never close", repeated("<answer>") + "4</answer>", 1.0),
    ("an unclosed \\( in the final-answer line", "Final answer: $4$ " + repeated("\\("), 1.0),
    ("unclosed $ in the final-answer line", "Final answer: $4$ " + repeated("$ "), 1.0),
    # An unfinished closing sentence stays part of the answer line, as it does after one space.
    ("spaces before Minerva's closing sentence", "Final answer: 4" + repeated(" ") + "I hope it is", 0.0),
    (
        "spaces before Minerva's whole closing sentence",
        "Final answer: 4" + repeated(" ") + "I hope it is correct.",
        1.0,
    ),
    ("spaces after the final-answer phrase", "The final answer is 4" + repeated(" "), 1.0),
    ("final-answer phrases with no answer", repeated("final answer\n") + "Final answer: 4", 1.0),
    ("a box of a 5,000-digit number next to the answer", "\\boxed{4} \\boxed{" + "7" * 5000 + "}", 0.0),
]


@pytest.mark.parametrize(("attack", "completion", "expected"), MATH_CASES, ids=ids(MATH_CASES))
def test_math_reads_adversarial_text_in_linear_time(attack: str, completion: str, expected: float) -> None:
    scored = score_one("math", {"workers": 1}, completion, "4")
    assert scored["status"] == "scored", (attack, scored)
    assert scored["final"] == expected, (attack, scored)


# (what it attacks, completion, verdict for the reference letter B)
CHOICE_CASES = [
    ("option and a run of spaces", "The answer is (B). option" + repeated(" ") + "!", 1.0),
    ("correct answer and a run of spaces", "The answer is (B). correct answer" + repeated(" ") + "!", 1.0),
    ("answer is and a run of spaces", "answer is" + repeated(" ") + "!" + " The answer is (B)", 1.0),
    ("separators after the letter", "The answer is (B)" + repeated(" ,") + " maybe", 1.0),
    ("hedging words after the letter", "The answer is (B), " + repeated("maybe ") + "!", 1.0),
    ("boxes that never close", repeated("\\boxed{") + " The answer is (B)", 1.0),
]


@pytest.mark.parametrize(("attack", "completion", "expected"), CHOICE_CASES, ids=ids(CHOICE_CASES))
def test_multiple_choice_reads_adversarial_text_in_linear_time(
    attack: str, completion: str, expected: float
) -> None:
    scored = score_one("multiple-choice", {}, completion, "B")
    assert scored["final"] == expected, (attack, scored)


# (what it attacks, completion, verdict for the reference 4)
NUMBER_CASES = [
    ("a fraction whose denominator has 5,000 digits", "The answer is 1/" + "9" * 5000, 0.0),
    ("spaces after a number", "#### 4" + repeated(" ") + "x", 1.0),
    ("answer lines with no colon", repeated("Answer *\n") + "Answer: 4", 1.0),
    ("thousands separators that never end", "#### 4\n" + repeated("1,"), 1.0),
]


@pytest.mark.parametrize(("attack", "completion", "expected"), NUMBER_CASES, ids=ids(NUMBER_CASES))
def test_gsm8k_reads_adversarial_text_in_linear_time(attack: str, completion: str, expected: float) -> None:
    scored = score_one("gsm8k", {}, completion, 4)
    assert scored["status"] == "scored", (attack, scored)
    assert scored["final"] == expected, (attack, scored)
