"""Identity hashes of providers and fingerprints of their code.

The identity is the SHA-256 of canonical JSON (sorted keys, no whitespace, type-strict) of what
defines a provider's reward semantics. The code fingerprint hashes the source files behind the
factory, so a code change without a revision bump can be caught against a recorded run.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import json
import os
import sys
import threading
from collections.abc import Mapping
from typing import Any

from rewardkit.contracts import RewardProviderSpec
from rewardkit.frozen import freeze, thaw


def canonical_json(value: Any, path: str = "$") -> str:
    """Serialise a JSON value canonically; refuse anything JSON cannot represent exactly (by
    ``freeze``, so common inputs and identity params or semantic identity accept the same values)."""
    plain = thaw(freeze(value, path))
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def provider_identity(spec: RewardProviderSpec, params: Mapping[str, Any] | None = None) -> str:
    """The 64-hex identity of a provider, optionally configured with ``params`` (which, like
    ``skip_when_absent``, enter the hashed document only when set, so other identities stay)."""
    document: dict[str, Any] = {
        "name": spec.name,
        "revision": spec.revision,
        "needs": list(spec.needs),
        "terms": list(spec.terms),
        "diagnostics": list(spec.diagnostics),
        "semantic_identity": spec.semantic_identity,
    }
    if spec.skip_when_absent:
        document["skip_when_absent"] = list(spec.skip_when_absent)
    if params:
        document["params"] = dict(params)
    return sha256_hex(canonical_json(document, f"provider {spec.name!r}"))


def code_fingerprint(spec: RewardProviderSpec) -> str:
    """SHA-256 over the provider's code and the versions of the packages it declares it scores with:
    every file of the package holding each callable behind the factory (the factory, the scorer of a
    ``partial(map_candidates, scorer)``, what partials wrap), sub-folders included: scripts a sandbox
    runs are never imported, so an import walk would miss them. A framework module
    (``rewardkit.pointwise``) counts alone. Files are hashed by path inside the package and bytes, so
    the fingerprint is the same wherever installed; ``spec.scoring_packages`` adds ``name==version``."""
    roots = {_code_root(target) for target in _callables_behind(spec.factory)}  # (path, label)
    digest = hashlib.sha256()
    for root, label in sorted(roots):
        digest.update(f"root {label}\n".encode())
        digest.update(_tree_digest(root).encode())
    for name in spec.scoring_packages:
        digest.update(f"package {name}=={_distribution_version(name)}\n".encode())
    return digest.hexdigest()


def _code_root(target: Any) -> tuple[str, str]:
    """The folder of the package defining ``target`` (its file, for a lone module or the framework's)."""
    module_name = getattr(target, "__module__", None) or ""
    try:
        source_file = inspect.getsourcefile(target)
    except TypeError:
        source_file = None
    if source_file is None:
        return "", f"<{module_name or type(target).__name__}>"
    module = sys.modules.get(module_name)
    package = getattr(module, "__package__", None) or ""
    if not package or package == _FRAMEWORK:
        return source_file, module_name
    return os.path.dirname(source_file), package


_FRAMEWORK = __name__.partition(".")[0]
_tree_cache: dict[str, tuple[tuple[tuple[str, int, int], ...], str]] = {}
_tree_lock = threading.Lock()


def _tree_digest(root: str) -> str:
    """The SHA-256 of a file, or of every file in a folder (relative path and bytes), cached by stat."""
    if not root:
        return "no-source"
    if os.path.isfile(root):
        files = [(os.path.basename(root), root)]
    else:
        files = []
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__" and not d.startswith("."))
            for name in names:
                if name.startswith(".") or name.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(folder, name)
                files.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
        files.sort()
    stats = []
    for relative, path in files:
        try:
            info = os.stat(path)
            stats.append((relative, info.st_mtime_ns, info.st_size))
        except OSError:
            stats.append((relative, -1, -1))
    key = tuple(stats)
    with _tree_lock:
        cached = _tree_cache.get(root)
    if cached is not None and cached[0] == key:
        return cached[1]
    digest = hashlib.sha256()
    for relative, path in files:
        digest.update(relative.encode("utf-8", "surrogateescape") + b"\0")
        try:
            with open(path, "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).digest())
        except OSError:
            digest.update(b"unreadable")
    value = digest.hexdigest()
    with _tree_lock:
        _tree_cache[root] = (key, value)
    return value


def _distribution_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


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
