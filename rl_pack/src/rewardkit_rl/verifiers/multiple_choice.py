"""The ``multiple-choice`` verifier: which option letter did the completion pick?

The letter is read from the last of these that is present, in this order of trust: ``\\boxed{X}``,
``<answer>X</answer>``, "the answer is (X)" / "Answer: X" / "option X" phrasings, and a
completion that is only the letter. Only letters in ``letters`` count, so "A" in "A train" is not
read as an answer unless it is stated as one.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rewardkit.builtin.answers import last_answer_tag, last_boxed
from rewardkit.contracts import MetricContribution, RewardCandidate, RewardContext, RewardProviderResult
from rewardkit.errors import RewardContractError
from rewardkit.pointwise import MappedProvider, map_candidates


@lru_cache(maxsize=32)
def _patterns(letters: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    group = f"[{re.escape(letters)}]"
    bare = re.compile(rf"^\W*\(?(?P<letter>{group})\)?\W*$", re.IGNORECASE)
    phrased = re.compile(
        r"(?:answer\s*(?:is|:|：)|correct\s+(?:answer|option|choice)\s*(?:is|:)?|"
        r"(?:option|choice)\s+(?:is\s+)?|I\s+(?:choose|pick|select))"
        rf"[\s*:]*(?:\\text\{{)?[(\[]?(?P<letter>{group})[)\]]?(?![\w])",
        re.IGNORECASE,
    )
    return bare, phrased


def extract_choice(text: str, letters: str) -> str | None:
    """The upper-case option letter the completion states, or None."""
    bare, phrased = _patterns(letters)
    for inner in (last_boxed(text), last_answer_tag(text)):
        if inner is not None:
            found = bare.match(inner.replace("\\text{", "").replace("}", ""))
            if found is not None:
                return found.group("letter").upper()
    letter = None
    for match in phrased.finditer(text):
        letter = match.group("letter")
    if letter is None and len(text) <= 16:
        found = bare.match(text)
        letter = found.group("letter") if found is not None else None
    return letter.upper() if letter is not None else None


def _gold_letter(reference: object, letters: str) -> str:
    if isinstance(reference, str):
        found = _patterns(letters)[0].match(reference.strip())
        if found is not None:
            return found.group("letter").upper()
    raise RewardContractError(
        f"multiple-choice needs a reference that is one of the letters {letters!r}, got {reference!r:.80}",
        rule="reference-value",
    )


def score_multiple_choice(
    candidate: RewardCandidate, context: RewardContext, *, letters: str = "ABCDEFGHIJ"
) -> RewardProviderResult:
    """1 when the stated option letter equals the reference letter, else 0."""
    gold = _gold_letter(context.reference, letters)
    choice = extract_choice(candidate.completion, letters)
    return RewardProviderResult(
        terms={"task": float(choice == gold)},
        diagnostics=(MetricContribution("extracted", float(choice is not None)),),
    )


def multiple_choice_provider(*, letters: str = "ABCDEFGHIJ") -> MappedProvider:
    """Factory: ``letters`` must be distinct ASCII letters (checked here, in preflight)."""
    if not isinstance(letters, str) or not letters or not letters.isascii() or not letters.isalpha():
        raise ValueError(f"multiple-choice: letters must be ASCII letters like 'ABCD', got {letters!r}")
    letters = letters.upper()
    if len(set(letters)) != len(letters):
        raise ValueError(f"multiple-choice: letters must be distinct, got {letters!r}")
    return map_candidates(score_multiple_choice, letters=letters)
