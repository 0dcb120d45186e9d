"""How each trainer's completions ended (token counts and finish reasons), and refusing what is missing.

A field a trainer cannot provide is refused when the binding builds its reward, even for a provider
that would skip such a candidate: skipping every candidate of a run silently changes the reward.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from rewardkit.plugin import (
    CANDIDATE_NEEDS,
    LENGTH_VERDICT,
    BindingError,
    Catalog,
    RewardkitError,
    RewardLike,
    RewardProviderSpec,
    resolve_catalog,
)

STOP_VERDICT = "stop"


def trl_finish_reason(completion_ids: Sequence[int], stop_ids: Collection[int]) -> str | None:
    """TRL's rule (trl 1.13 ``GRPOTrainer._generate``, ``mask_truncated_completions``): ``"length"``
    when the last id is neither EOS nor padding, else ``"stop"``; an empty completion has no verdict."""
    if len(completion_ids) == 0:
        return None
    return STOP_VERDICT if int(completion_ids[-1]) in stop_ids else LENGTH_VERDICT


def budget_finish_reason(token_count: int, budget: int, ends_with_eos: bool) -> str:
    """``"length"`` when a response reached the token budget without ending in EOS, else ``"stop"``:
    vLLM checks EOS before the length cap, and one ending earlier hit a stop string or token."""
    return LENGTH_VERDICT if token_count >= budget and not ends_with_eos else STOP_VERDICT


def stop_token_ids(tokenizer: Any) -> frozenset[int]:
    """EOS and padding ids of a tokenizer or a processor's ``tokenizer`` (``eos_token_id`` may be a list)."""
    inner = getattr(tokenizer, "tokenizer", None)
    if inner is not None and getattr(tokenizer, "eos_token_id", None) is None:
        tokenizer = inner
    ids: set[int] = set()
    for name in ("eos_token_id", "pad_token_id"):
        value = getattr(tokenizer, name, None)
        values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
        ids.update(int(item) for item in values if item is not None)
    if not ids:
        raise BindingError(
            f"the tokenizer {type(tokenizer).__name__} has neither eos_token_id nor pad_token_id, so "
            "the binding cannot tell a completion that stopped from one cut at its length limit"
        )
    return frozenset(ids)


def _spec_of(catalog: Catalog | None, catalog_ref: str | None, name: str) -> RewardProviderSpec | None:
    if catalog is None:
        # A service resolves its catalog itself; the same providers installed here give their needs.
        try:
            catalog = resolve_catalog(catalog_ref)
        except RewardkitError:
            return None
    return catalog.entry(name).spec if name in catalog else None


def needed_candidate_fields(reward: RewardLike) -> dict[str, list[str]]:
    """Each candidate field (``CANDIDATE_NEEDS``) a selected provider declares, with the providers."""
    needed: dict[str, list[str]] = {}
    for record in reward.providers:
        spec = _spec_of(reward.catalog, record.catalog, record.provider)
        for need in spec.needs if spec is not None else ():
            if need in CANDIDATE_NEEDS and record.provider not in needed.setdefault(need, []):
                needed[need].append(record.provider)
    return needed


def refuse_missing(rewards: Iterable[RewardLike], provided: Collection[str], why: str, remedy: str) -> None:
    """Raise ``BindingError`` naming each needed candidate field not in ``provided``; ``why`` says
    what the trainer hands instead, ``remedy`` how to provide it."""
    missing: dict[str, list[str]] = {}
    for reward in rewards:
        for field, providers in needed_candidate_fields(reward).items():
            if field not in provided:
                known = missing.setdefault(field, [])
                known.extend(name for name in providers if name not in known)
    if missing:
        fields = "; ".join(
            f"{field!r} (read by {', '.join(map(repr, names))})" for field, names in missing.items()
        )
        raise BindingError(
            f"the reward needs {fields} on every candidate, and {why}: scoring without it would skip or "
            f"refuse every sample. {remedy}"
        )
