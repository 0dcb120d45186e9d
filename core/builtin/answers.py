"""Final-answer rewards over exact numbers: ``gsm8k`` and ``arithmetic``.
A completion's answer is read from the first of these forms that is present (the last occurrence
of that form wins): ``#### N``, ``\\boxed{N}``, ``<answer>N</answer>``, an ``A: N`` /
``Answer: N`` / ``Final answer: N`` line, "the answer is N", or a completion that is nothing but
one number. Reading "the last number anywhere" is available as the explicit
``fallback_last_number`` option because it rewards a model that stops mid-sentence.
Values compare as exact fractions after removing thousands separators, currency and units.

The markers are found in the completion as a reader sees it (``read_as_reader``): invisible
characters removed, and each other non-ASCII character read as ``rewardkit.contracts.text.fold_lookalikes``
reads it on its own (``Аnswer:`` with a Cyrillic ``А``, ``＃＃＃＃``, ``the ans\\u200bwer is`` are
markers). The number is read from what the candidate *wrote* at the same place, with only its
invisible characters removed: NFKC would read ``10²`` as ``102`` and a look-alike fold ``١`` as
``l``, so no fold touches a digit."""

from __future__ import annotations

import math
import re
import string
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache, partial
from typing import NamedTuple

from rewardkit.builtin.expressions import ExpressionError, evaluate
from rewardkit.builtin.numbers import last_number, parse_number, stated_number
from rewardkit.contracts import MetricContribution, RewardCandidate, RewardContext, RewardProviderResult
from rewardkit.contracts.errors import RewardContractError
from rewardkit.contracts.text import fold_lookalikes, has_invisible, visible
from rewardkit.contracts.text_tables import BLANK, COMPAT, INVISIBLE, SKELETON

# [ \t]*, not \s*: an empty "####" line must not read the next line of prose as its answer.
_HASH_FORM = re.compile(r"####[ \t]*(?P<span>[^\n]*)")
_ANSWER_LINE = re.compile(
    r"^[ \t*#>_]*(?:A|Answer|Final\s+answer)[\s*_]*[:：][\s*_]*(?P<span>[^\n]*)", re.IGNORECASE | re.MULTILINE
)
_ANSWER_IS = re.compile(r"\bthe\s+(?:final\s+)?answer\s+is\b[\s:*_]*(?P<span>[^\n]*)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.;!?](?=\s|$)")
_OPERATOR = re.compile(r"[+*/()=]|(?<=[\d\s])-")
_BOX_COMMANDS = ("\\boxed", "\\fbox")
_MAX_BOX_ATTEMPTS = 8
EXTRACTED_ANSWER = "extracted_answer"  # the note naming the text a verifier read as the answer


@dataclass(frozen=True, slots=True)
class FoundAnswer:
    """The text a completion gives as its answer, and which form it was found in."""

    form: str
    span: str


def _last_boxed_span(text: str) -> tuple[int, int] | None:
    """Where the content of the last well-formed ``\\boxed{...}`` (or ``\\fbox{...}``) lies, or None."""
    best = max(text.rfind(command) for command in _BOX_COMMANDS)
    # Bounded so that a completion full of unclosed boxes costs linear time, not quadratic.
    for _ in range(_MAX_BOX_ATTEMPTS):
        if best < 0:
            break
        content = _braced_after(text, best)
        if content is not None:
            return content
        # An unbalanced last box: look for an earlier, well-formed one.
        best = max(text.rfind(command, 0, best) for command in _BOX_COMMANDS)
    return None


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) with balanced braces, or None."""
    span = _last_boxed_span(text)
    return None if span is None else text[span[0] : span[1]]


def _last_answer_tag_span(text: str) -> tuple[int, int] | None:
    end = text.rfind("</answer>")
    if end < 0:
        return None
    start = text.rfind("<answer>", 0, end)
    return None if start < 0 else (start + len("<answer>"), end)


def last_answer_tag(text: str) -> str | None:
    """Content of the last complete ``<answer>...</answer>``, or None; linear time on any input."""
    span = _last_answer_tag_span(text)
    return None if span is None else text[span[0] : span[1]]


def _braced_after(text: str, start: int) -> tuple[int, int] | None:
    opening = text.find("{", start)
    if opening < 0 or text[start:opening].strip() not in _BOX_COMMANDS:
        return None
    depth = 0
    for index, char in enumerate(text[opening:], opening):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return opening + 1, index
    return None


def _last_match_span(pattern: re.Pattern[str], text: str) -> tuple[int, int] | None:
    span = None
    for match in pattern.finditer(text):
        span = match.span("span")
    return span


def _last_match(pattern: re.Pattern[str], text: str) -> str | None:
    span = _last_match_span(pattern, text)
    return None if span is None else text[span[0] : span[1]]


def _candidate_points() -> Iterator[int]:
    """Every code point ``fold_lookalikes`` may change: ASCII (its controls), the invisible and blank
    characters, those with a compatibility decomposition, the keys of the confusables table, and
    those NFC changes (canonical singletons: the Kelvin sign, the Greek question mark ``;``; all
    below U+30000)."""
    yield from range(0x80)
    yield from (point for point in range(0x30000) if unicodedata.normalize("NFC", chr(point)) != chr(point))
    for first, last in (*INVISIBLE, *COMPAT):
        yield from range(first, last + 1)
    yield from BLANK
    yield from (int(line.split(" ", 1)[0], 16) for line in SKELETON.split("\n") if line)


# What the markers are made of. A character a reader reads as other characters (``−`` as ``-``,
# ``𝟒`` as ``4``) cannot make or break a marker, so it is left as written: countdown's thinking
# holds a dozen minus signs per completion, and each fold costs a Python call.
_MARKER_CHARACTERS = frozenset(string.ascii_letters + " \t\n\r\f\v#*>_:：\\{}</")


# What the answer tags are made of: countdown's completions fold only these (not ``×``).
_TAG_CHARACTERS = frozenset("answer</>")


@cache
def _reader_folds(alphabet: frozenset[str]) -> tuple[dict[str, str], re.Pattern[str]]:
    """Each character a reader reads as characters of ``alphabet``, or as nothing (``fold_lookalikes`` of
    it on its own: nothing if invisible, a space if blank, its look-alike ASCII character, else
    its NFKC), and a pattern finding them. Built on the first text that is not plain ASCII (about
    40 ms), so a CJK or emoji text is scanned in C and Python runs only for the characters that
    change."""
    folds: dict[str, str] = {}
    for point in _candidate_points():
        char = chr(point)
        read = fold_lookalikes(char)
        if read != char and alphabet.issuperset(read):
            folds[char] = read
    # A class of astral ranges is tested range by range on every character (a BMP class through a
    # bitmap), so the class holds the BMP characters and every astral character, looked up.
    points = sorted(ord(char) for char in folds if ord(char) < 0x10000)
    ranges: list[list[int]] = []
    for point in points:
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    body = "".join(
        re.escape(chr(first)) + ("" if first == last else "-" + re.escape(chr(last)))
        for first, last in ranges
    )
    return folds, re.compile(f"[{body}{chr(0x10000)}-{chr(0x10FFFF)}]")


class ReaderText(NamedTuple):
    """A text as a reader sees it (``read``), with the way back to what was written.

    Fold ``k`` replaced the written character at ``starts[k]`` with ``lengths[k]`` read characters
    (0 for an invisible one) starting at ``read_at[k]`` in ``read``. No folds: ``read`` is
    ``written`` (printable ASCII, the hot path). A named tuple: a frozen dataclass costs about a
    microsecond to build, a fifth of reading a GSM8K answer."""

    written: str
    read: str
    starts: tuple[int, ...] = ()
    read_at: tuple[int, ...] = ()
    lengths: tuple[int, ...] = ()

    def _written_index(self, index: int) -> int:
        """The index in ``written`` of ``read[index]``: a character a fold produced maps to the
        folded character, a position after invisible characters to after them."""
        fold = bisect_right(self.read_at, index) - 1  # the last fold starting at or before index
        if fold < 0:
            return index
        past = index - self.read_at[fold] - self.lengths[fold]
        return self.starts[fold] if past < 0 else self.starts[fold] + 1 + past

    def written_span(self, span: tuple[int, int]) -> str:
        """What was written where the reader reads ``read[start:end]``, less its invisible
        characters: digits stay as written (``10²`` is not ``102``)."""
        start, end = span
        if not self.starts:
            return self.written[start:end]
        return visible(self.written[self._written_index(start) : self._written_index(end)])


def read_as_reader(text: str, alphabet: frozenset[str] = _MARKER_CHARACTERS) -> ReaderText:
    """``text`` with each character read on its own as ``rewardkit.contracts.text.fold_lookalikes`` reads it,
    so that markers are found where a reader finds them. Character by character, not NFKC of the
    whole text, so every position maps back to the written text. Only characters read as
    characters of ``alphabet`` (what the markers sought are made of) or as nothing are folded."""
    if text.isascii() and not has_invisible(text):
        return ReaderText(text, text)
    folds, folded = _reader_folds(alphabet)
    starts: list[int] = []
    read_at: list[int] = []
    lengths: list[int] = []
    grown = 0  # read characters minus written characters so far

    def fold(found: re.Match[str]) -> str:
        nonlocal grown
        char = found.group()
        read = folds.get(char)
        if read is None:  # an astral character read as itself (an emoji)
            return char
        start = found.start()
        starts.append(start)
        read_at.append(start + grown)
        lengths.append(len(read))
        grown += len(read) - 1
        return read

    read = folded.sub(fold, text)
    return ReaderText(text, read, tuple(starts), tuple(read_at), tuple(lengths))


# The forms an answer is read from, in precedence order (a completion that is one number comes last).
_FORMS: tuple[tuple[str, Callable[[str], tuple[int, int] | None]], ...] = (
    ("hash", partial(_last_match_span, _HASH_FORM)),
    ("boxed", _last_boxed_span),
    ("answer-tag", _last_answer_tag_span),
    ("answer-line", partial(_last_match_span, _ANSWER_LINE)),
    ("answer-is", partial(_last_match_span, _ANSWER_IS)),
)


def read_answer_tag(text: str) -> str | None:
    """The written content of the last ``<answer>...</answer>`` a reader sees (look-alike or
    invisible-padded tags included), less its invisible characters; None when there is none."""
    reader = read_as_reader(text, _TAG_CHARACTERS)
    span = _last_answer_tag_span(reader.read)
    return None if span is None else reader.written_span(span)


def find_answer(text: str) -> FoundAnswer | None:
    """The completion's stated answer, by the precedence in the module docstring, or None. Markers
    are found as a reader sees them; the span is the written text, less invisible characters."""
    reader = read_as_reader(text)
    for form, find in _FORMS:
        span = find(reader.read)
        if span is not None:
            return FoundAnswer(form, reader.written_span(span))
    whole = reader.written_span((0, len(reader.read)))
    return FoundAnswer("bare", whole) if parse_number(whole) is not None else None


def stated_part(span: str) -> str:
    """The part of a stated answer its number is read from: its first sentence, and there the part
    after the last ``=`` ("3 + 4 = 7" gives " 7")."""
    span = _SENTENCE_END.split(span, maxsplit=1)[0]
    if "=" in span:
        span = span.rsplit("=", 1)[1]
    return span


def answer_value(span: str) -> Fraction | None:
    """The number a stated answer gives (read from ``stated_part``). That part must state one number
    (``stated_number``): "18 or 19", "18 \\pm 1" or "18^2" state none, so a policy cannot pay itself by
    hedging with the right number first."""
    return stated_number(stated_part(span))


@dataclass(frozen=True, slots=True)
class ReadAnswer:
    """What a completion answered: the number (``None``: none, or not exactly one), the form it was
    found in (``none`` when absent) and the text the number was read from (``None`` when absent)."""

    value: Fraction | None
    form: str
    text: str | None


def read_completion(text: str, fallback_last_number: bool) -> ReadAnswer:
    """The completion's answer, by the precedence in the module docstring."""
    found = find_answer(text)
    if found is not None:
        part = stated_part(found.span)
        return ReadAnswer(stated_number(part), found.form, part.strip())
    if fallback_last_number:
        value = last_number(visible(text))
        if value is not None:
            return ReadAnswer(value, "last-number", str(value))
    return ReadAnswer(None, "none", None)


def completion_value(text: str, fallback_last_number: bool) -> tuple[Fraction | None, str]:
    """The completion's answer as a number and the form it came from (``none`` when absent)."""
    answer = read_completion(text, fallback_last_number)
    return answer.value, answer.form


def _numeric_reference(provider: str, reference: object) -> Fraction | str:
    """A reference that is already a number, or its text (to be read by the caller)."""
    if isinstance(reference, bool) or not isinstance(reference, (int, float, str)):
        raise RewardContractError(
            f"{provider} needs a number or a string reference, got {type(reference).__name__}",
            rule="reference-type",
        )
    if isinstance(reference, float):
        if not math.isfinite(reference):
            raise RewardContractError(
                f"{provider} reference {reference!r} is not finite", rule="reference-value"
            )
        return Fraction(repr(reference))
    if isinstance(reference, int):
        return Fraction(reference)
    return reference


def gsm8k_gold(reference: object) -> Fraction | None:
    """The gold number of a GSM8K reference: a number, ``"... #### N"``, ``"A: N"`` or ``"N"``."""
    value = _numeric_reference("gsm8k", reference)
    return value if isinstance(value, Fraction) else _gsm8k_gold_text(value)


# A group's candidates share one reference: read once, which pays for finding every candidate's
# markers as a reader sees them (about 1 µs on an ASCII completion).
@lru_cache(maxsize=1024)
def _gsm8k_gold_text(value: str) -> Fraction | None:
    span = _last_match(_HASH_FORM, value)
    if span is not None:
        return answer_value(span)
    bare = parse_number(value)
    if bare is not None:
        return bare
    found = find_answer(value)
    return answer_value(found.span) if found is not None else None


def _verdict(gold: Fraction, completion: str, fallback_last_number: bool) -> RewardProviderResult:
    answer = read_completion(completion, fallback_last_number)
    value = answer.value
    return RewardProviderResult(
        terms={"task": float(value is not None and value == gold)},
        diagnostics=(MetricContribution("extracted", float(value is not None)),),
        # The text read as the answer, even one stating no single number ("18 or 19": extracted 0),
        # so a 0 can be read against what the completion said.
        notes=None if answer.text is None else {EXTRACTED_ANSWER: answer.text},
    )


def score_gsm8k(
    candidate: RewardCandidate, context: RewardContext, *, fallback_last_number: bool = False
) -> RewardProviderResult:
    """1 when the completion's final answer equals the GSM8K gold number exactly, else 0; skipped
    (with the reason) when the reference holds no number."""
    gold = gsm8k_gold(context.reference)
    if gold is None:
        return RewardProviderResult.skip(
            f"the gsm8k reference has no number: {str(context.reference)[:80]!r}"
        )
    return _verdict(gold, candidate.completion, fallback_last_number)


def arithmetic_gold(reference: object) -> Fraction | None:
    """The exact value of an arithmetic reference: a number, or an expression like ``"3*(4+5)"``."""
    value = _numeric_reference("arithmetic", reference)
    if isinstance(value, Fraction):
        return value
    try:
        return evaluate(value.strip(), allow_unary_minus=True).value
    except (ExpressionError, ZeroDivisionError):
        # "$1,200" is a number with dressing; "2 +" is a broken expression, not the number 2.
        return None if _OPERATOR.search(value) else parse_number(value)


def score_arithmetic(
    candidate: RewardCandidate, context: RewardContext, *, fallback_last_number: bool = False
) -> RewardProviderResult:
    """1 when the completion's answer equals the reference's exact value (a number or expression);
    skipped (with the reason) when the reference is neither a number nor a valid expression."""
    gold = arithmetic_gold(context.reference)
    if gold is None:
        return RewardProviderResult.skip(
            f"the arithmetic reference is not a number or expression: {str(context.reference)[:80]!r}"
        )
    return _verdict(gold, candidate.completion, fallback_last_number)


__all__ = [
    "EXTRACTED_ANSWER",
    "FoundAnswer",
    "ReadAnswer",
    "ReaderText",
    "answer_value",
    "arithmetic_gold",
    "completion_value",
    "find_answer",
    "gsm8k_gold",
    "last_answer_tag",
    "last_boxed",
    "read_answer_tag",
    "read_as_reader",
    "read_completion",
    "score_arithmetic",
    "score_gsm8k",
    "stated_part",
]
