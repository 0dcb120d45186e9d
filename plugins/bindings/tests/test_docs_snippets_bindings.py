"""The snippets of the documents routed to the bindings env (``doc_snippets.DOC_ENVS``) run here, where
rewardkit-bindings is installed; the core env does their static checks (tests/test_docs_snippets.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_snippets import DOC_ENVS, Block, all_blocks, run_checked, runnable

BLOCKS = [b for b in all_blocks() if runnable(b) and DOC_ENVS.get(b.doc) == "bindings"]


def test_the_bindings_documents_have_snippets_to_run():
    # An empty selection would pass silently (pytest skips an empty parametrisation).
    assert BLOCKS, "no runnable block in the documents routed to the bindings env"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where)
def test_bindings_blocks_run(block: Block, tmp_path: Path):
    run_checked(block, tmp_path)
