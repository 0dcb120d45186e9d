"""HTTP backends: a reward model served elsewhere, scored through the core transport.

- ``vllm-classify``: vLLM's ``POST /classify`` with the token ids (``"input": [[ids], ...]``),
  ``"use_activation": false`` (the raw logit, not its sigmoid) and no special tokens added;
  ``data[i].probs`` holds the one score of sequence ``data[i].index``.
- ``vllm-pooling``: vLLM's ``POST /pooling`` with ``"task": "classify"``, the same ids and
  flags; ``data[i].data`` holds the score.
- ``openrlhf``: OpenRLHF's remote reward model protocol, ``POST /get_reward`` with
  ``{"query": [text, ...]}`` answered by ``{"rewards": [float, ...]}``; the server tokenizes the
  text itself, so the text sent is the cut ids decoded (special tokens kept).

Sending ids to vLLM means the server reads exactly the tokens the local backend would, cut by
the same policy. vLLM's pooler reads a classifier's score at the last token of each input as
sent (inputs are sent unpadded, one list each); transformers reads a decoder classifier at its
last token that is not the config's ``pad_token_id``. For a decoder ``*ForSequenceClassification``
folder with a pad id, the trailing run of pad ids (a trailing eos when pad == eos) is therefore
not sent: a decoder's state at a token does not depend on the tokens after it, so vLLM's last
token is transformers' position and the score is the same. OpenRLHF's server tokenizes and
reads by its own rule (the last token its attention mask marks real).

Sequences are packed into requests of at most ``batch_tokens`` padded tokens
(longest first), ``concurrency`` requests in flight, each bounded by ``timeout_s`` and retried on
408/429/5xx and dropped connections with capped backoff honouring ``Retry-After``, all within
one absolute deadline, ``deadline_s``. Starting the server is not this module's job: it takes a
root URL. A failed request is an error carrying the URL, the status and what the server said.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from rewardkit.plugin import HttpClient, HttpError, RetryPolicy, RewardkitError, run_sync
from rewardkit_rl.reward_models.batching import token_budget_batches
from rewardkit_rl.reward_models.params import RewardModelParams
from rewardkit_rl.reward_models.text import pooled_index

PATHS = {"vllm-classify": "/classify", "vllm-pooling": "/pooling", "openrlhf": "/get_reward"}


def decoder_classifier_pad(settings: RewardModelParams) -> int | None:
    """The pad id whose trailing run is not sent to vLLM, or None to send the ids as they are.

    Only a decoder ``*ForSequenceClassification`` folder (a causal-LM family that is no masked-LM
    family, so no encoder such as BERT) with a ``pad_token_id`` in its config: an encoder reads
    every token, and a config transformers cannot read (remote code) is left to vLLM.
    """
    if not settings.backend.startswith("vllm") or settings.facts.kind != "sequence-classification":
        return None
    try:
        from transformers import AutoConfig
        from transformers.models.auto.modeling_auto import (
            MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
            MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        )

        config = AutoConfig.from_pretrained(settings.model, local_files_only=True)
    except Exception:
        return None
    kind = getattr(config, "model_type", None)
    if kind not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or kind in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return None
    value = config.get_text_config().pad_token_id
    return value if isinstance(value, int) else None


class RemoteModelError(RewardkitError):
    """The reward-model server did not give a score for every sequence; the message says why."""


class RemoteModel:
    """``score(sequences)`` over HTTP; ``decode(ids)`` gives the text for text-only protocols."""

    def __init__(self, settings: RewardModelParams, decode: Callable[[Sequence[int]], str]) -> None:
        assert settings.base_url is not None
        self.settings = settings
        self.backend = settings.backend
        self.path = PATHS[settings.backend]
        self.url = settings.base_url + self.path
        self.decode = decode
        self.cut_pad = decoder_classifier_pad(settings)
        # the token is read (and its variable checked) when the first batch is sent

    def score(self, sequences: Sequence[Sequence[int]]) -> list[float]:
        """Scores of every sequence, in order; ``RemoteModelError`` when any request fails."""
        if not sequences:
            return []
        return run_sync(lambda: self._score_all(list(sequences)))

    async def _score_all(self, sequences: list[Sequence[int]]) -> list[float]:
        settings = self.settings
        deadline = time.monotonic() + settings.deadline_s
        retry = RetryPolicy(attempts=settings.retries + 1)
        buckets = token_budget_batches([len(ids) for ids in sequences], settings.batch_tokens)
        scores: list[float | None] = [None] * len(sequences)
        gate = asyncio.Semaphore(settings.concurrency)
        try:
            client = HttpClient(
                settings.base_url or "",
                token_env=settings.api_key_env,
                timeout_s=settings.timeout_s,
                retry=retry,
                max_connections=settings.concurrency,
            )
        except RewardkitError as error:
            raise RemoteModelError(f"reward model at {settings.base_url}: {error}") from None

        async def one(bucket: list[int]) -> None:
            async with gate:
                values = await self._request(client, [sequences[index] for index in bucket], deadline)
            for index, value in zip(bucket, values):
                scores[index] = value

        async with client:
            tasks = [asyncio.ensure_future(one(bucket)) for bucket in buckets]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        assert all(value is not None for value in scores)
        return [float(value) for value in scores]  # type: ignore[arg-type]

    def body(self, batch: Sequence[Sequence[int]]) -> dict[str, Any]:
        """The request body of one batch."""
        if self.backend == "openrlhf":
            return {"query": [self.decode(ids) for ids in batch]}
        body: dict[str, Any] = {
            "input": [self.sent(ids) for ids in batch],
            "use_activation": False,
            "add_special_tokens": False,
        }
        if self.settings.served_model is not None:
            body["model"] = self.settings.served_model
        if self.backend == "vllm-pooling":
            body["task"] = "classify"
        return body

    def sent(self, ids: Sequence[int]) -> list[int]:
        """The ids vLLM gets: up to transformers' read position, so vLLM's last token is it."""
        if self.cut_pad is None:
            return list(ids)
        return list(ids[: pooled_index(ids, self.cut_pad) + 1])

    async def _request(
        self, client: HttpClient, batch: Sequence[Sequence[int]], deadline: float
    ) -> list[float]:
        try:
            answer = await client.post_json(self.path, self.body(batch), deadline=deadline)
        except HttpError as error:
            raise RemoteModelError(f"reward model at {self.url}: {error}") from None
        return self.read(answer, len(batch))

    def read(self, answer: Any, count: int) -> list[float]:
        """One finite score per sequence from the server's answer, or ``RemoteModelError``."""
        where = f"reward model at {self.url}"
        if self.backend == "openrlhf":
            rewards = answer.get("rewards") if isinstance(answer, dict) else None
            if not isinstance(rewards, list) or len(rewards) != count:
                raise RemoteModelError(
                    f"{where} answered without a list of {count} rewards: {str(answer)[:300]}"
                )
            return [_number(value, where, index) for index, value in enumerate(rewards)]
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != count:
            raise RemoteModelError(f"{where} answered without {count} data items: {str(answer)[:300]}")
        values: list[float | None] = [None] * count
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise RemoteModelError(f"{where}: data[{position}] is not an object")
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < count or values[index] is not None:
                raise RemoteModelError(f"{where}: data[{position}] has index {index!r}")
            raw = item.get("probs") if self.backend == "vllm-classify" else item.get("data")
            while isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], list):
                raw = raw[0]
            if not isinstance(raw, list) or len(raw) != 1:
                size = len(raw) if isinstance(raw, list) else raw
                raise RemoteModelError(
                    f"{where}: the served model gives {size} outputs per sequence; a reward model "
                    "gives one (a sequence-classification model with num_labels=1)"
                )
            values[index] = _number(raw[0], where, index)
        return [float(value) for value in values]  # type: ignore[arg-type]

    def close(self) -> None:
        """Nothing is held between calls (each batch opens and closes its connection pool)."""


def _number(value: Any, where: str, index: int) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RemoteModelError(f"{where}: the score of sequence {index} is {value!r}, not a finite number")
    return float(value)
