"""``rewardkit checkpoints curve --plot`` without matplotlib: one error naming the extra to install."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rewardkit.contracts.errors import RewardkitError
from rewardkit.seam.extras import install_line
from rewardkit_checkpoints.curve import plot_curve


def test_plotting_without_matplotlib_names_the_plot_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    expected = install_line("rewardkit-checkpoints", "plot")
    assert expected.endswith("checkpoints[plot]'")
    with pytest.raises(RewardkitError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        plot_curve([{"step": "base", "value": 0.5}], tmp_path / "p.png")
