"""``rewardkit audit --json`` keeps each attack's text beside its score, so a leak can be read (and shown
by ``rewardkit view --audit``) without rerunning the audit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

WEAK = Path(__file__).parent / "weak_rewards" / "gsm8k_last_number.yaml"


def test_every_attack_record_carries_the_text_that_was_scored(tmp_path: Path) -> None:
    out = tmp_path / "audit.json"
    command = [str(Path(sys.executable).with_name("rewardkit")), "audit", str(WEAK), "--json", str(out)]
    done = subprocess.run(
        [*command, "--family", "generic-reference", "--quiet"], capture_output=True, text=True
    )
    assert done.returncode == 4, done.stderr  # the last-number fallback leaks
    family = json.loads(out.read_text())["families"][0]
    attacks = [record for record in family["candidates"] if record["candidate"] == record["group"]]
    assert attacks and all(isinstance(record["text"], str) and record["text"] for record in attacks)
    hedges = [record for record in attacks if record["group"] == "generic-hedge-unmarked"]
    assert hedges[0]["final"] == 1.0 and " or " in hedges[0]["text"]
    baselines = [record for record in family["candidates"] if record["candidate"] != record["group"]]
    assert baselines and not any("text" in record for record in baselines)
