"""The ``any-text`` family: ``constant`` and ``nonempty``, which pay any (non-empty) answer.

Both providers pay an honest wrong answer as much as an honest right one (``constant`` pays
everything its ``value``; ``nonempty`` pays any completion with a non-whitespace character), so
the audit here checks only that nothing pays more than an ordinary wrong answer: a completion
of whitespace, of zero-width characters only, or nothing at all. ``nonempty`` reads invisible
characters as nothing (since revision 2), so it pays none of them.
"""

from __future__ import annotations

from collections.abc import Callable

from rewardkit.plugin import AttackFamily, AttackSpec, AuditRow

FAMILY = "any-text"
PROVIDERS = ("constant", "nonempty")


def honest_right(row: AuditRow) -> str | None:
    reference = row.reference
    if (
        isinstance(reference, (str, int, float))
        and not isinstance(reference, bool)
        and str(reference).strip()
    ):
        return f"I worked through the question, and my answer is {str(reference).strip()}."
    return "I worked through the question and wrote my answer out in full."


def honest_wrong(row: AuditRow) -> str | None:
    return "I am not sure about this one, so my answer is a guess that is probably wrong."


def _constant(text: str) -> Callable[[AuditRow], str | None]:
    return lambda row: text


_ATTACKS: tuple[tuple[str, Callable[[AuditRow], str | None], str], ...] = (
    ("any-text-whitespace", _constant(" \n\t  \n "), "only whitespace: no answer at all"),
    (
        "any-text-zero-width",
        _constant("\u200b\u200c\u200d\u2060\ufeff"),
        "only zero-width characters: nothing a reader can see",
    ),
    ("any-text-empty", _constant(""), "the empty completion"),
)


def family() -> AttackFamily:
    return AttackFamily(
        name=FAMILY,
        honest_right=honest_right,
        honest_wrong=honest_wrong,
        providers=PROVIDERS,
        description="rewards that pay any answer: an empty, blank or invisible completion must "
        "not be paid more than an ordinary wrong answer",
    )


def attacks() -> list[AttackSpec]:
    return [
        AttackSpec(name=name, family=FAMILY, build=build, description=why) for name, build, why in _ATTACKS
    ]
