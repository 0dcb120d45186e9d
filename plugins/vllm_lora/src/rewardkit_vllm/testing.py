"""Tiny models built on the spot, for tests that need a real server (nothing from a hub).

Used by this distribution's tests and by the judge and reward-model tests: a 2-layer Llama with
random weights over a word-level vocabulary, a chat template, and LoRA adapters with non-zero
B (so an adapter changes the output). Needs torch, transformers, tokenizers and (for adapters)
peft; imported only by tests.
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
