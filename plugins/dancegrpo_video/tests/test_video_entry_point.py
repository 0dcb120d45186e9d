"""The distribution's entry point is found and ``dancegrpo-video`` resolves (no service needed)."""

from __future__ import annotations

import json
import subprocess
import sys

from rewardkit.seam.catalog import resolve_catalog
from rewardkit_dancegrpo import PROVIDER_NAME


def test_the_provider_resolves_from_this_distribution():
    entry = resolve_catalog().entry(PROVIDER_NAME)
    assert entry.owner.distribution == "rewardkit-dancegrpo"
    assert entry.spec.terms == ("overall_reward", "vq_reward", "mq_reward", "ta_reward")
    assert entry.spec.needs == ("prompt", "media") and entry.spec.runtime == ("decoder",)


def test_cli_lists_it_with_runtime_and_params():
    rows = json.loads(
        subprocess.run(
            [sys.executable, "-m", "rewardkit.cli", "providers", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    (row,) = [row for row in rows if row["name"] == PROVIDER_NAME]
    assert row["distribution"] == "rewardkit-dancegrpo" and row["runtime"] == ["decoder"]
    assert "fps" in json.dumps(row["params"])
