"""What a Reward holds is released: ``close()`` and ``with`` end provider processes, and so does exit;
a batch may be any iterable of groups."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rewardkit
from rewardkit import RewardContractError, RewardkitError, resolve_catalog
from rewardkit.scoring.composition import RewardSpec
from rewardkit.scoring.worker import RewardWorker

HERE = Path(__file__).parent
CATALOG = "lifecycle_fixtures:catalog"


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def children() -> set[int]:
    """Live (not zombie) child processes of this test process."""
    found = set()
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry))
    return found


def config(**extra: object) -> dict:
    return {
        "rl": {
            "group_size": 2,
            "reward": {"provider": "process-backed", "catalog": CATALOG},
            "validation": {"reward": "process-backed", "n_generation": 2},
            **extra,
        }
    }


def groups(prefix: str = "g", count: int = 2) -> list[dict]:
    return [
        {
            "group_id": f"{prefix}{index}",
            "rollouts": [{"trajectory_id": f"{prefix}{index}/{k}", "completion": "x"} for k in range(2)],
        }
        for index in range(count)
    ]


def test_close_ends_every_provider_process_including_the_validation_rewards():
    before = children()
    reward = rewardkit.load(config())
    validation = reward.validation()
    reward.score(groups())
    validation.score(groups("v"))
    started = children() - before
    assert len(started) == 2, "one helper for the training reward, one for the validation reward"
    reward.close()
    assert children() == before, "close() released the validation reward's process too"
    reward.close()  # idempotent
    with pytest.raises(RewardkitError, match="closed"):
        reward.score(groups())


def test_leaving_with_ends_provider_processes():
    before = children()
    with rewardkit.load(config()) as reward:
        reward.score(groups())
        assert len(children() - before) == 1
    assert children() == before


def test_processes_are_reaped_at_interpreter_exit_without_close(tmp_path: Path):
    script = tmp_path / "forgets_close.py"
    script.write_text(
        "import rewardkit\n"
        f"reward = rewardkit.load({config()!r})\n"
        "reward.score([{'group_id': 'g', 'rollouts': [{'trajectory_id': 'a', 'completion': 'x'},"
        " {'trajectory_id': 'b', 'completion': 'x'}]}])\n"
    )
    completed = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])},
    )
    assert completed.returncode == 0, completed.stderr
    pid = int(completed.stdout.split("helper-pid ")[1].split()[0])
    state = Path(f"/proc/{pid}/stat")
    alive = state.exists() and state.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    if alive:
        os.kill(pid, 9)
    assert not alive, "the provider's process outlived the program"


class StuckClose:
    def evaluate(self, request):  # never called
        raise AssertionError

    def close(self) -> None:
        raise OSError("stuck")


def test_a_failing_provider_close_does_not_stop_the_others():
    spec = RewardSpec.parse(
        {
            "components": [
                {"name": "b", "provider": "constant", "weight": 0.0},
                {"name": "a", "provider": "process-backed"},
            ]
        }
    )
    worker = RewardWorker(spec, resolve_catalog(CATALOG), group_size=None)
    first, second = worker.providers.values()
    first.provider = StuckClose()
    with pytest.raises(OSError, match="stuck"):
        worker.close()
    assert second.provider.closed == 1


# -- any iterable is a batch -------------------------------------------------------------------


def trajectories(prefix: str = "g") -> list[dict]:
    return [
        {"group_id": f"{prefix}{index}", "trajectory_id": f"{prefix}{index}/{k}", "completion": "x"}
        for index in range(3)
        for k in range(2)
    ]


def grouped(rows: list[dict]):
    for index in range(0, len(rows), 2):
        yield {"group_id": rows[index]["group_id"], "rollouts": rows[index : index + 2]}


@pytest.mark.parametrize("shape", ["generator", "iterator", "generator-rollouts"])
def test_iterators_are_scored_like_lists_everywhere(shape: str):
    def batch(rows: list[dict]):
        if shape == "generator":
            return grouped(rows)
        if shape == "iterator":
            return iter(list(grouped(rows)))
        return ((group["group_id"], iter(group["rollouts"])) for group in grouped(rows))

    with rewardkit.load({"rl": {"group_size": 2, "reward": {"provider": "constant"}}}) as reward:
        expected = reward.score(list(grouped(trajectories())))
        assert len(expected.groups) == 3
        assert reward.score(batch(trajectories())) == expected
        rows = trajectories()
        processed = reward.process(batch(rows))
        assert processed.groups == expected.groups
        assert all(row["reward"]["final"] == 1.0 and "advantage" in row for row in rows)
        worker_rows = trajectories()
        assert len(reward.worker.process(batch(worker_rows)).groups) == 3
        assert all("reward" in row for row in worker_rows), "the worker wrote every trajectory"
        assert reward.worker.evaluate(batch(trajectories())).groups == expected.groups


def test_something_that_is_not_a_batch_is_a_clear_error():
    with rewardkit.load({"rl": {"reward": {"provider": "constant"}}}) as reward:
        with pytest.raises(RewardkitError, match="a batch is an iterable of groups"):
            reward.score({"group_id": "g", "rollouts": []})
        with pytest.raises(RewardkitError, match="not int"):
            reward.score(3)


# -- a group is one prompt -----------------------------------------------------------------------


def test_a_group_with_mixed_prompts_is_refused_even_when_the_provider_ignores_prompts():
    rows = [
        {"trajectory_id": "a", "completion": "4", "prompt": "2+2?", "reference": "4"},
        {"trajectory_id": "b", "completion": "4", "prompt": "3+1?", "reference": "4"},
    ]
    with rewardkit.load({"rl": {"group_size": 2, "reward": {"provider": "exact-match"}}}) as reward:
        with pytest.raises(RewardContractError) as caught:
            reward.score([("g", rows)])
        assert caught.value.rule == "mixed-prompts" and "'b'" in str(caught.value)
        absent = [rows[0], {**rows[1], "prompt": None}]  # a row may leave out an unneeded prompt
        assert reward.score([("g", absent)]).groups[0].candidates[1].final == 1.0
        typed = [{**rows[0], "prompt": 1}, {**rows[1], "prompt": 1.0}]
        with pytest.raises(RewardContractError, match="one prompt"):
            reward.score([("g", typed)])
        same = [rows[0], {**rows[1], "prompt": "2+2?"}]
        assert reward.score([("g", same)]).groups[0].candidates[0].final == 1.0
