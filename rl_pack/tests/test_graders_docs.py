"""The runnable examples of docs/protocols.md's "OpenAI grader specs" section, run here in the rl env
(they need rewardkit-rl and, for the model graders, rewardkit-nih-judge; the document itself is
routed to env service, which has neither, so the blocks are marked skip there)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from doc_snippets import Block, blocks, run_block, scratch

DOC = "docs/protocols.md"
SECTION = "## OpenAI grader specs"
RUNS_HERE = "rl_pack/tests/test_graders_docs.py runs it"


def grader_blocks() -> list[Block]:
    text = (Path(__file__).resolve().parents[2] / DOC).read_text()
    start = text.index(SECTION)
    first_line = text[:start].count("\n") + 1
    return [b for b in blocks(DOC) if b.line > first_line and b.lang == "python" and RUNS_HERE in b.argument]


def test_every_grader_type_has_an_example() -> None:
    texts = "\n".join(block.text for block in grader_blocks())
    for kind in ("string_check", "text_similarity", "score_model", "label_model", "python", "multi"):
        assert f'"type": "{kind}"' in texts, kind


@pytest.mark.parametrize("block", grader_blocks(), ids=lambda block: block.where)
def test_grader_examples_run(block: Block, tmp_path: Path) -> None:
    done = run_block(block, scratch(tmp_path))
    assert done.returncode == 0, f"{block.where} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
