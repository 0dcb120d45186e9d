"""Identity hashes of providers and fingerprints of their code.

The identity is the SHA-256 of canonical JSON (sorted keys, no whitespace, type-strict) of what
defines a provider's reward semantics. The code fingerprint hashes the source files behind the
factory, so a code change without a revision bump can be caught against a recorded run.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Mapping
from typing import Any

from rewardkit.contracts import RewardProviderSpec
from rewardkit.frozen import freeze, thaw


def canonical_json(value: Any, path: str = "$") -> str:
    """Serialise a JSON value canonically; refuse anything JSON cannot represent exactly.

    Validation is ``freeze``'s, so what the adapter accepts as a common input and what identity
    accepts as params or semantic identity are the same set of values.
    """
    plain = thaw(freeze(value, path))
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def identity_document(spec: RewardProviderSpec, params: Mapping[str, Any] | None = None) -> dict:
    """What the identity hash covers. ``params`` appear only when a configuration sets some."""
    document: dict[str, Any] = {
        "name": spec.name,
        "revision": spec.revision,
        "needs": list(spec.needs),
        "terms": list(spec.terms),
        "diagnostics": list(spec.diagnostics),
        "semantic_identity": spec.semantic_identity,
    }
    if params:
        document["params"] = dict(params)
    return document


def provider_identity(spec: RewardProviderSpec, params: Mapping[str, Any] | None = None) -> str:
    """The 64-hex identity of a provider, optionally configured with ``params``."""
    document = identity_document(spec, params)
    return sha256_hex(canonical_json(document, f"provider {spec.name!r}"))


def code_fingerprint(spec: RewardProviderSpec) -> str:
    """SHA-256 over the source files of the factory and any callables it wraps (partials)."""
    files: set[str] = set()
    for target in _callables_behind(spec.factory):
        try:
            source_file = inspect.getsourcefile(target)
        except TypeError:
            source_file = None
        if source_file:
            files.add(source_file)
    digest = hashlib.sha256()
    for path in sorted(files):
        try:
            with open(path, "rb") as handle:
                digest.update(handle.read())
        except OSError:
            digest.update(path.encode())
    return digest.hexdigest()


def _callables_behind(factory: Any) -> list[Any]:
    found: list[Any] = []
    pending = [factory]
    while pending:
        target = pending.pop()
        if isinstance(target, functools.partial):
            pending.append(target.func)
            pending.extend(arg for arg in target.args if callable(arg))
            pending.extend(arg for arg in target.keywords.values() if callable(arg))
            continue
        target = inspect.unwrap(target)
        found.append(target if inspect.isroutine(target) or inspect.isclass(target) else type(target))
    return found
