"""OpenRLHF's own reward code paths run rewardkit: the ``.py`` reward function and the remote RM.

``openrlhf.utils.agent.SingleTurnAgentExecutor`` is the class an OpenRLHF run builds from
``--remote_rm_url``: given a ``.py`` path it imports ``reward_func`` from that file, given a URL it
posts ``{"query", "prompts", "labels"}`` to it. The test drives its real ``execute`` with a tokenizer
built here; only the vLLM engine (GPU-only) is replaced, by one that returns fixed token ids, so the
tokenisation, decoding, reward call and result handling are all OpenRLHF's.
"""

from __future__ import annotations

import asyncio
import json
import os
from types import SimpleNamespace

os.environ["HF_HUB_OFFLINE"] = "1"

import pytest
from openrlhf.utils.agent import SingleTurnAgentExecutor
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

import rewardkit
import rewardkit_bindings.openrlhf as binding
from rewardkit.contracts.errors import RewardkitError
from rewardkit_bindings.loading import forget_rewards
from rewardkit_service.testing import ServerProcess

WORDS = ["<pad>", "<unk>", "</s>", "what", "is", "two", "plus", "three", "five", "six", "ERR"]
CONFIG = "rl.reward.spec: {onError: none, components: [{provider: exact-match}, {provider: nonempty}]}\n"


def tokenizer() -> PreTrainedTokenizerFast:
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="</s>"
    )


class FixedEngine:
    """Stands in for OpenRLHF's vLLM engine (GPU-only): "generates" the given text."""

    def __init__(self, tok: PreTrainedTokenizerFast, text: str) -> None:
        self.ids = tok(text, add_special_tokens=False)["input_ids"]

    async def generate(self, prompt_token_ids, params, multi_modal_data=None):
        output = SimpleNamespace(token_ids=list(self.ids), finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


def run(executor, tok, prompt: str, label: str, response: str) -> dict:
    params = SimpleNamespace(max_tokens=8, logprobs=None)
    return asyncio.run(executor.execute(prompt, label, params, 32, tok, FixedEngine(tok, response)))


def expected(prompt: str, label: str, completion: str) -> float:
    forget_rewards()
    reward = rewardkit.load(
        {"rl.reward.spec": {"components": [{"provider": "exact-match"}, {"provider": "nonempty"}]}}
    )
    group = ("g", [{"trajectory_id": "t", "completion": completion, "prompt": prompt, "reference": label}])
    return next(iter(reward.score([group]).candidates()))[1].final


@pytest.fixture
def config_file(tmp_path, monkeypatch):
    path = tmp_path / "reward.yaml"
    path.write_text(CONFIG)
    monkeypatch.setenv("REWARDKIT_CONFIG", str(path))
    forget_rewards()
    return path


def test_reward_func_file_is_loaded_and_called_by_openrlhf(config_file):
    tok = tokenizer()
    executor = SingleTurnAgentExecutor(remote_rm_url=binding.__file__)
    assert executor.reward_func is not None and executor.reward_func.__name__ == "reward_func"
    prompt = "what is two plus three"
    for response, label in [("five </s>", "five"), ("six </s>", "five"), ("</s>", "five")]:
        out = run(executor, tok, prompt, label, response)
        completion = response.removesuffix("</s>").strip()
        assert float(out["reward"][0]) == expected(prompt, label, completion), (response, out)
        assert float(out["scores"][0]) == float(out["reward"][0])
        assert set(out["extra_logs"]) == {"exact-match", "nonempty"}


def test_an_error_never_reaches_openrlhf_as_zero(config_file):
    tok = tokenizer()
    # A label that is not text breaks exact-match's contract: reward_func raises (it never answers 0),
    # and OpenRLHF's executor then logs the failure and leaves the reward unset.
    with pytest.raises(RewardkitError, match="needs a string reference"):
        binding.reward_func(["what is two plus three five"], ["what is two plus three"], [["five"]])
    executor = SingleTurnAgentExecutor(remote_rm_url=binding.__file__)
    out = run(executor, tok, "what is two plus three", ["five"], "five </s>")
    assert out["reward"] is None and out["scores"] is None


def test_remote_rm_client_against_the_reward_service(config_file):
    tok = tokenizer()
    prompt = "what is two plus three"
    with ServerProcess(config_file) as server:
        executor = SingleTurnAgentExecutor(remote_rm_url=f"{server.url}/get_reward")
        assert executor.reward_func is None
        for response, label in [("five", "five"), ("six", "five")]:
            out = run(executor, tok, prompt, label, response)
            # The service receives the decoded query (prompt + response) and scores the response.
            assert out["reward"] == [expected(prompt, label, response)], out


# A base model answers, then goes on to repeat the prompt. OpenRLHF decodes the prompt's tokens
# (here: words joined by single spaces, so the prompt's newline comes back as a space) followed by
# the response's; the response is what follows the prompt at the front of the query. The question
# is in words: gsm8k reads the final answer up to the end of its sentence, and a number there
# besides the answer would make it state none ("#### 4 or 5").
REPEAT_WORDS = ["<pad>", "<unk>", "</s>", "Question:", "What", "is", "two", "plus", "two?", "Answer:"]
REPEAT_WORDS += ["####", "4"]
REPEAT_PROMPTS = ["Question: What is two plus two? Answer:", "Question: What is two plus two?\nAnswer:"]
REPEAT_RESPONSE = "#### 4 Question: What is two plus two? Answer: </s>"


def repeat_tokenizer() -> PreTrainedTokenizerFast:
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(REPEAT_WORDS)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="</s>"
    )


@pytest.fixture
def gsm8k_config(tmp_path, monkeypatch):
    path = tmp_path / "gsm8k.yaml"
    path.write_text("rl.reward.provider: gsm8k\n")
    monkeypatch.setenv("REWARDKIT_CONFIG", str(path))
    forget_rewards()
    return path


@pytest.mark.parametrize("prompt", REPEAT_PROMPTS, ids=["spaces", "newline"])
def test_a_response_that_repeats_the_prompt_keeps_its_answer_in_process(gsm8k_config, prompt):
    tok = repeat_tokenizer()
    executor = SingleTurnAgentExecutor(remote_rm_url=binding.__file__)
    out = run(executor, tok, prompt, "4", REPEAT_RESPONSE)
    assert out["reward"] is not None and float(out["reward"][0]) == 1.0, out


@pytest.mark.parametrize("prompt", REPEAT_PROMPTS, ids=["spaces", "newline"])
def test_a_response_that_repeats_the_prompt_keeps_its_answer_over_get_reward(gsm8k_config, prompt):
    tok = repeat_tokenizer()
    with ServerProcess(gsm8k_config) as server:
        executor = SingleTurnAgentExecutor(remote_rm_url=f"{server.url}/get_reward")
        out = run(executor, tok, prompt, "4", REPEAT_RESPONSE)
    assert out["reward"] == [1.0], out


def test_reward_func_feeds_the_monitor_as_openrlhf_calls_it(tmp_path, monkeypatch):
    monitored = tmp_path / "monitored.yaml"
    monitored.write_text(
        CONFIG + f"rl.monitor: {{reference: exact-match, logdir: '{tmp_path}', rollouts_per_step: 2}}\n"
    )
    monkeypatch.setenv("REWARDKIT_CONFIG", str(monitored))
    forget_rewards()
    tok = tokenizer()
    executor = SingleTurnAgentExecutor(remote_rm_url=binding.__file__)
    prompt = "what is two plus three"
    for response in ("five </s>", "six </s>", "five </s>", "five </s>"):
        out = run(executor, tok, prompt, "five", response)
        assert set(out["extra_logs"]) == {"exact-match", "nonempty", "reward_monitor/alarm"}
        assert float(out["extra_logs"]["reward_monitor/alarm"][0]) == 0.0
    forget_rewards()  # closes the monitor, which finishes a step still buffered
    records = [json.loads(line) for line in (tmp_path / "monitor.jsonl").read_text().splitlines()]
    assert [record["rollouts"] for record in records] == [2, 2]
    assert [record["signals"]["reference_mean"] for record in records] == [0.5, 1.0]
    assert all(record["source"] == "openrlhf" for record in records)
