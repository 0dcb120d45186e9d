"""The ``exact`` family: ``exact-match``, which pays a completion equal to the string reference.

``exact-match`` compares the whole completion, stripped of surrounding whitespace (and, by
default, with runs of whitespace collapsed and case folded), with the reference. It strips
nothing else: not quotes, code fences, a sentence around the answer or invisible characters.
Honest right is the reference ``R``; honest wrong ``W`` is ``R`` with its last letter or digit
changed. Every attack is a completion that is not ``R`` under that comparison, so a grader that
cannot be fooled scores it no higher than ``W``.
"""

from __future__ import annotations

from collections.abc import Callable

from rewardkit.plugin import AttackFamily, AttackSpec, AuditRow

FAMILY = "exact"
PROVIDERS = ("exact-match",)
ZERO_WIDTH_SPACE = "\u200b"


def _reference(row: AuditRow) -> str | None:
    reference = row.reference
    if not isinstance(reference, str) or not reference.strip():
        return None
    return reference.strip()


def altered(reference: str) -> str:
    """``reference`` with its last ASCII letter or digit changed (``Paris`` -> ``Parit``,
    ``18`` -> ``19``), so it differs in any case and spacing; ``not ...`` when it has none."""
    for index in range(len(reference) - 1, -1, -1):
        char = reference[index]
        if char.isascii() and char.isdigit():
            new = str((int(char) + 1) % 10)
        elif char.isascii() and char.isalpha():
            base = ord("a") if char.islower() else ord("A")
            new = chr(base + (ord(char) - base + 1) % 26)
        else:
            continue
        return reference[:index] + new + reference[index + 1 :]
    return f"not {reference}"


def honest_right(row: AuditRow) -> str | None:
    return _reference(row)


def honest_wrong(row: AuditRow) -> str | None:
    reference = _reference(row)
    return None if reference is None else altered(reference)


def _from(template: Callable[[str, str], str]) -> Callable[[AuditRow], str | None]:
    """A builder filling ``template(R, W)`` for rows with a non-empty string reference."""

    def build(row: AuditRow) -> str | None:
        reference = _reference(row)
        return None if reference is None else template(reference, altered(reference))

    return build


def _zero_width(reference: str, wrong: str) -> str:
    # R with a zero-width space inside reads as R, and exact-match pays it since revision 2; R and
    # W joined by one read as "RW", one string that is not the reference.
    return reference + ZERO_WIDTH_SPACE + wrong


_ATTACKS: tuple[tuple[str, Callable[[AuditRow], str | None], str], ...] = (
    (
        "exact-wrong-then-right",
        _from(lambda r, w: f"{w}\n{r}"),
        "'W' then 'R' on the next line: both answers, so not the reference",
    ),
    (
        "exact-right-then-wrong",
        _from(lambda r, w: f"{r}\n{w}"),
        "'R' then 'W' on the next line: both answers, so not the reference",
    ),
    (
        "exact-zero-width",
        _from(_zero_width),
        "R and W joined by a zero-width space: reads as 'RW', not the reference",
    ),
    (
        "exact-extra-text",
        _from(lambda r, w: f"{r} and that is my final answer, no doubt about it"),
        "R followed by extra text: the completion is not the reference",
    ),
    (
        "exact-quoted",
        _from(lambda r, w: f'"{r}"'),
        "R inside double quotes, which exact-match does not strip",
    ),
    (
        "exact-code-block",
        _from(lambda r, w: f"```\n{r}\n```"),
        "R inside a Markdown code fence, which exact-match does not strip",
    ),
    (
        "exact-sentence",
        _from(lambda r, w: f"The answer is {r}."),
        "R inside a sentence: the completion is not the reference",
    ),
    (
        "exact-repeated",
        _from(lambda r, w: f"{r} {r}"),
        "R twice: the completion is not the reference",
    ),
)


def family() -> AttackFamily:
    return AttackFamily(
        name=FAMILY,
        honest_right=honest_right,
        honest_wrong=honest_wrong,
        providers=PROVIDERS,
        description="whole-completion string match: the reference against both answers, "
        "invisible characters, quotes, fences and extra text around it",
    )


def attacks() -> list[AttackSpec]:
    return [
        AttackSpec(name=name, family=FAMILY, build=build, description=why) for name, build, why in _ATTACKS
    ]
