"""The summary of `rewardkit score`: zero-variance groups (no GRPO signal) counted in one place,
`--plot FILE`, a complete result that a fresh run does not overwrite silently, and the progress
line's formatting (a pure function of counts, time and width)."""

from __future__ import annotations

import io
import json
import struct
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from rewardkit.cli import main
from rewardkit.job.score_job import manifest_path, run_score
from rewardkit.job.score_plot import read_values
from rewardkit.job.score_progress import ProgressLine, format_progress
from rewardkit.scoring.metrics import zero_variance_groups
from rewardkit.seam.extras import install_line

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gsm8k"


def test_zero_variance_groups_counts_groups_whose_rewards_are_all_equal():
    groups = [[1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.5, None, 0.5], [None, None], [0.2], [0.3, 0.3000001]]
    assert zero_variance_groups(groups) == 4
    assert zero_variance_groups([]) == 0


def test_the_readme_example_shows_4_of_12_groups_without_signal(tmp_path: Path):
    out = tmp_path / "results.jsonl"
    stdout = io.StringIO()
    assert run_score(str(EXAMPLE / "config.yaml"), [], str(out), stdout=stdout) == 0
    assert "zero-variance groups: 4 of 12 (33.3%)" in stdout.getvalue()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    by_group: dict[str, list[float]] = {}
    for row in rows:
        by_group.setdefault(row["group_id"], []).append(row["final"])
    assert sum(len(set(finals)) == 1 for finals in by_group.values()) == 4  # what the number says
    assert json.loads(manifest_path(out).read_text())["zero_variance_groups"] == 4


def test_plot_draws_the_distributions_and_says_where(tmp_path: Path, capsys: pytest.CaptureFixture):
    out, picture = tmp_path / "results.jsonl", tmp_path / "pictures" / "rewards.png"
    assert main(["score", str(EXAMPLE / "config.yaml"), "--out", str(out), "--plot", str(picture)]) == 0
    assert f"wrote the reward distribution plot to {picture}" in capsys.readouterr().out
    header = picture.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    assert width == 700 and height == 2 * 260  # one panel for the final reward, one for gsm8k
    finals, values = read_values(out, ["gsm8k"])
    assert len(finals) == 48 and sorted(set(finals)) == [0.0, 1.0] and values["gsm8k"] == finals


def test_plot_without_matplotlib_is_one_install_line_before_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    out = tmp_path / "results.jsonl"
    assert (
        main(["score", str(EXAMPLE / "config.yaml"), "--out", str(out), "--plot", str(tmp_path / "p.png")])
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--plot` needs matplotlib" in err
    assert install_line("rewardkit-core", "plot") in err
    assert not out.exists() and not manifest_path(out).exists()


def test_a_complete_result_is_not_overwritten_without_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    out = tmp_path / "results.jsonl"
    config = str(EXAMPLE / "config.yaml")
    assert main(["score", config, "--out", str(out)]) == 0
    first, manifest = out.read_bytes(), manifest_path(out).read_bytes()
    capsys.readouterr()
    assert main(["score", config, "rl.reward.params={fallback_last_number: true}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds the complete result of an earlier run" in err and "--overwrite" in err
    assert out.read_bytes() == first and manifest_path(out).read_bytes() == manifest
    assert main(["score", config, "--out", str(out), "--overwrite"]) == 0
    assert json.loads(manifest_path(out).read_text())["run"] != json.loads(manifest)["run"]
    out.unlink()  # the result is gone: nothing to protect, the manifest alone does not block
    assert main(["score", config, "--out", str(out)]) == 0


# -- the progress line ------------------------------------------------------------------------------


def test_progress_line_shows_the_eta_and_fills_exactly_the_width():
    line = format_progress(250, 1000, 10.0, 120)
    assert len(line) == 119
    assert line.rstrip() == "scoring [#######.......................] 250/1000 25/s ETA 0:30"
    # a narrow terminal: the bar goes first, then the line is cut; it never wraps
    narrow = format_progress(250, 1000, 10.0, 40)
    assert len(narrow) == 39 and narrow.rstrip() == "scoring 250/1000 25/s ETA 0:30"
    assert format_progress(250, 1000, 10.0, 20) == "scoring 250/1000 25"
    # a shorter state is padded over a longer one: nothing stale is left (no "845/s/ss")
    assert len(format_progress(1, 10, 1.0, 80)) == len(format_progress(845_000, 1_000_000, 1.0, 80)) == 79
    assert format_progress(0, 1000, 0.0, 80).rstrip().endswith("0/s ETA -")
    assert format_progress(5, None, 1.0, 80).rstrip() == "scoring 5 5/s"
    assert "ETA 1:01:40" in format_progress(1, 3701, 1.0, 80)


def test_progress_rate_counts_only_what_this_run_scored():
    # a resume found 900 rollouts journaled and scored 100 in 10 s: 10/s, 90 s left for the last 900
    line = format_progress(1000, 1900, 10.0, 100, reused=900)
    assert "1000/1900 10/s ETA 1:30" in line


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_on_a_terminal_skips_journaled_work_in_its_rate(monkeypatch: pytest.MonkeyPatch):
    clock = iter([100.0, 101.0, 105.0, 106.0])  # start, after the journaled chunk, after 10 scored
    monkeypatch.setattr("rewardkit.job.score_progress.time", SimpleNamespace(monotonic=lambda: next(clock)))
    monkeypatch.setattr("rewardkit.job.score_progress.terminal_width", lambda stream: 80)
    terminal = FakeTerminal()
    bar = ProgressLine(100, terminal)
    bar.skip(90)
    bar.update(10)
    bar.close()
    states = terminal.getvalue().rstrip("\n").split("\r")[1:]
    assert len(states) == 2 and all(len(state) == 79 for state in states)
    assert states[-1].rstrip().endswith(" 100/100 2/s ETA 0:00")  # 10 scored in 5 s, not 100
    assert ProgressLine(5, io.StringIO()).enabled is False  # a file or a pipe gets no progress line
