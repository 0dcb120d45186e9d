"""What a run records about the providers it scored with, and the checks made on resume.

Resuming pending work (or comparing with kept results) under a different catalog, provider,
revision or identity is refused, naming each field that differs. Code that changed while the
revision did not (``check_resume``'s ``strict``): ``rewardkit score --resume`` refuses it unless
``--allow-code-change``; other callers warn, or refuse under ``REWARDKIT_STRICT_IDENTITY=1``. A fresh
``rewardkit score`` over a recorded run warns (``unbumped_code_changes``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rewardkit.contracts.errors import IdentityMismatchError
from rewardkit.contracts.identity import code_fingerprint
from rewardkit.scoring.bound_provider import BoundProvider


class RevisionNotBumpedWarning(UserWarning):
    """A provider's code changed since a recorded run but its revision did not."""


@dataclass(frozen=True)
class ProviderRecord:
    catalog: str | None
    provider: str
    revision: str
    identity: str
    code_fingerprint: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProviderRecord:
        try:
            return cls(**{field: data[field] for field in cls.__dataclass_fields__})
        except KeyError as error:
            raise ValueError(f"provider record lacks {error.args[0]!r}: {dict(data)!r}") from None


def record_of(bound: BoundProvider, catalog_ref: str | None) -> ProviderRecord:
    return ProviderRecord(
        catalog=catalog_ref,
        provider=bound.name,
        revision=bound.spec.revision,
        identity=bound.identity,
        code_fingerprint=code_fingerprint(bound.spec),
    )


def unbumped_code_changes(recorded: object, current: Sequence[ProviderRecord]) -> list[str]:
    """One line per provider whose code changed since ``recorded`` (a manifest's ``providers``) while its
    name and revision did not: a fresh run is not refused for it, but its results would pass for the
    recorded run's under the same revision, so the user is told to bump it. Unreadable records: none."""
    if not isinstance(recorded, list):
        return []
    by_name = {record.provider: record for record in current}
    lines = []
    for row in recorded:
        try:
            before = ProviderRecord.from_json(row)
        except (ValueError, TypeError):
            continue
        now = by_name.get(before.provider)
        if now is None or now.revision != before.revision or now.code_fingerprint == before.code_fingerprint:
            continue
        lines.append(
            f"the code of provider {now.provider!r} changed since the recorded run (fingerprint "
            f"{before.code_fingerprint[:12]} -> {now.code_fingerprint[:12]}) but its revision is still "
            f"{now.revision!r}: bump `revision` (in its RewardProviderSpec or @rewardkit.provider) when a "
            "change can move a score, so results of the two versions are never taken for one reward"
        )
    return lines


def check_resume_all(
    recorded: Sequence[ProviderRecord], current: Sequence[ProviderRecord], strict: bool | None = None
) -> None:
    """``check_resume`` for every provider of a run; the two runs must select the same providers."""
    by_name = {record.provider: record for record in current}
    for record in recorded:
        if record.provider not in by_name:
            raise IdentityMismatchError(
                f"pending work was scored with provider {record.provider!r} (identity "
                f"{record.identity}), which this configuration no longer selects "
                f"(it selects {sorted(by_name)})"
            )
        check_resume(record, by_name[record.provider], strict)
    missing = sorted(set(by_name) - {record.provider for record in recorded})
    if missing:
        raise IdentityMismatchError(f"pending work has no record of providers {missing}; start a new run")


def strict_identity() -> bool:
    return os.environ.get("REWARDKIT_STRICT_IDENTITY", "").strip().lower() in ("1", "true", "yes", "on")


# What names a reward: the same name from another catalog, or at another revision, is another one.
_IDENTIFYING = ("catalog", "provider", "revision", "identity")


def check_resume(recorded: ProviderRecord, current: ProviderRecord, strict: bool | None = None) -> None:
    """Refuse to resume under another catalog, provider, revision or identity (naming each that
    differs, with both values); flag code changed without a revision bump."""
    changed = [
        f"{name}: recorded {getattr(recorded, name)!r}, now {getattr(current, name)!r}"
        for name in _IDENTIFYING
        if getattr(recorded, name) != getattr(current, name)
    ]
    if changed:
        raise IdentityMismatchError(
            f"the reward differs ({'; '.join(changed)}): "
            f"pending results were recorded under provider {recorded.provider!r} revision "
            f"{recorded.revision!r} identity {recorded.identity} (catalog {recorded.catalog!r}) "
            f"but the current one is {current.provider!r} revision {current.revision!r} identity "
            f"{current.identity} (catalog {current.catalog!r}); finish the pending work with the "
            "recorded provider or start a new run"
        )
    if recorded.code_fingerprint != current.code_fingerprint and recorded.revision == current.revision:
        message = (
            f"the code of provider {current.provider!r} changed since the recorded run "
            f"(fingerprint {recorded.code_fingerprint[:12]} -> {current.code_fingerprint[:12]}) "
            f"but its revision is still {current.revision!r}; bump the revision when code "
            "changes what it scores"
        )
        if strict if strict is not None else strict_identity():
            raise IdentityMismatchError(message)
        warnings.warn(message, RevisionNotBumpedWarning, stacklevel=2)
