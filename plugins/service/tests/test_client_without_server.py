"""A trainer that scores through a Reward Service needs the client only: no starlette, no uvicorn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rewardkit_service.testing import ServerProcess

# The child makes the server's dependencies unimportable, as in an install without the extra.
CLIENT = """
import json, sys
for module in ("starlette", "uvicorn", "prometheus_client"):
    sys.modules[module] = None
import rewardkit
url = sys.argv[1]
reward = rewardkit.load({"rl": {"reward": {"provider": "exact-match", "service": url}}})
groups = [{"group_id": "g", "rollouts": [
    {"trajectory_id": "a", "completion": "4", "reference": "4"},
    {"trajectory_id": "b", "completion": "5", "reference": "4"}]}]
batch = reward.score(groups)
reward.close()
loaded = sorted(m for m in sys.modules if m.startswith("rewardkit_service"))
print(json.dumps({"rewards": [c.final for _, c in batch.candidates()], "loaded": loaded}))
"""


def test_remote_reward_scores_without_the_server_extra(tmp_path: Path):
    config = tmp_path / "serve.yaml"
    config.write_text("rl:\n  reward:\n    provider: exact-match\n")
    with ServerProcess(config) as server:
        done = subprocess.run(
            [sys.executable, "-c", CLIENT, server.url], capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["rewards"] == [1.0, 0.0]
    # the plugin (entry point ``service``) and its section's model load with the core's plugins: light
    assert result["loaded"] == [
        "rewardkit_service",
        "rewardkit_service.client",
        "rewardkit_service.plugin",
        "rewardkit_service.section",
    ]
