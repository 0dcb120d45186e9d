"""The ``reward-model`` attack family, against scripted stub reward models (reported, not gated).

The shipped ``reward-model`` providers load trained models (torch, the ``[rm]`` extra), and with a
tiny random model "holds" would say nothing, so the family is checked against two stubs scored
through the provider machinery: a stub that judges only the final answer (every attack keeps the
wrong answer, so it scores each no higher than the honest wrong completion) and a stub that pays
for length, which scores every attack above the honest wrong completion (the attacks have teeth).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import rewardkit
from rewardkit.scoring.bound_provider import BoundProvider
from rewardkit.seam.attacks import AuditRow, reward_attacks
from rewardkit_rl.attacks.reward_model_family import REWARD_MODEL_FAMILY
from rewardkit_rl.verifiers.math_answers import extract_answer, fast_verdict

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"
COT = TESTDATA / "shared/Qwen2.5-Math/evaluation/data/eval_rm_maj_example/math_cot_100.jsonl"
GSM8K = TESTDATA / "shared/grade-school-math/grade_school_math/data/test.jsonl"


@rewardkit.provider(name="stub-answer-rm", revision="1", needs=("prompt", "reference"))
def answer_rm(completion: str, prompt: Any, reference: Any) -> float:
    """A reward model that judges only the final answer: 1 when it equals the reference."""
    found = extract_answer(completion)
    gold = str(reference).rsplit("####", 1)[-1].strip()
    return float(found is not None and fast_verdict(gold, found[0]) is True)


@rewardkit.provider(name="stub-length-rm", revision="1", needs=("prompt",))
def length_rm(completion: str, prompt: Any) -> float:
    """A reward model that pays for length: the number of words."""
    return float(len(completion.split()))


def rows() -> list[AuditRow]:
    cot = [json.loads(line) for line in COT.open()]
    found = [
        AuditRow(
            row_id=f"cot-{row['idx']}",
            prompt=row["question"],
            reference=row["gt"],
            completion=next(text for text, ok in zip(row["code"], row["score"]) if ok),
        )
        for row in cot
        if any(row["score"])
    ][:10]
    # the audit's own rows hold no completion: the family writes the reference as an answer
    found += [
        AuditRow(row_id=f"bare-{row['idx']}", prompt=row["question"], reference=row["gt"]) for row in cot[-2:]
    ]
    return found


def score(spec: rewardkit.RewardProviderSpec, row: AuditRow, texts: dict[str, str]) -> dict[str, float]:
    bound = BoundProvider(spec, spec.factory(), {}, "test")
    rollouts = [
        {"trajectory_id": name, "completion": text, "prompt": row.prompt, "reference": row.reference}
        for name, text in texts.items()
    ]
    results = {}
    for name, item in zip(texts, bound.score_group(row.row_id, rollouts).items):
        assert item.result.status == "scored", (name, item.result)
        results[name] = next(iter(item.result.terms.values()))
    return results


def candidates(row: AuditRow) -> dict[str, str]:
    right, wrong = REWARD_MODEL_FAMILY.honest_right(row), REWARD_MODEL_FAMILY.honest_wrong(row)
    assert right is not None and wrong is not None, row
    texts = {"right": right, "wrong": wrong}
    for attack in reward_attacks().of_family(REWARD_MODEL_FAMILY.name):
        text = attack.build(row)
        assert text is not None, (attack.name, row.row_id)
        texts[attack.name] = text
    return texts


def test_the_family_is_registered_for_both_reward_model_providers() -> None:
    found = reward_attacks()
    assert found.families.get("reward-model").value is REWARD_MODEL_FAMILY
    assert REWARD_MODEL_FAMILY.applies_to("reward-model", ("prompt",))
    assert REWARD_MODEL_FAMILY.applies_to("reward-model-ensemble", ("prompt",))
    assert len(found.of_family("reward-model")) == 6


def test_honest_wrong_alters_the_final_answer_only() -> None:
    row = AuditRow(row_id="r", prompt="p", reference="420", completion="So 6 * 70 = 420, and $\\boxed{420}$.")
    assert REWARD_MODEL_FAMILY.honest_wrong(row) == "So 6 * 70 = 420, and $\\boxed{421}$."
    assert (
        REWARD_MODEL_FAMILY.honest_right(AuditRow(row_id="r", reference="7"))
        == "The final answer is $\\boxed{7}$."
    )
    solution = AuditRow(row_id="r", prompt="p", reference="3 + 4 = <<3+4=7>>7 apples.\n#### 7")
    assert (
        REWARD_MODEL_FAMILY.honest_right(solution)
        == "3 + 4 = <<3+4=7>>7 apples.\nThe final answer is $\\boxed{7}$."
    )
    assert (
        REWARD_MODEL_FAMILY.honest_wrong(solution)
        == "3 + 4 = <<3+4=7>>7 apples.\nThe final answer is $\\boxed{8}$."
    )
    no_number = AuditRow(row_id="r", prompt="p", completion="It is blue.")
    assert REWARD_MODEL_FAMILY.honest_wrong(no_number) is None


def test_an_answer_judging_stub_scores_no_attack_above_honest_wrong() -> None:
    for row in rows():
        finals = score(answer_rm, row, candidates(row))
        assert finals["right"] > finals["wrong"], (row.row_id, finals)
        for name, final in finals.items():
            if name not in ("right", "wrong"):
                assert final <= finals["wrong"], (row.row_id, name, finals)


def test_a_stub_that_pays_for_length_scores_every_attack_above_honest_wrong() -> None:
    for row in rows():
        finals = score(length_rm, row, candidates(row))
        for name, final in finals.items():
            if name not in ("right", "wrong"):
                assert final > finals["wrong"], (row.row_id, name, finals)
