"""The parameter schemas of ``reward-model`` and ``reward-model-ensemble``, validated at ``load``.

Validation reads only small files: the folder's ``config.json`` (is there a scalar head?), the
names in its tokenizer files and the headers of its safetensors files. It loads no weights and
imports neither torch nor transformers. It also adds ``model_sha256``, the streamed hash of the
model folder (``rewardkit.artifacts.folder_identity``, cached on disk by path, size and mtime),
to the normalised params, so the catalog's identity changes when a weight file changes in place;
a second preflight of the same folder (the driver, then every Ray actor) reads nothing again.

The folder, the server URL and the credential reference are operator-only, and so is every
limit: a Reward Service client can never set them.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, computed_field, field_validator, model_validator

from rewardkit.plugin import ParamsModel, RewardkitError, folder_identity, operator_only

MAX_TOKENS = 131_072
MAX_BATCH_TOKENS = 1 << 22
MAX_CONCURRENCY = 64
MAX_TIMEOUT_S = 600.0
MAX_DEADLINE_S = 3600.0
MAX_RETRIES = 10
MAX_MEMBERS = 16
# Scores are (raw - score_mean) / score_std: with the fixed normalisation set from the model's
# scores on real answers, -10 is ten spreads below their mean, below anything a real answer gets.
EMPTY_COMPLETION_SCORE = -10.0

Backend = Literal["local", "vllm-classify", "vllm-pooling", "openrlhf"]
REMOTE_BACKENDS = ("vllm-classify", "vllm-pooling", "openrlhf")
# Weight names of a scalar head beside a backbone, tried in this order when ``head`` is not given:
# transformers' sequence-classification heads of decoder models and OpenRLHF's (``score``),
# OpenRLHF's older ``value_head``, and TRL's value-head wrapper (``v_head.summary``).
HEAD_PREFIXES = ("score", "value_head", "v_head.summary", "v_head")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# -- what a folder holds, read without loading it ----------------------------------------------


@dataclass(frozen=True)
class ModelFacts:
    """What ``inspect_folder`` learned without loading anything.

    ``kind``: ``sequence-classification``, ``backbone+head`` (``head_key`` names the head's weight)
    or ``tokenizer-only`` (an HTTP backend's folder); ``chat_template``: the tokenizer has one.
    """

    kind: str
    head_key: str | None
    chat_template: bool


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RewardkitError(f"cannot read {path}: {error}") from None
    if not isinstance(data, dict):
        raise RewardkitError(f"{path} is not a JSON object")
    return data


def num_labels(config: dict[str, Any]) -> int:
    """How many outputs the config's classification head has (transformers' rule)."""
    labels = config.get("id2label")
    if isinstance(labels, dict) and labels:
        return len(labels)
    value = config.get("num_labels")
    return value if isinstance(value, int) else 2


def _is_classifier(config: dict[str, Any]) -> bool:
    architectures = config.get("architectures") or []
    return any(str(name).endswith("ForSequenceClassification") for name in architectures)


def safetensors_keys(folder: Path) -> dict[str, Path]:
    """Every tensor name of the folder's safetensors files (headers only), with its file."""
    keys: dict[str, Path] = {}
    for file in sorted(folder.glob("*.safetensors")):
        try:
            with open(file, "rb") as handle:
                size = struct.unpack("<Q", handle.read(8))[0]
                if size > 100 << 20:
                    raise RewardkitError(f"{file} has a header of {size} bytes; it is not a safetensors file")
                header = json.loads(handle.read(size))
        except (OSError, ValueError, struct.error) as error:
            raise RewardkitError(f"cannot read the safetensors header of {file}: {error}") from None
        for name in header:
            if name != "__metadata__":
                keys[name] = file
    return keys


def find_head(folder: Path, wanted: str | None) -> str:
    """The weight name of the scalar head's matrix (``<prefix>.weight``), from safetensors headers."""
    keys = safetensors_keys(folder)
    if not keys:
        raise RewardkitError(
            f"{folder} holds no *.safetensors weights, so its scalar head cannot be found; save the "
            "model with safe_serialization=True"
        )
    prefixes = (wanted,) if wanted else HEAD_PREFIXES
    for prefix in prefixes:
        for key in keys:
            # a head saved beside the backbone, possibly under the wrapper's own prefix
            if key == f"{prefix}.weight" or (key.endswith(f".{prefix}.weight") and "layers" not in key):
                return key
    tried = ", ".join(f"{prefix}.weight" for prefix in prefixes)
    raise RewardkitError(
        f"{folder} has no scalar head: its config is not a *ForSequenceClassification model and its "
        f"weights have none of {tried}; give param head (the head's weight prefix) or use a "
        "sequence-classification checkpoint with num_labels=1"
    )


def inspect_folder(model: str, *, local: bool, head: str | None = None) -> ModelFacts:
    """Check a model folder without loading it; ``RewardkitError`` naming what is missing.

    ``local``: the weights must be there too (the HTTP backends need only config and tokenizer).
    """
    folder = Path(model).expanduser()
    if not folder.is_dir():
        raise RewardkitError(f"model folder {model!r} does not exist or is not a folder")
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise RewardkitError(f"{folder} has no config.json; it is not a transformers model folder")
    config = _read_json(config_file)
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise RewardkitError(
            f"{folder} has no tokenizer (none of {list(TOKENIZER_FILES)}); save the reward model's "
            "tokenizer into the same folder (tokenizer.save_pretrained(folder))"
        )
    chat_template = (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file()
    tokenizer_config = folder / "tokenizer_config.json"
    if not chat_template and tokenizer_config.is_file():
        chat_template = bool(_read_json(tokenizer_config).get("chat_template"))
    if _is_classifier(config) and head is None:
        labels = num_labels(config)
        if labels != 1:
            raise RewardkitError(
                f"{folder} is a sequence-classification model with num_labels={labels}; a reward model "
                "has one scalar output (num_labels=1, as TRL's RewardTrainer trains it)"
            )
        if local and not safetensors_keys(folder) and not list(folder.glob("*.bin")):
            raise RewardkitError(f"{folder} holds no weights (*.safetensors or *.bin)")
        return ModelFacts(kind="sequence-classification", head_key=None, chat_template=chat_template)
    if not local:
        return ModelFacts(kind="tokenizer-only", head_key=None, chat_template=chat_template)
    return ModelFacts(kind="backbone+head", head_key=find_head(folder, head), chat_template=chat_template)


def _inspect(model: str, backend: str, head: str | None) -> ModelFacts:
    try:
        return inspect_folder(model, local=backend == "local", head=head)
    except RewardkitError as error:
        raise ValueError(str(error)) from None


# -- the schemas ---------------------------------------------------------------------------------


def _resource(expects: str | None = None) -> dict[str, Any]:
    return operator_only("resource", expects=expects)


class RewardModelParams(ParamsModel):
    """Params of ``reward-model`` (see docs/reward_models.md)."""

    backend: Backend = Field(
        "local",
        description="local: in this process (torch); vllm-classify / vllm-pooling: a vLLM server's "
        "/classify or /pooling; openrlhf: an OpenRLHF-style /get_reward server",
    )
    base_url: str | None = Field(
        None,
        validate_default=True,
        description="root URL of the server (HTTP backends), e.g. http://127.0.0.1:8000",
        json_schema_extra=operator_only("url", expects="an http:// or https:// root URL, or null"),
    )
    served_model: str | None = Field(
        None, description="the model name the vLLM server serves (null: the server's only model)"
    )
    api_key_env: str | None = Field(
        None,
        description="NAME of the environment variable holding the server's bearer token",
        json_schema_extra=operator_only("credential", expects="the name of an environment variable, or null"),
    )
    head: str | None = Field(
        None,
        description="weight name prefix of the scalar head when the folder holds a backbone plus a head "
        f"(null: a sequence-classification model, else the first of {list(HEAD_PREFIXES)} found)",
    )
    template: Literal["auto", "chat", "plain"] = Field(
        "auto",
        description="chat: the tokenizer's chat template over [prompt, assistant completion]; plain: "
        "prompt + separator + completion; auto: chat when the tokenizer has a template",
    )
    separator: str = Field("", description="what joins prompt and completion under the plain template")
    max_tokens: int = Field(
        2048,
        ge=8,
        le=MAX_TOKENS,
        description="tokens the model reads at most; longer inputs are cut by `truncation`",
        json_schema_extra=_resource(),
    )
    truncation: Literal["left", "right"] = Field(
        "left",
        description="left: drop the oldest tokens (the end of the completion is kept and scored); "
        "right: drop the newest (the end of the completion is lost)",
    )
    score_mean: float = Field(0.0, description="fixed mean subtracted from the raw score")
    score_std: float = Field(1.0, gt=0, description="fixed scale the centred score is divided by")
    length_normalisation: Literal["none", "per_token", "linear"] = Field(
        "none",
        description="per_token: score / completion tokens; linear: score - length_penalty * "
        "completion tokens / 1000",
    )
    length_penalty: float = Field(0.0, ge=0, description="penalty per 1000 completion tokens (linear)")
    empty_completion_score: float = Field(
        EMPTY_COMPLETION_SCORE,
        allow_inf_nan=False,
        description="the score of an empty or whitespace-only completion, charged to it (diagnostic "
        "empty_completion): keep it below what the model gives real answers, so that no policy learns "
        "to answer nothing (in an ensemble, the ensemble's own is used)",
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto",
        description="local backend: weights' dtype (auto: bfloat16 on CUDA, float32 on CPU)",
        json_schema_extra=_resource(),
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto",
        description="local backend: where the model runs (auto: CUDA when available)",
        json_schema_extra=_resource(),
    )
    batch_tokens: int = Field(
        16384,
        ge=64,
        le=MAX_BATCH_TOKENS,
        description="padded tokens per forward pass (local) or per request (HTTP); sequences are "
        "sorted by length and packed into buckets under this budget",
        json_schema_extra=_resource(),
    )
    concurrency: int = Field(
        4, ge=1, le=MAX_CONCURRENCY, description="requests in flight (HTTP)", json_schema_extra=_resource()
    )
    timeout_s: float = Field(
        120.0, gt=0, le=MAX_TIMEOUT_S, description="per request (HTTP)", json_schema_extra=_resource()
    )
    retries: int = Field(
        3,
        ge=0,
        le=MAX_RETRIES,
        description="retries of a request on 408/429/5xx and dropped connections (HTTP)",
        json_schema_extra=_resource(),
    )
    deadline_s: float = Field(
        600.0,
        gt=0,
        le=MAX_DEADLINE_S,
        description="absolute limit on scoring one batch of groups (HTTP)",
        json_schema_extra=_resource(),
    )

    # Last, so that its check sees every other setting (pydantic validates fields in order, and
    # reports a field's error under its name).
    model: str = Field(
        description="local folder of the reward model: weights, config and tokenizer (for the HTTP "
        "backends, at least the config and the tokenizer of the model the server serves)",
        json_schema_extra=operator_only("path", expects="the path of a local model folder"),
    )

    _facts: ModelFacts | None = PrivateAttr(None)
    _sha256: str = PrivateAttr("")

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None, info: ValidationInfo) -> str | None:
        backend = info.data.get("backend", "local")
        if value is None:
            if backend in REMOTE_BACKENDS:
                raise ValueError(f"backend {backend} needs base_url, the server's root URL")
            return None
        if backend == "local":
            raise ValueError("base_url is for the HTTP backends; backend local runs the model here")
        if not value.startswith(("http://", "https://")) or len(value) <= len("https://"):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(
                "must be the NAME of an environment variable (letters, digits and _), not the key itself"
            )
        return value

    @field_validator("score_mean", "score_std")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be finite")
        return value

    @field_validator("length_penalty")
    @classmethod
    def _penalty(cls, value: float, info: ValidationInfo) -> float:
        if not math.isfinite(value):
            raise ValueError("must be finite")
        if value != 0.0 and info.data.get("length_normalisation") != "linear":
            raise ValueError("length_penalty applies only with length_normalisation: linear")
        return value

    @field_validator("model")
    @classmethod
    def _folder(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip():
            raise ValueError("an empty path")
        facts = _inspect(value, info.data.get("backend", "local"), info.data.get("head"))
        if info.data.get("template") == "chat" and not facts.chat_template:
            raise ValueError(
                f"template chat, but the tokenizer in {value} has no chat template; use template "
                "plain (or auto) or add a chat template to tokenizer_config.json / chat_template.jinja"
            )
        return value

    @model_validator(mode="after")
    def _identity(self) -> RewardModelParams:
        self._facts = _inspect(self.model, self.backend, self.head)
        try:
            self._sha256 = folder_identity(self.model).sha256
        except RewardkitError as error:
            raise ValueError(str(error)) from None
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def model_sha256(self) -> str:
        """The streamed SHA-256 of the model folder (part of the identity)."""
        return self._sha256

    @property
    def facts(self) -> ModelFacts:
        assert self._facts is not None
        return self._facts


class EnsembleParams(ParamsModel):
    """Params of ``reward-model-ensemble``: members are ``reward-model`` params, one mapping each."""

    members: list[RewardModelParams] = Field(
        min_length=2,
        max_length=MAX_MEMBERS,
        description="two or more reward models; give each its own score_mean / score_std so their "
        "scales agree before they are combined",
        json_schema_extra=operator_only("path", expects=f"a list of 2 to {MAX_MEMBERS} reward-model params"),
    )
    combine: Literal["mean", "min", "mean_minus_std"] = Field(
        "mean", description="how member scores become the term: mean, min, or mean - k * std"
    )
    k: float = Field(1.0, ge=0, le=100, description="the k of mean_minus_std")
    empty_completion_score: float = Field(
        EMPTY_COMPLETION_SCORE,
        allow_inf_nan=False,
        description="the ensemble's score of an empty or whitespace-only completion, charged to it "
        "(diagnostic empty_completion); keep it below what the members give real answers",
    )

    @field_validator("k")
    @classmethod
    def _k(cls, value: float, info: ValidationInfo) -> float:
        if value != 1.0 and info.data.get("combine") != "mean_minus_std":
            raise ValueError("k applies only with combine: mean_minus_std")
        return value
