"""OpenRLHF fetches each sample's reward as soon as that sample is generated, and rewardkit keeps up.

``SingleTurnAgentExecutor.execute`` (openrlhf 0.11.2) generates one sample and then asks for its
reward, one call (``reward_func``) or one request (``/get_reward``) per sample, with many samples
in flight at once. The test runs two of OpenRLHF's real ``execute`` coroutines at once, through the
``.py`` reward function and through the Reward Service: the sample whose reward is still being
scored (held at a gate) does not hold back the other's.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from types import SimpleNamespace

os.environ["HF_HUB_OFFLINE"] = "1"

import pytest
from openrlhf.utils.agent import SingleTurnAgentExecutor
from openrlhf_stream_catalog import GATE_ENV
from test_openrlhf_reward_paths import FixedEngine, tokenizer

import rewardkit_bindings.openrlhf as binding
from rewardkit_bindings.loading import forget_rewards
from rewardkit_service.testing import ServerProcess

TESTS = os.path.dirname(__file__)
CONFIG = "rl.reward.catalog: openrlhf_stream_catalog:catalog\nrl.reward.provider: gated\n"
PROMPT = "what is two plus three"


@pytest.fixture
def gate(tmp_path, monkeypatch):
    folder = tmp_path / "gate"
    folder.mkdir()
    config = tmp_path / "reward.yaml"
    config.write_text(CONFIG)
    monkeypatch.setenv("REWARDKIT_CONFIG", str(config))
    monkeypatch.setenv(GATE_ENV, str(folder))
    monkeypatch.syspath_prepend(TESTS)
    forget_rewards()
    yield folder
    (folder / "open").touch()  # a failed test leaves no scorer waiting
    forget_rewards()


def wait_for(path: Path) -> None:
    for _ in range(6000):  # a minute at most: a scorer that never starts fails the test
        if path.exists():
            return
        time.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


def two_samples_finishing_apart(executor: SingleTurnAgentExecutor, gate: Path) -> tuple[dict, dict, bool]:
    tok = tokenizer()
    params = SimpleNamespace(max_tokens=8, logprobs=None)

    async def run() -> tuple[dict, dict, bool]:
        slow = asyncio.ensure_future(
            executor.execute(PROMPT, "five", params, 32, tok, FixedEngine(tok, "six"))
        )
        await asyncio.to_thread(wait_for, gate / "waiting")
        quick = await executor.execute(PROMPT, "five", params, 32, tok, FixedEngine(tok, "five"))
        still_scoring = not slow.done()
        (gate / "open").touch()
        return quick, await slow, still_scoring

    return asyncio.run(run())


def test_reward_func_scores_a_sample_while_another_is_still_scored(gate):
    executor = SingleTurnAgentExecutor(remote_rm_url=binding.__file__)
    quick, slow, still_scoring = two_samples_finishing_apart(executor, gate)
    assert still_scoring
    assert float(quick["reward"][0]) == float(slow["reward"][0]) == 1.0


def test_get_reward_answers_a_sample_while_another_is_still_scored(gate):
    with ServerProcess(os.environ["REWARDKIT_CONFIG"], env={"PYTHONPATH": TESTS}) as server:
        executor = SingleTurnAgentExecutor(remote_rm_url=f"{server.url}/get_reward")
        quick, slow, still_scoring = two_samples_finishing_apart(executor, gate)
    assert still_scoring
    assert quick["reward"] == slow["reward"] == [1.0]
