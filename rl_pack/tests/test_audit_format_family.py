"""The ``format``, ``overlong`` and ``repetition`` attack families against the shipped providers.

For every attack, on rows from testdata: the shipped provider scores the honest right completion
above the honest wrong one and every attack no higher than the honest wrong one (never an error);
a deliberately weak checker (tags found anywhere; tokens counted as ASCII spaces; whitespace words
counted as they are, or exact duplicate lines) scores the attack above the honest wrong one on most
rows, so each attack has teeth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.seam.attacks import AttackFamily, AttackSpec, AuditRow, reward_attacks
from rewardkit_rl.attacks.format_family import (
    FORMAT_FAMILY,
    OVERLONG_FAMILY,
    OVERLONG_WORDS,
    REPETITION_FAMILY,
)
from rewardkit_rl.verifiers.format_tags import check_format
from rewardkit_rl.verifiers.overlong import overlong_penalty

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"
COT = TESTDATA / "shared/Qwen2.5-Math/evaluation/data/eval_rm_maj_example/math_cot_100.jsonl"
PROSE = TESTDATA / "prose/english.txt"
MAX_TOKENS, BUFFER_TOKENS = 4096, 1024

Scores = dict[str, dict[str, float | None]]  # row id -> candidate name -> final (None: error)
Texts = dict[str, dict[str, str]]


def attacks_of(family: AttackFamily) -> tuple[AttackSpec, ...]:
    return tuple(reward_attacks().of_family(family.name))


def rows_with_completions(count: int) -> list[AuditRow]:
    """MATH questions with a right Qwen2.5-Math response as the row's completion, then prose
    paragraphs, then rows with only a prompt and a reference (what the audit's rows hold)."""
    cot = [json.loads(line) for line in COT.open()]
    rows = [
        AuditRow(
            row_id=f"cot-{row['idx']}",
            prompt=row["question"],
            reference=row["gt"],
            completion=next(text for text, ok in zip(row["code"], row["score"]) if ok),
        )
        for row in cot
        if any(row["score"])
    ][: count - 4]
    paragraphs = [part.strip() for part in PROSE.read_text().split("\n\n") if len(part.split()) >= 20]
    rows += [
        AuditRow(row_id=f"prose-{index}", prompt="Write.", completion=text)
        for index, text in enumerate(paragraphs[:2])
    ]
    rows += [
        AuditRow(row_id=f"bare-{row['idx']}", prompt=row["question"], reference=row["gt"]) for row in cot[-2:]
    ]
    return rows


def score_family(
    provider: str,
    params: dict[str, Any],
    family: AttackFamily,
    rows: list[AuditRow],
    *,
    token_counts: bool = False,
) -> tuple[Scores, Texts]:
    """Every row's [honest right, honest wrong, attacks...] scored through the real reward, one group a row.

    ``token_counts``: each candidate gets the audit's ``completion_token_count`` (whitespace words)."""
    texts: Texts = {}
    for row in rows:
        right, wrong = family.honest_right(row), family.honest_wrong(row)
        assert right is not None and wrong is not None, row
        built = {"right": right, "wrong": wrong}
        for attack in attacks_of(family):
            text = attack.build(row)
            if text is not None:
                built[attack.name] = text
        texts[row.row_id] = built
    groups = []
    for row in rows:
        rollouts = []
        for name, text in texts[row.row_id].items():
            rollout: dict[str, Any] = {"trajectory_id": name, "completion": text, "prompt": row.prompt}
            if token_counts:
                rollout.update(completion_token_count=len(text.split()), finish_reason="stop")
            rollouts.append(rollout)
        groups.append((row.row_id, rollouts))
    with rewardkit.load({"rl": {"reward": {"provider": provider, "params": params}}}) as reward:
        batch = reward.score(groups)
    scores: Scores = {
        group.group_id: {
            candidate.trajectory_id: (
                None
                if candidate.final is None or candidate.breakdown[provider]["status"] != "scored"
                else candidate.final
            )
            for candidate in group.candidates
        }
        for group in batch.groups
    }
    return scores, texts


def check_holds(scores: Scores, attacks: tuple[AttackSpec, ...], min_rows: int) -> None:
    for row_id, finals in scores.items():
        right, wrong = finals["right"], finals["wrong"]
        assert right is not None and wrong is not None and right > wrong, (row_id, right, wrong)
    for attack in attacks:
        built = [row_id for row_id, finals in scores.items() if attack.name in finals]
        assert len(built) >= min_rows, (attack.name, built)
        for row_id in built:
            final, wrong = scores[row_id][attack.name], scores[row_id]["wrong"]
            assert final is not None, f"{attack.name} errors (or is skipped) on {row_id}"
            assert wrong is not None and final <= wrong, f"{attack.name} leaks on {row_id}: {final} > {wrong}"


def check_teeth(
    texts: Texts, attacks: tuple[AttackSpec, ...], weak_for: Callable[[str], Callable[[str], float]]
) -> None:
    for attack in attacks:
        weak = weak_for(attack.name)
        built = [row_id for row_id in texts if attack.name in texts[row_id]]
        fooled = [
            row_id for row_id in built if weak(texts[row_id][attack.name]) > weak(texts[row_id]["wrong"])
        ]
        assert len(fooled) * 2 > len(built), (attack.name, fooled, built)


def test_the_families_are_registered() -> None:
    found = reward_attacks()
    for family, provider in (
        (FORMAT_FAMILY, "format"),
        (OVERLONG_FAMILY, "overlong"),
        (REPETITION_FAMILY, "repetition"),
    ):
        assert found.families.get(family.name).value is family
        assert family.applies_to(provider, ()) and not family.applies_to("math", ("reference",))
        assert len(found.of_family(family.name)) >= 4


# --- format -------------------------------------------------------------------------------------


def weak_tags(completion: str) -> float:
    """A format check that only looks for each opening tag somewhere in the text."""
    return float("<think>" in completion and "<answer>" in completion)


@pytest.mark.parametrize("allow_outside_text", [False, True])
def test_format_holds_and_each_attack_has_teeth(allow_outside_text: bool) -> None:
    rows = rows_with_completions(12)
    scores, texts = score_family("format", {"allow_outside_text": allow_outside_text}, FORMAT_FAMILY, rows)
    check_holds(scores, attacks_of(FORMAT_FAMILY), min_rows=len(rows))
    assert {finals["right"] for finals in scores.values()} == {1.0}
    check_teeth(texts, attacks_of(FORMAT_FAMILY), lambda name: weak_tags)


# Blocks present in order but empty: revision 1 of format paid them (the audit found it).
EMPTY_BLOCK_ATTACKS = ("format-empty-blocks-only", "format-blank-blocks", "format-empty-blocks-text-outside")


def revision_1_format(completion: str) -> float:
    """Revision 1 of format with text outside allowed: the blocks' content was not looked at."""
    filled = re.sub(r"<(think|answer)>[\s\u200b\u2060]*</\1>", r"<\1>x</\1>", completion)
    return float(check_format(filled, ("think", "answer"), True)[0])


def test_the_empty_block_attacks_are_registered_and_were_paid_by_revision_1() -> None:
    attacks = tuple(spec for spec in attacks_of(FORMAT_FAMILY) if spec.name in EMPTY_BLOCK_ATTACKS)
    assert {spec.name for spec in attacks} == set(EMPTY_BLOCK_ATTACKS)
    rows = rows_with_completions(12)
    texts = {row.row_id: {"wrong": FORMAT_FAMILY.honest_wrong(row)} for row in rows}
    for row in rows:
        texts[row.row_id].update({spec.name: spec.build(row) for spec in attacks})
    check_teeth(texts, attacks, lambda name: revision_1_format)
    for built in texts.values():  # and the shipped check refuses them either way
        for name in EMPTY_BLOCK_ATTACKS:
            assert not check_format(built[name], ("think", "answer"), True)[0], name


# --- overlong -----------------------------------------------------------------------------------


def weak_overlong(completion: str) -> float:
    """DAPO's penalty with the tokens counted as ASCII-space-separated pieces."""
    return overlong_penalty(completion.count(" ") + 1, MAX_TOKENS, BUFFER_TOKENS, False)


def test_overlong_holds_and_each_attack_has_teeth() -> None:
    rows = rows_with_completions(6)
    params = {"max_tokens": MAX_TOKENS, "buffer_tokens": BUFFER_TOKENS}
    scores, texts = score_family("overlong", params, OVERLONG_FAMILY, rows, token_counts=True)
    check_holds(scores, attacks_of(OVERLONG_FAMILY), min_rows=len(rows))
    for finals in scores.values():
        assert (finals["right"], finals["wrong"]) == (0.0, -1.0)
    for built in texts.values():
        assert all(len(text.split()) == OVERLONG_WORDS for name, text in built.items() if name != "right")
    check_teeth(texts, attacks_of(OVERLONG_FAMILY), lambda name: weak_overlong)


# --- repetition ---------------------------------------------------------------------------------


def weak_words(completion: str) -> float:
    """Revision 1 of ``repetition`` and worse: whitespace words as they are (no lower-casing, no
    invisible characters taken out, no characters of long runs)."""
    words = completion.split()
    total = len(words) - 2
    return 0.0 if total <= 0 else -(total - len(set(zip(words, words[1:], words[2:])))) / total


def weak_lines(completion: str) -> float:
    """A check that penalises exact duplicate lines."""
    lines = [line.strip() for line in completion.splitlines() if line.strip()]
    return 0.0 if not lines else -(len(lines) - len(set(lines))) / len(lines)


def test_repetition_holds_and_each_attack_has_teeth() -> None:
    rows = rows_with_completions(12)
    scores, texts = score_family("repetition", {}, REPETITION_FAMILY, rows)
    check_holds(scores, attacks_of(REPETITION_FAMILY), min_rows=len(rows))
    check_teeth(
        texts,
        attacks_of(REPETITION_FAMILY),
        lambda name: weak_lines if name == "repeat-tiny-variations" else weak_words,
    )
