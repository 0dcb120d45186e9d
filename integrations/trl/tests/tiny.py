"""A tiny tokenizer and model built in the test (nothing downloaded): a 1-layer Llama with random
weights over a 30-word vocabulary, shared by the single- and multi-process TRL tests."""

from __future__ import annotations

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIALS = ["<pad>", "<unk>", "<bos>", "<eos>"]
WORDS = [
    "what",
    "is",
    "two",
    "plus",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "one",
    "zero",
    "the",
    "answer",
    "equals",
    "and",
    "minus",
    "times",
    "yes",
    "no",
    "maybe",
    "sum",
    "of",
]


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {token: index for index, token in enumerate(SPECIALS + WORDS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    tokenizer.padding_side = "left"
    return tokenizer


def tiny_model(tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config)
