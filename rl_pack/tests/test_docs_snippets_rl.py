"""The snippets of the documents routed to the rl env (``doc_snippets.DOC_ENVS``) run here, where
the rl pack is installed; the core env does their static checks (tests/test_docs_snippets.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from doc_snippets import DOC_ENVS, Block, all_blocks, run_block, runnable, scratch

BLOCKS = [b for b in all_blocks() if runnable(b) and DOC_ENVS.get(b.doc) == "rl"]


def test_the_rl_documents_have_snippets_to_run():
    # An empty selection would pass silently (pytest skips an empty parametrisation).
    assert BLOCKS, "no runnable block in the documents routed to the rl env"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where)
def test_rl_blocks_run(block: Block, tmp_path: Path):
    done = run_block(block, scratch(tmp_path))
    assert done.returncode == 0, (
        f"{block.where} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
