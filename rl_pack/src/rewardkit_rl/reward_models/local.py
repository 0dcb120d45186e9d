"""The in-process backend: a scalar-head model run with torch under ``torch.inference_mode()``.

Loaded on the first scoring call, never at construction. Two folder layouts load:

- a ``*ForSequenceClassification`` checkpoint with ``num_labels=1`` (TRL's ``RewardTrainer``
  output): its backbone runs, and its ``score`` head is applied to the hidden state of the token
  transformers reads (below);
- a backbone plus a scalar head saved beside it (OpenRLHF's ``score``, TRL's ``v_head``): the
  backbone loads with ``AutoModel`` and the head's matrix (and bias, if saved) from the
  safetensors files.

Where the score is read follows the model the folder was trained as. A sequence-classification
checkpoint is read where transformers reads it (``text.pooled_index``: the last token that is not
the config's ``pad_token_id``, the last token when there is none), because that is the position
TRL's ``RewardTrainer`` trained; it differs from the last real token when pad == eos and the text
ends with eos. A backbone plus head is read at the last real token, as OpenRLHF's reward model
gathers it (the last position its attention mask marks real). Batches are padded on the
tokenizer's padding side with position ids counted over real tokens only, so left and right
padding give the score of the sequence alone. Device ``auto`` is CUDA when available, and dtype
``auto`` is bfloat16 on CUDA and float32 on CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardkit.plugin import RewardkitError
from rewardkit_rl.reward_models.params import RewardModelParams, num_labels, safetensors_keys
from rewardkit_rl.reward_models.text import pooled_index


def import_rm_stack() -> tuple[Any, Any]:
    """torch and transformers, or an error saying which extra installs them."""
    try:
        import torch
        import transformers
    except ImportError as error:
        raise RewardkitError(
            f"the local reward-model backend needs torch and transformers ({error}); install "
            "`rewardkit-rl[rm]`"
        ) from None
    return torch, transformers


def load_tokenizer(folder: str) -> Any:
    try:
        from transformers import AutoTokenizer
    except ImportError as error:
        raise RewardkitError(
            f"reward models need transformers for their tokenizer ({error}); install `rewardkit-rl[rm]`"
        ) from None
    try:
        return AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as error:
        raise RewardkitError(
            f"cannot load the tokenizer of {folder}: {type(error).__name__}: {error}"
        ) from error


def classifier_pad_id(config: Any) -> int | None:
    """The pad id transformers' sequence-classification pooling compares ids with (or None)."""
    value = config.get_text_config().pad_token_id
    return value if isinstance(value, int) else None


class LocalModel:
    """One loaded reward model; ``score(batches of ids)`` returns one float per sequence."""

    def __init__(self, settings: RewardModelParams, padding_side: str, pad_id: int) -> None:
        torch, transformers = import_rm_stack()
        self.torch = torch
        device = settings.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda" and not torch.cuda.is_available():
            raise RewardkitError("device cuda was asked for, but torch sees no CUDA device")
        dtype_name = settings.dtype
        if dtype_name == "auto":
            dtype_name = "bfloat16" if device == "cuda" else "float32"
        self.device = torch.device(device)
        self.dtype = getattr(torch, dtype_name)
        self.padding_side = padding_side if padding_side in ("left", "right") else "right"
        self.pad_id = pad_id
        self.classifier_pad: int | None = None
        folder = settings.model
        facts = settings.facts
        try:
            if facts.kind == "sequence-classification":
                model = transformers.AutoModelForSequenceClassification.from_pretrained(
                    folder, dtype=self.dtype, local_files_only=True
                )
                labels = num_labels(model.config.to_dict())
                if model.config.num_labels != 1 or labels != 1:
                    raise RewardkitError(f"{folder} loads with num_labels={model.config.num_labels}, not 1")
                self.backbone = model.base_model
                head = getattr(model, "score", None)
                self.head = head if isinstance(head, torch.nn.Linear) else None
                self.whole = model
                # transformers' rule reads the config's pad id, which may differ from the tokenizer's
                self.classifier_pad = classifier_pad_id(model.config)
            else:
                self.backbone = transformers.AutoModel.from_pretrained(
                    folder, dtype=self.dtype, local_files_only=True
                )
                self.head = self._separate_head(Path(folder), facts.head_key)
                self.whole = None
        except RewardkitError:
            raise
        except Exception as error:
            raise RewardkitError(
                f"cannot load the reward model in {folder}: {type(error).__name__}: {error}"
            ) from error
        for module in (self.backbone, self.head, self.whole):
            if module is not None:
                module.to(self.device).eval()

    def _separate_head(self, folder: Path, key: str | None) -> Any:
        torch = self.torch
        from safetensors import safe_open

        assert key is not None
        files = safetensors_keys(folder)
        with safe_open(str(files[key]), "pt") as handle:
            weight = handle.get_tensor(key)
        bias_key = key.removesuffix(".weight") + ".bias"
        bias = None
        if bias_key in files:
            with safe_open(str(files[bias_key]), "pt") as handle:
                bias = handle.get_tensor(bias_key)
        if weight.dim() == 1:
            weight = weight.unsqueeze(0)
        hidden = getattr(self.backbone.config, "hidden_size", weight.shape[-1])
        if weight.shape != (1, hidden):
            raise RewardkitError(
                f"{folder}: head {key} has shape {tuple(weight.shape)}; a scalar head is (1, {hidden})"
            )
        head = torch.nn.Linear(hidden, 1, bias=bias is not None, dtype=self.dtype)
        with torch.no_grad():
            head.weight.copy_(weight.to(self.dtype))
            if bias is not None:
                head.bias.copy_(bias.reshape(1).to(self.dtype))
        return head

    def score(self, sequences: Sequence[Sequence[int]]) -> list[float]:
        """One forward pass over ``sequences`` (a bucket); one raw score each, in order."""
        if self.head is None and self.classifier_pad is None and len(sequences) > 1:
            # the model pools by itself, and transformers cannot find the padding of a batch
            # without a pad id: each sequence alone, as transformers would read it
            return [value for ids in sequences for value in self.score([ids])]
        torch = self.torch
        longest = max(len(ids) for ids in sequences)
        # a model that pools by itself finds padding by the config's pad id, so pad with that one
        filler = self.classifier_pad if self.head is None and self.classifier_pad is not None else self.pad_id
        rows, masks, read = [], [], []
        for ids in sequences:
            pad = [filler] * (longest - len(ids))
            real = [1] * len(ids)
            # a classifier's score is read by transformers' rule, a separate head's at the last real token
            at = pooled_index(ids, self.classifier_pad) if self.whole is not None else len(ids) - 1
            if self.padding_side == "left":
                rows.append(pad + list(ids))
                masks.append([0] * len(pad) + real)
                read.append(len(pad) + at)
            else:
                rows.append(list(ids) + pad)
                masks.append(real + [0] * len(pad))
                read.append(at)
        with torch.inference_mode():
            input_ids = torch.tensor(rows, dtype=torch.long, device=self.device)
            mask = torch.tensor(masks, dtype=torch.long, device=self.device)
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            if self.head is None:
                # a classifier without a linear ``score``: its own pooling (pads are masked)
                logits = self.whole(input_ids=input_ids, attention_mask=mask, position_ids=positions).logits
                values = logits.reshape(len(rows), -1)[:, 0]
            else:
                hidden = self.backbone(
                    input_ids=input_ids, attention_mask=mask, position_ids=positions
                ).last_hidden_state
                last = torch.tensor(read, dtype=torch.long, device=self.device)
                chosen = hidden[torch.arange(len(rows), device=self.device), last]
                values = self.head(chosen).reshape(len(rows))
            return [float(value) for value in values.float().cpu()]

    def close(self) -> None:
        self.backbone = self.head = self.whole = None
