"""The snippets of the documents routed to the stats env (``doc_snippets.DOC_ENVS``) run here, where
rewardkit-stats is installed; the core env does their static checks (tests/test_docs_snippets.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))

from doc_snippets import DOC_ENVS, Block, all_blocks, run_checked, runnable

BLOCKS = [b for b in all_blocks() if runnable(b) and DOC_ENVS.get(b.doc) == "stats"]


def test_the_stats_documents_have_snippets_to_run():
    # An empty selection would pass silently (pytest skips an empty parametrisation).
    assert BLOCKS, "no runnable block in the documents routed to the stats env"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where)
def test_stats_blocks_run(block: Block, tmp_path: Path):
    run_checked(block, tmp_path)
