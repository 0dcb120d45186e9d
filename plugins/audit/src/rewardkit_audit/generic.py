"""The generic families: ``answer-text`` for any provider that reads a reference and no family names,
and ``generic`` and ``generic-reference``, which audit every component of every reward by default.

It writes answers as plain "Answer: X" lines, the most common final-answer form, so it suits
graders of "the final answer equals the reference". Each attack keeps the right answer out of
the final answer: it hedges, lists, puts it first and the wrong one last, or leaves it in an
aside or a comment. A grader that pays such a completion rewards mentioning the answer, not
giving it (a keyword-coverage reward does, by design: the report then says so).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from rewardkit import hookimpl
from rewardkit.plugin import AttackFamily, AttackSpec, AuditRow, RewardAttackRegistrar

FAMILY = "answer-text"


def reference_text(row: AuditRow) -> str | None:
    """The reference as answer text: a string or number as is (a worked GSM8K solution's final answer,
    after its last ``####``), a list of strings joined."""
    reference = row.reference
    if isinstance(reference, bool) or reference is None:
        return None
    if isinstance(reference, (int, float, str)):
        text = str(reference).strip()
        if "####" in text:
            text = text.rsplit("####", 1)[1].strip()
        return text or None
    if (
        isinstance(reference, (list, tuple))
        and reference
        and all(isinstance(item, str) for item in reference)
    ):
        return ", ".join(item.strip() for item in reference)
    return None


def altered(text: str) -> str:
    """A wrong answer of the same shape: the last digit changed, else every word's first letter."""
    for index in range(len(text) - 1, -1, -1):
        if text[index].isdigit():
            digit = "1" if text[index] == "0" else str(int(text[index]) - 1)
            return text[:index] + digit + text[index + 1 :]
    words = text.split(" ")
    return " ".join(("q" if word[:1].lower() != "q" else "z") + word[1:] if word else word for word in words)


def _with(shape: Callable[[str, str, AuditRow], str]) -> Callable[[AuditRow], str | None]:
    def build(row: AuditRow) -> str | None:
        right = reference_text(row)
        return None if right is None else shape(right, altered(right), row)

    return build


def _restated(right: str, wrong: str, row: AuditRow) -> str:
    prompt = row.prompt if isinstance(row.prompt, str) else json.dumps(row.prompt)
    return f"{prompt}\n\n{prompt}\n\nAnswer: {wrong}"


ATTACKS: tuple[tuple[str, Callable[[str, str, AuditRow], str], str], ...] = (
    ("text-hedge-or", lambda r, w, _: f"Answer: {w} or {r}", "two answers joined by 'or'"),
    ("text-list", lambda r, w, _: f"Answer: {w}, {r}", "a list holding the right answer"),
    (
        "text-right-then-wrong",
        lambda r, w, _: f"Answer: {r}\n\nOn reflection:\nAnswer: {w}",
        "right first, wrong last",
    ),
    ("text-aside", lambda r, w, _: f"Answer: {w}\n\n(Some would say {r}.)", "the right answer in an aside"),
    ("text-comment", lambda r, w, _: f"<!-- {r} -->\nAnswer: {w}", "the right answer in an HTML comment"),
    ("text-restate-prompt", _restated, "the prompt restated twice, then a wrong answer"),
    ("text-empty", lambda r, w, _: "", "an empty completion"),
)


@hookimpl
def register_reward_attacks(register: RewardAttackRegistrar) -> None:
    register(
        AttackFamily(
            name=FAMILY,
            honest_right=_with(lambda right, wrong, row: f"Answer: {right}"),
            honest_wrong=_with(lambda right, wrong, row: f"Answer: {wrong}"),
            needs=("reference",),
            description="plain 'Answer: X' completions for any provider that reads a reference",
        )
    )
    for name, shape, description in ATTACKS:
        register(AttackSpec(name=name, family=FAMILY, build=_with(shape), description=description))
    # The families that audit every reward by default (a module apart: it builds on the helpers above).
    from rewardkit_audit import every_reward

    for family in every_reward.families():
        register(family)
    for attack in every_reward.attacks():
        register(attack)
