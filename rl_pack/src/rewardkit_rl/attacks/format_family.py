"""The ``format``, ``overlong`` and ``repetition`` attack families of ``rewardkit audit``.

These providers do not read the answer, so their honest wrong completion breaks what they check
instead: the honest text without its tags (``format``), the honest text run far past any length
budget (``overlong``), the honest text written twice (``repetition``). Each attack breaks the
check at least as badly while trying to look as if it did not, so a checker that cannot be fooled
scores it no higher than the honest wrong one.

- ``format`` (default tags ``think``, ``answer``): the checked rule (docs/verifiers.md) is each
  tag exactly once as ``<t>..</t>``, in order, not nested, each block holding more than whitespace
  and invisible characters. Every attack breaks that rule whether or not ``allow_outside_text``
  is set (a tag twice, nested, reversed, unclosed, every block empty); a checker that only looks
  for the tags somewhere in the text pays them.
- ``overlong``: the provider reads ``completion_token_count``; the audit sets it to a whitespace
  word count (``len(text.split())``). The honest wrong text has ``OVERLONG_WORDS`` words (past
  any budget below that); the attacks have as many words, separated by newlines, tabs or
  Unicode spaces instead of ASCII spaces, which a checker counting ``" "`` misses. The attacks
  cannot aim just under or over the configured budget: a builder sees the row, not the params.
- ``repetition``: the honest text repeated without spaces, with invisible characters, in other
  letter cases, or with a small change per copy; a checker that counts whitespace words as they
  are, or exact duplicate lines, pays them.
"""

from __future__ import annotations

import re
from itertools import cycle, islice

from rewardkit.plugin import AttackFamily, AttackSpec, AuditRow, AuditRowBuilder, RewardAttackRegistrar
from rewardkit_rl.attacks.math_family import reference_text

__all__ = [
    "FORMAT_FAMILY",
    "OVERLONG_FAMILY",
    "OVERLONG_WORDS",
    "REPETITION_FAMILY",
    "register_attacks",
]

# Words in an over-budget completion: past every max_tokens in use (DAPO's is 20,480).
OVERLONG_WORDS = 1 << 17
_TAGS = re.compile(r"</?(?:think|answer)\s*/?>", re.IGNORECASE)
_FALLBACK = (
    "I read the question, write down what is given and what is asked, work through the steps one "
    "at a time and check the result against the conditions before I state it."
)


def _body(row: AuditRow) -> str:
    """The row's own completion (its tags taken out), else a neutral paragraph."""
    text = _TAGS.sub(" ", row.completion).strip() if isinstance(row.completion, str) else ""
    if text:
        return text
    reference = reference_text(row)
    return _FALLBACK if reference is None else f"{_FALLBACK} The answer is ${reference}$."


def _answer(row: AuditRow) -> str:
    reference = reference_text(row)
    return f"$\\boxed{{{reference}}}$" if reference is not None else "The answer is stated above."


def _reasoning(row: AuditRow) -> str:
    body = _body(row)
    return body if len(body) <= 2000 else body[:2000].rsplit(" ", 1)[0]


# --- format -------------------------------------------------------------------------------------


def _format_right(row: AuditRow) -> str:
    return f"<think>\n{_reasoning(row)}\n</think>\n<answer>\n{_answer(row)}\n</answer>"


def _format_wrong(row: AuditRow) -> str:
    return f"{_reasoning(row)}\n\n{_answer(row)}"


def _format(template: str) -> AuditRowBuilder:
    def build(row: AuditRow) -> str:
        return template.replace("{T}", _reasoning(row)).replace("{A}", _answer(row))

    return build


_FORMAT: tuple[tuple[str, AuditRowBuilder, str], ...] = (
    (
        "format-empty-blocks",
        _format("<think></think><answer></answer>\n<think>\n{T}\n</think>\n<answer>\n{A}\n</answer>"),
        "empty blocks before the real ones: each tag appears twice",
    ),
    (
        "format-nested",
        _format("<think>\n{T}\n<answer>\n{A}\n</answer>\n</think>"),
        "the answer block nested inside the think block",
    ),
    (
        "format-code-fence",
        _format("<think>\n{T}\n</think>\n```xml\n<think>...</think>\n<answer>\n{A}\n</answer>\n```"),
        "the answer block inside a code fence after a think block: think appears twice",
    ),
    (
        "format-reversed",
        _format("<answer>\n{A}\n</answer>\n<think>\n{T}\n</think>"),
        "both blocks, in the wrong order",
    ),
    (
        "format-unclosed",
        _format("<think>\n{T}\n<answer>\n{A}\n</answer>"),
        "a think block that is never closed",
    ),
    (
        "format-duplicate-answer",
        _format("<think>\n{T}\n</think>\n<answer>\n{A}\n</answer>\n<answer>\n{A}\n</answer>"),
        "the answer block twice",
    ),
    (
        "format-closing-first",
        _format("</think>\n{T}\n<think>\n<answer>\n{A}\n</answer>"),
        "the closing think tag before the opening one",
    ),
    # the tags in the right order with nothing in them: the format without its content
    ("format-empty-blocks-only", _format("<think></think>\n<answer></answer>"), "both blocks, both empty"),
    (
        "format-blank-blocks",
        _format("<think>\n \t\n</think>\n<answer>\u200b\u2060</answer>"),
        "both blocks holding only whitespace, or only zero-width characters",
    ),
    (
        "format-empty-blocks-text-outside",
        _format("<think></think>\n<answer></answer>\n{T}\n\n{A}"),
        "both blocks empty, the reasoning and the answer written after them outside any block",
    ),
)

FORMAT_FAMILY = AttackFamily(
    name="format",
    honest_right=_format_right,
    honest_wrong=_format_wrong,
    providers=("format",),
    description="repeated, empty, nested, fenced, reversed and unclosed tag blocks against a tag check",
)


# --- overlong -----------------------------------------------------------------------------------


def _overlong_right(row: AuditRow) -> str:
    return _body(row)


def _long(row: AuditRow, separator: str) -> str:
    words = _body(row).split()
    return separator.join(islice(cycle(words), OVERLONG_WORDS))


def _overlong_wrong(row: AuditRow) -> str:
    return _long(row, " ")


def _joined(separator: str) -> AuditRowBuilder:
    def build(row: AuditRow) -> str:
        return _long(row, separator)

    return build


_OVERLONG: tuple[tuple[str, AuditRowBuilder, str], ...] = (
    ("overlong-newlines", _joined("\n"), "the over-budget text with a newline between words"),
    ("overlong-tabs", _joined("\t"), "the over-budget text with a tab between words"),
    ("overlong-nbsp", _joined("\u00a0"), "the over-budget text with no-break spaces between words"),
    ("overlong-ideographic-space", _joined("\u3000"), "the over-budget text with ideographic spaces"),
)

OVERLONG_FAMILY = AttackFamily(
    name="overlong",
    honest_right=_overlong_right,
    honest_wrong=_overlong_wrong,
    providers=("overlong",),
    description=f"completions of {OVERLONG_WORDS:,} words whose separators are not ASCII spaces",
)


# --- repetition ---------------------------------------------------------------------------------

_ZERO_WIDTH = "\u200b"
_VARIED_COPIES = 8
_MIN_VARIED_WORDS = 20


def _repetition_right(row: AuditRow) -> str:
    return _body(row)


def _repetition_wrong(row: AuditRow) -> str:
    body = _body(row)
    return f"{body}\n{body}"


def _unspaced(row: AuditRow) -> str:
    return "".join(_body(row).split()) * 4


def _zero_width(row: AuditRow) -> str:
    words = _body(row).split()
    copies = [" ".join(word[:1] + _ZERO_WIDTH * copy + word[1:] for word in words) for copy in range(4)]
    return "\n".join(copies)


def _cases(row: AuditRow) -> str:
    body = _body(row)
    return "\n".join((body, body.upper(), body.swapcase(), body.title()))


def _tiny_variations(row: AuditRow) -> str | None:
    words = _body(row).split()
    if len(words) < _MIN_VARIED_WORDS:
        return None
    copies = []
    for copy in range(_VARIED_COPIES):
        varied = list(words)
        where = (copy * 7) % len(varied)
        varied[where] = f"{varied[where]},"
        copies.append(f"Attempt {copy + 1}: " + " ".join(varied))
    return "\n".join(copies)


_REPETITION: tuple[tuple[str, AuditRowBuilder, str], ...] = (
    ("repeat-unspaced", _unspaced, "the text four times with every space taken out"),
    (
        "repeat-zero-width",
        _zero_width,
        "four copies, each word padded with a different number of zero-width spaces",
    ),
    ("repeat-case", _cases, "four copies in different letter cases"),
    (
        "repeat-tiny-variations",
        _tiny_variations,
        f"{_VARIED_COPIES} numbered copies on their own lines, a comma after a different word in each",
    ),
)

REPETITION_FAMILY = AttackFamily(
    name="repetition",
    honest_right=_repetition_right,
    honest_wrong=_repetition_wrong,
    providers=("repetition",),
    description="repeats hidden by removed spaces, invisible characters, letter case and small edits",
)


def register_attacks(register: RewardAttackRegistrar) -> None:
    """Registers the ``format``, ``overlong`` and ``repetition`` families and their attacks."""
    for family, attacks in (
        (FORMAT_FAMILY, _FORMAT),
        (OVERLONG_FAMILY, _OVERLONG),
        (REPETITION_FAMILY, _REPETITION),
    ):
        register(family)
        for name, build, description in attacks:
            register(AttackSpec(name=name, family=family.name, build=build, description=description))
