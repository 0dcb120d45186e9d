"""Tiny models built on the spot, for tests that need a real server (nothing from a hub).

Used by this distribution's tests and by the judge and reward-model tests: a 2-layer Llama with
random weights over a word-level vocabulary, a chat template, and LoRA adapters with non-zero
B (so an adapter changes the output); and a byte-level Llama with equal logits, for the judge's
structured output (a grammar must be able to spell JSON with the model's tokens). Needs torch,
transformers, tokenizers and (for adapters) peft; imported only by tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

WORDS = tuple(
    (  # noqa: SIM905 (a word list reads better as text)
        "the a an is are was of to in and or not yes no good bad score answer question user "
        "assistant system one two three four five six seven eight nine ten zero red blue green cat "
        "dog sun moon fast slow big small hot cold up down left right true false maybe very more "
        "less best worst first last next open close start stop"
    ).split()
)
SPECIALS = ("<pad>", "<unk>", "<bos>", "<eos>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }} : {{ message['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}assistant : {% endif %}"
)


def tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: index for index, token in enumerate((*SPECIALS, *WORDS, ":"))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _config(tokenizer: Any, **extra: Any) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
        **extra,
    )


def build_tiny_llama(folder: str | Path, seed: int = 0) -> Path:
    """A causal LM checkpoint (safetensors, tokenizer, chat template) in ``folder``."""
    import torch
    from transformers import LlamaForCausalLM

    folder = Path(folder)
    tokenizer = tiny_tokenizer()
    torch.manual_seed(seed)
    model = LlamaForCausalLM(_config(tokenizer)).to(torch.float32)
    model.generation_config.do_sample = False
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


# A chat template that closes every message with eos, as most real ones do (Qwen's <|im_end|>,
# Llama 3's <|eot_id|>): the rendered text then ends with eos.
EOS_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }} : {{ message['content'] }} <eos> {% endfor %}"
)


def build_tiny_reward_model(folder: str | Path, seed: int = 0, *, pad: str = "pad") -> Path:
    """A sequence-classification checkpoint with one label (a scalar reward head).

    ``pad``: ``"pad"`` gives the tokenizer and the config their own ``<pad>``; ``"eos"`` makes
    eos the pad token in both (what TRL's ``RewardTrainer`` saves for a tokenizer without a pad
    token) and ``"none"`` leaves both without one; these two use a chat template that ends every
    message with eos, so the text the model reads ends with the pad id (or with eos, padless).
    """
    import torch
    from transformers import LlamaForSequenceClassification

    if pad not in ("pad", "eos", "none"):
        raise ValueError(f"pad is {pad!r}; one of 'pad', 'eos', 'none'")
    folder = Path(folder)
    tokenizer = tiny_tokenizer()
    config = _config(tokenizer, num_labels=1)
    if pad != "pad":
        tokenizer.chat_template = EOS_CHAT_TEMPLATE
        tokenizer.pad_token = tokenizer.eos_token if pad == "eos" else None
        config.pad_token_id = tokenizer.pad_token_id
    torch.manual_seed(seed)
    model = LlamaForSequenceClassification(config).to(torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


# The characters a byte tokenizer numbers first (ids 0, 1, ...), before its specials. A model
# whose logits are all equal (``build_grammar_llama``) writes, under greedy decoding, the allowed
# token with the lowest id; with these first, a JSON grammar is led the shortest way through an
# object of strings and numbers: close a string at once, the key-value and member separators
# before any whitespace, and one digit within a 1..10 scale, then the object's end.
GRAMMAR_FIRST = '"}:,7'


def byte_tokenizer(first: str = GRAMMAR_FIRST) -> Any:
    """A byte-level tokenizer: one token per byte (no merges) and the 4 specials, numbered
    ``first``'s bytes first, then the specials, then the other bytes. A model over it can spell
    any text, so a server's grammar (structured output) has a token for every character JSON needs."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    # the byte-level symbol of each of ``first``'s characters (ASCII: the printable ones map to themselves)
    leading = [char for char in first if char in alphabet]
    if len(leading) != len(first):
        raise ValueError(f"first is {first!r}; only printable ASCII characters other than space")
    # The specials come after ``first``: a grammar backend reads "<pad>" as five characters a JSON
    # string may hold (xgrammar does, in vLLM 0.32), so with pad at id 0 an equal-logit model
    # fills every string with pads that the server's reply then drops.
    rest = sorted(set(alphabet) - set(leading))
    vocab = {token: index for index, token in enumerate((*leading, *SPECIALS, *rest))}
    core = Tokenizer(models.BPE(vocab, [], unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_grammar_llama(folder: str | Path, max_model_len: int = 4096) -> Path:
    """A causal LM over ``byte_tokenizer()`` whose every logit is 0 (a zero output head).

    Greedy decoding then writes the allowed token with the lowest id: unconstrained, always the
    same byte; under a server's JSON grammar, the shortest object the grammar allows (see
    ``GRAMMAR_FIRST``). So a readable JSON reply proves the server applied the grammar, and the
    reply is known in advance: the test asserts the protocol, not a random model's luck.
    """
    import torch
    from transformers import LlamaForCausalLM

    folder = Path(folder)
    tokenizer = byte_tokenizer()
    config = _config(tokenizer)
    config.max_position_embeddings = max_model_len  # a judge's instructions, one token per byte
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.float32)
    with torch.no_grad():
        model.lm_head.weight.zero_()
    model.generation_config.do_sample = False
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


def build_lora_adapter(base: str | Path, folder: str | Path, seed: int = 1, rank: int = 4) -> Path:
    """A LoRA adapter for ``base`` with random A and B (it changes greedy output)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaForCausalLM

    folder = Path(folder)
    model = LlamaForCausalLM.from_pretrained(base, torch_dtype=torch.float32)
    config = LoraConfig(
        r=rank, lora_alpha=4 * rank, target_modules=["q_proj", "v_proj", "o_proj"], init_lora_weights=False
    )
    torch.manual_seed(seed)
    peft_model = get_peft_model(model, config)
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_" in name:
                parameter.normal_(0.0, 0.5)
    peft_model.save_pretrained(folder, safe_serialization=True)
    return folder


def greedy(checkpoint: str | Path, prompt: str, max_tokens: int, adapter: str | Path | None = None) -> str:
    """``transformers`` greedy generation (the reference a served answer must equal)."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32)
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(
            ids, max_new_tokens=max_tokens, min_new_tokens=max_tokens, do_sample=False, pad_token_id=0
        )
    return tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
