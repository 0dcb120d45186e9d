"""The ``multiple-choice`` verifier: which option letter did the completion pick?

The letter is read from the last of these that is present, in this order of trust: ``\\boxed{X}``,
``<answer>X</answer>``, "the answer is (X)" / "Answer: X" / "option X" phrasings, and a
completion that is only the letter. Only letters in ``letters`` count, so "A" in "A train" is not
read as an answer unless it is stated as one.

A phrasing that names more than one option ("the answer is (B) or (C)", "Answer: B, C", "B/C",
"I choose B and C", "(D), or maybe (A)") states no single answer: it reads as no letter (score 0,
``extracted`` 0), and no earlier phrasing is read instead. The options count as listed when the
letter is followed by separators (``,`` ``/`` ``&`` ``|`` ``;`` "or", "and", "and/or", ", or",
". Or"), optional hedging words ("maybe", "perhaps", "option", ...) and another option letter, or
by only spaces and a bracketed letter ("(B) (C)"); a bare ``a`` or ``I`` followed by a word is
the article or the pronoun, not an option ("B, a prime").

The completion is read as a reader sees it (``rewardkit.contracts.text.fold_lookalikes``): NFKC (a full-width
``Ｂ`` is ``B``), invisible characters removed, and look-alike letters read as the ASCII letter they
imitate, so "(B) or (С)" with a Cyrillic ``С`` lists two options, as it does on screen.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rewardkit.plugin import (
    EXTRACTED_ANSWER,
    MappedProvider,
    MetricContribution,
    RewardCandidate,
    RewardContext,
    RewardContractError,
    RewardProviderResult,
    fold_lookalikes,
    last_answer_tag,
    last_boxed,
    map_candidates,
)

# 1 read the first letter of a phrasing and ignored listed alternatives ("(B) or (C)"); 2 read raw
# code points, so an alternative written with a look-alike letter or a zero-width space was unseen.
REVISION = "3"

# What may join a stated letter to another one: list separators ("or" also after a full stop:
# "(B). Or maybe (C)"), then hedging words; or only spaces before a bracketed letter ("(B) (C)").
_JOINER = r"(?:,|/|&|\||;|\bor\b|\band\b)"
# Each run is matched once, without backtracking into it ("(?=(?P<x>...))(?P=x)" is an atomic
# group on Python 3.10), so a flood of separators costs linear time.
_SEPARATOR = (
    rf"[\s*_)\]}}(]*(?=(?P<joiners>(?:[.!?]\s*or\b|{_JOINER})(?:[\s*_]*{_JOINER})*))(?P=joiners)[\s*_(]*"
)
_HEDGE_WORDS = (
    r"(?=(?P<hedges>(?:(?:maybe|perhaps|possibly|probably|potentially|alternatively|also|even|just|"
    r"else|option|choice|answer|I\s+think|I\s+guess)\b[\s*_:,]*)*))(?P=hedges)"
)
# The article "a" and the pronoun "I" before a word are not option letters.
_WORD_AFTER = re.compile(r"\s+[A-Za-z]")


@lru_cache(maxsize=32)
def _patterns(letters: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    group = f"[{re.escape(letters)}]"
    bare = re.compile(rf"^\W*\(?(?P<letter>{group})\)?\W*$", re.IGNORECASE)
    # The spaces after "option", "option is" and "correct answer" are each read once (atomic, as
    # above): followed by ``[\s*:]*``, a plain ``\s+`` let a run of spaces be split between the two
    # in every way (quadratic in the run, 250 s for 100 KiB of spaces after "option").
    phrased = re.compile(
        r"(?:answer\s*(?:is|:|：)|correct\s+(?:answer|option|choice)(?=(?P<gap>\s*))(?P=gap)(?:is|:)?|"
        r"(?:option|choice)(?=(?P<space>\s+))(?P=space)(?:is(?=(?P<after_is>\s+))(?P=after_is))?|"
        r"I\s+(?:choose|pick|select))"
        rf"[\s*:]*(?:\\text\{{)?[(\[]?(?P<letter>{group})[)\]]?(?![\w])",
        re.IGNORECASE,
    )
    # another option listed right after a stated letter: (C), [C], \text{C} or a bare C
    alternative = re.compile(
        rf"{_SEPARATOR}{_HEDGE_WORDS}(?:\\text\{{)?"
        rf"(?:[(\[](?P<enclosed>{group})[)\]]|(?P<bare>{group})(?![\w]))"
        rf"|[*_)\]}}]*\s[\s*_]*[(\[](?P<beside>{group})[)\]]",
        re.IGNORECASE,
    )
    return bare, phrased, alternative


def _listed_after(text: str, position: int, alternative: re.Pattern[str]) -> tuple[set[str], int]:
    """The option letters listed right after a stated letter ending at ``position``, and where
    the list ends."""
    listed: set[str] = set()
    while (found := alternative.match(text, position)) is not None:
        letter = found.group("enclosed") or found.group("bare") or found.group("beside")
        if found.group("bare") in ("a", "i", "I") and _WORD_AFTER.match(text, found.end()):
            break  # "B, a prime", "B, I think": an article or a pronoun, not an option
        listed.add(letter.upper())
        position = found.end()
    return listed, position


def extract_choice(text: str, letters: str) -> str | None:
    """The upper-case option letter the completion states, or None."""
    text = fold_lookalikes(text)
    bare, phrased, alternative = _patterns(letters)
    for inner in (last_boxed(text), last_answer_tag(text)):
        if inner is not None:
            found = bare.match(inner.replace("\\text{", "").replace("}", ""))
            if found is not None:
                return found.group("letter").upper()
    letter, stated, position = None, False, 0
    while (match := phrased.search(text, position)) is not None:
        # the last phrasing counts; one that lists other options states none
        stated, letter = True, match.group("letter").upper()
        listed, position = _listed_after(text, match.end(), alternative)
        if listed - {letter}:
            letter = None
    if not stated and len(text) <= 16:
        found = bare.match(text)
        letter = found.group("letter").upper() if found is not None else None
    return letter


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
        # the letter it read, wrong ones too, for a reader (display only, ``EXTRACTED_ANSWER``)
        notes=None if choice is None else {EXTRACTED_ANSWER: choice},
    )


def multiple_choice_provider(*, letters: str = "ABCDEFGHIJ") -> MappedProvider:
    """Factory: ``letters`` must be distinct ASCII letters (checked here, in preflight)."""
    if not isinstance(letters, str) or not letters or not letters.isascii() or not letters.isalpha():
        raise ValueError(f"multiple-choice: letters must be ASCII letters like 'ABCD', got {letters!r}")
    letters = letters.upper()
    if len(set(letters)) != len(letters):
        raise ValueError(f"multiple-choice: letters must be distinct, got {letters!r}")
    return map_candidates(score_multiple_choice, letters=letters)
