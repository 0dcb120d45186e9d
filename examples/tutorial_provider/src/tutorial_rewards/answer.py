"""``final-answer``: a TRL-style reward function made a provider by one decorator."""

from __future__ import annotations

import rewardkit


@rewardkit.provider(name="final-answer", revision="1")
def final_answer(completion: str, reference: str, *, case_sensitive: bool = False) -> float | None:
    """1.0 when the completion's last line, after an optional "Answer:", equals the reference."""
    lines = completion.strip().splitlines()
    if not lines:
        return None  # nothing to judge: the candidate is skipped, not given a zero
    answer = lines[-1].strip().removeprefix("Answer:").strip()
    gold = reference.strip()
    if not case_sensitive:
        answer, gold = answer.casefold(), gold.casefold()
    return float(answer == gold)
