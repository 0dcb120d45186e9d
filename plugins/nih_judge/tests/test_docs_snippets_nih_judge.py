"""The snippets of the documents routed to the nih_judge env (``doc_snippets.DOC_ENVS``) run here,
where rewardkit-nih-judge is installed (the stub judge of docs/nih_judge.md is its
``rewardkit_nih_judge.testing``); the core env does their static checks (tests/test_docs_snippets.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))

from doc_snippets import DOC_ENVS, Block, all_blocks, run_checked, runnable

BLOCKS = [b for b in all_blocks() if runnable(b) and DOC_ENVS.get(b.doc) == "nih_judge"]


def test_the_nih_judge_documents_have_snippets_to_run():
    # An empty selection would pass silently (pytest skips an empty parametrisation).
    assert BLOCKS, "no runnable block in the documents routed to the nih_judge env"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where)
def test_nih_judge_blocks_run(block: Block, tmp_path: Path):
    out = run_checked(block, tmp_path)
    if "stub_judge.yaml" in block.text:
        # The stub judge's verdict (7 of 10) reached every one of the 48 candidates.
        assert out.strip().splitlines()[-1] == "48", out
