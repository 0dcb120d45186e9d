"""The answer journal of `rewardkit score` gives back, after a restart, exactly what the provider answered."""

from __future__ import annotations

from pathlib import Path

from rewardkit.contracts import (
    MetricContribution,
    RewardCandidateResult,
    RewardGroupResult,
    RewardProviderResult,
)
from rewardkit.job.answer_journal import AnswerJournal

ROWS = [{"trajectory_id": "g/0", "completion": "so it is 18", "reference": "18"}]


def _answer() -> RewardGroupResult:
    result = RewardProviderResult(
        terms={"correct": 1.0},
        diagnostics=(MetricContribution("extracted", 1.0, 1.0),),
        notes={"extracted_answer": "18"},
    )
    return RewardGroupResult(group_id="g", items=(RewardCandidateResult(trajectory_id="g/0", result=result),))


def test_a_kept_answer_reads_back_whole_with_its_notes(tmp_path: Path):
    path = tmp_path / "results.jsonl.answers"
    journal = AnswerJournal(path, "run-1", keep=False)
    journal.put("math", "g", ROWS, _answer())
    journal.close()

    restarted = AnswerJournal(path, "run-1", keep=True)
    kept = restarted.get("math", "g", ROWS)
    assert kept is not None
    got = kept.items[0].result
    want = _answer().items[0].result
    assert (got.terms, got.diagnostics, got.status, got.notes) == (
        want.terms,
        want.diagnostics,
        want.status,
        want.notes,
    )
    # Other rows, another provider or another run never borrow it.
    assert restarted.get("math", "g", [{**ROWS[0], "completion": "so it is 19"}]) is None
    assert restarted.get("gsm8k", "g", ROWS) is None
    assert AnswerJournal(path, "run-2", keep=True).get("math", "g", ROWS) is None
