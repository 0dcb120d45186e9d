"""verl's reward loop scores each response as generation finishes it, and rewardkit keeps up.

In verl's streaming path (``docs/advance/reward_loop.rst``; no reward model sharing the rollout
pool) every agent loop sends its trajectory to a reward worker as soon as it is generated
(``AgentLoopWorker._compute_score`` -> ``RewardLoopWorker.compute_score``), so responses arrive one
at a time and concurrently. The test runs verl's real ``RewardLoopWorker`` (naive manager,
rewardkit's ``compute_score`` loaded from the config as a verl run does) and sends it two responses
at once: the one still being scored (held at a gate) does not hold back the other's reward.
"""

from __future__ import annotations

import asyncio
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import pytest
import verl.experimental.reward_loop.reward_loop as reward_loop
import verl_stream_catalog
from omegaconf import OmegaConf
from test_verl_reward_loading import sample, tokenizer

import rewardkit_bindings.verl as binding
from rewardkit_bindings.loading import forget_rewards

REWARD = {"rl.reward.catalog": "verl_stream_catalog:catalog", "rl.reward.provider": "gated"}


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    forget_rewards()
    verl_stream_catalog.GATE.clear()
    verl_stream_catalog.WAITING.clear()
    yield
    verl_stream_catalog.GATE.set()  # a failed test leaves no scorer waiting
    forget_rewards()


def test_a_response_still_scored_does_not_hold_back_the_next_ones(tmp_path):
    tok = tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "model": {"path": str(tmp_path / "tok"), "tokenizer_path": str(tmp_path / "tok")}
            },
            "reward": {
                "custom_reward_function": {
                    "path": binding.__file__,
                    "name": "compute_score",
                    "reward_kwargs": {"config": REWARD},
                },
                "reward_manager": {"source": "register", "name": "naive"},
                "reward_model": {"enable": False},
                "num_workers": 1,
            },
        }
    )
    worker = reward_loop.RewardLoopWorker(config)

    async def two_trajectories_finishing_apart() -> tuple[dict, dict, bool]:
        slow = asyncio.ensure_future(
            worker.compute_score(sample(tok, "what is two plus three", "six", "arith", "five"))
        )
        await asyncio.to_thread(verl_stream_catalog.WAITING.wait)
        quick = await worker.compute_score(sample(tok, "what is two plus three", "five", "arith", "five"))
        still_scoring = not slow.done()
        verl_stream_catalog.GATE.set()
        return quick, await slow, still_scoring

    quick, slow, still_scoring = worker.loop.run_until_complete(two_trajectories_finishing_apart())
    assert still_scoring  # the second response's reward came back while the first was held
    assert quick["reward_score"] == slow["reward_score"] == 1.0
    assert quick["reward_extra_info"]["gated"] == 1.0
