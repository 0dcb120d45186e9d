"""Truncation facts under OpenRLHF: refused when its file is loaded, or derived from a configured tokenizer.

OpenRLHF's ``reward_func(queries, prompts, labels)`` carries no token counts and no finish reasons,
and OpenRLHF only logs an exception ``reward_func`` raises. So a reward that needs them (the rl
pack's ``overlong``, from the source tree) is refused when ``SingleTurnAgentExecutor`` loads the
binding's file, naming the field. With ``REWARDKIT_OPENRLHF_TOKENIZER`` (a tokenizer folder written
by the test) and ``REWARDKIT_OPENRLHF_MAX_NEW_TOKENS`` set, the binding derives both from the
response part of the query OpenRLHF decodes, and ``overlong`` scores the length and the verdict.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import SimpleNamespace

os.environ["HF_HUB_OFFLINE"] = "1"

import pytest
from openrlhf.utils.agent import SingleTurnAgentExecutor
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

import rewardkit_bindings.openrlhf as binding
from rewardkit.plugin import BindingError
from rewardkit_bindings.loading import forget_rewards

RL_PACK = Path(__file__).resolve().parents[3] / "rl_pack" / "src"
BUDGET = 4
WORDS = ["<pad>", "<unk>", "</s>", "what", "is", "two", "plus", "three", "five", "six"]
# 4 tokens sit on the ramp (-0.5); only the "length" verdict makes them -1
CONFIG = (
    "rl.reward.catalog: truncation_catalog:catalog\n"
    "rl.reward.spec: {components: [{provider: overlong, params: {max_tokens: 6, buffer_tokens: 4}}]}\n"
)
CASES = [
    ("five six five six", -1.0),  # filled max_new_tokens without EOS: cut
    ("five six five </s>", -0.5),  # EOS as the last allowed token: stopped, 4 tokens
    ("five six", 0.0),  # short: stopped
]
PROMPT = "what is two plus three"


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
        output = SimpleNamespace(token_ids=list(self.ids), finish_reason="unused", logprobs=None)
        return SimpleNamespace(outputs=[output])


@pytest.fixture
def overlong_config(tmp_path, monkeypatch, tmp_path_factory):
    # The package alone (see the TRL test): no egg-info beside it whose entry points register it twice.
    packages = tmp_path_factory.mktemp("rl-pack")
    (packages / "rewardkit_rl").symlink_to(RL_PACK / "rewardkit_rl")
    monkeypatch.syspath_prepend(str(packages))
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    path = tmp_path / "reward.yaml"
    path.write_text(CONFIG)
    monkeypatch.setenv("REWARDKIT_CONFIG", str(path))
    monkeypatch.delenv(binding.TOKENIZER_ENV, raising=False)
    monkeypatch.delenv(binding.MAX_NEW_TOKENS_ENV, raising=False)
    forget_rewards()
    return path


def test_loading_the_file_refuses_a_reward_that_needs_token_counts(overlong_config):
    with pytest.raises(BindingError, match="'completion_token_count' \\(read by 'overlong'\\)") as refused:
        SingleTurnAgentExecutor(remote_rm_url=binding.__file__)
    message = str(refused.value)
    assert "OpenRLHF's reward_func(queries, prompts, labels)" in message
    assert binding.TOKENIZER_ENV in message and binding.MAX_NEW_TOKENS_ENV in message
    # Called directly (not loaded by OpenRLHF) it is refused just the same.
    with pytest.raises(BindingError, match="completion_token_count"):
        binding.reward_func([PROMPT + " five"], [PROMPT], ["five"])


def test_a_half_configured_limit_names_the_missing_variable(overlong_config, monkeypatch, tmp_path):
    monkeypatch.setenv(binding.MAX_NEW_TOKENS_ENV, str(BUDGET))
    with pytest.raises(BindingError, match=binding.TOKENIZER_ENV):
        SingleTurnAgentExecutor(remote_rm_url=binding.__file__)


def test_a_configured_tokenizer_gives_overlong_length_and_verdict(overlong_config, monkeypatch, tmp_path):
    tok = tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    monkeypatch.setenv(binding.TOKENIZER_ENV, str(tmp_path / "tok"))
    monkeypatch.setenv(binding.MAX_NEW_TOKENS_ENV, str(BUDGET))
    executor = SingleTurnAgentExecutor(remote_rm_url=binding.__file__)
    params = SimpleNamespace(max_tokens=BUDGET, logprobs=None)
    for response, expected in CASES:
        out = asyncio.run(executor.execute(PROMPT, "five", params, 32, tok, FixedEngine(tok, response)))
        assert out["reward"] is not None, (response, out)
        assert float(out["reward"][0]) == float(out["extra_logs"]["overlong"][0]) == expected, (response, out)


class CutEngine(FixedEngine):
    """An engine that reports the response as cut at its length limit (vLLM's ``finish_reason``)."""

    async def generate(self, prompt_token_ids, params, multi_modal_data=None):
        output = SimpleNamespace(token_ids=list(self.ids), finish_reason="length", logprobs=None)
        return SimpleNamespace(outputs=[output])


def test_the_engine_finish_reason_never_reaches_reward_func(overlong_config, monkeypatch, tmp_path):
    # docs/bindings.md: OpenRLHF reads the engine's finish_reason into its own `truncated` flag and
    # calls reward_func with queries, prompts and labels only, so the binding's verdict comes from
    # lengths. A response the engine cut below REWARDKIT_OPENRLHF_MAX_NEW_TOKENS is "stop" here.
    tok = tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    monkeypatch.setenv(binding.TOKENIZER_ENV, str(tmp_path / "tok"))
    monkeypatch.setenv(binding.MAX_NEW_TOKENS_ENV, str(BUDGET))
    executor = SingleTurnAgentExecutor(remote_rm_url=binding.__file__)
    calls: list[tuple[tuple, dict]] = []
    loaded = executor.reward_func

    def recording(*args, **kwargs):
        calls.append((args, kwargs))
        return loaded(*args, **kwargs)

    executor.reward_func = recording
    params = SimpleNamespace(max_tokens=2, logprobs=None)  # the engine's own limit, below BUDGET
    out = asyncio.run(executor.execute(PROMPT, "five", params, 32, tok, CutEngine(tok, "five six")))
    assert out["truncated"] is True  # OpenRLHF knows the engine cut it
    [(args, kwargs)] = calls
    assert kwargs == {} and len(args) == 3  # queries, prompts, labels: no finish reason among them
    assert float(out["extra_logs"]["overlong"][0]) == 0.0  # so the binding, by lengths, says "stop"
