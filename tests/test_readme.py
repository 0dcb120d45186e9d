"""The README's quick start runs as written, and .ci/run calls the README's test command."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_quick_start_runs_and_prints_scores():
    (block,) = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    assert len(block.splitlines()) <= 20
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("a 1.0 ") and lines[1].startswith("b 0.0 ")
    assert "train/reward/mean" in lines[-1]


def test_ci_runs_the_readme_commands():
    commands = re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
    main_job = next(c.strip() for c in commands if "rewardkit score" in c)
    tests = next(c.strip() for c in commands if "tox" in c)
    ci = (ROOT / ".ci" / "run").read_text()
    assert tests in ci
    assert (
        "rewardkit score examples/gsm8k/config.yaml" in main_job
        and "rewardkit score examples/gsm8k/config.yaml" in ci
    )
