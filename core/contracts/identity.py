"""Identity hashes of providers and fingerprints of their code.

The identity is the SHA-256 of canonical JSON (sorted keys, no whitespace, type-strict) of what
defines a provider's reward semantics. The code fingerprint hashes the code behind the factory (the
modules it reaches, without docstrings), so a code change without a revision bump can be caught
against a recorded run.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import inspect
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from rewardkit.contracts import RewardProviderSpec
from rewardkit.contracts.frozen import freeze, thaw


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
    """SHA-256 over the code that defines a provider and the versions of the packages it declares it
    scores with (``spec.scoring_packages``, as ``name==version``). The rule is docs/plugins.md's
    "Identity and code fingerprint"; ``fingerprinted_code`` lists what it covers."""
    digest = hashlib.sha256()
    for label, part in sorted(_fingerprinted(spec).items()):
        digest.update(f"{label}\0{part}\n".encode("utf-8", "surrogateescape"))
    for name in spec.scoring_packages:
        digest.update(f"package {name}=={_distribution_version(name)}\n".encode())
    return digest.hexdigest()


def fingerprinted_code(spec: RewardProviderSpec) -> list[str]:
    """What the code fingerprint of ``spec`` covers: module names, and ``module/relative/path`` for
    files loaded by path from beside a module (sandbox scripts, prompt templates)."""
    return sorted(_fingerprinted(spec))


def _fingerprinted(spec: RewardProviderSpec) -> dict[str, str]:
    """label -> digest of each piece of code behind ``spec.factory``.

    Why these pieces: the modules defining the callables behind the factory (the factory, the scorer
    of ``partial(map_candidates, scorer)``, ``__wrapped__`` targets), then every module of the same
    top-level package they import (statically, at any depth: a helper they call is part of the
    score), and every file or folder a reached module names in a string literal beside it
    (``Path(__file__).with_name("inside")``: code a sandbox loads by path is never imported). A
    sibling module nothing reaches is not the provider's code, so editing it changes nothing. Each
    Python module is hashed as its syntax tree without docstrings, line numbers or comments: a
    docstring, a comment or a reformat cannot change a score, so it cannot change the fingerprint.
    Other files are hashed by bytes. Labels are module names and paths inside the package, so the
    fingerprint is the same wherever the package is installed. rewardkit's own modules are the
    framework, versioned with it: one counts alone (``rewardkit.scoring.pointwise``), and only its built-in
    providers (``rewardkit.builtin``) are followed into their helpers."""
    pieces: dict[str, str] = {}
    pending: list[str] = []
    for target in callables_behind(spec.factory):
        module_name = getattr(target, "__module__", None) or ""
        if _module_file(module_name) is None:
            pieces[f"<{module_name or type(target).__name__}>"] = "no-source"
        else:
            pending.append(module_name)
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(name)
        if path is None:
            continue
        digest, imported, beside = _module_digest(name, path)
        pieces[name] = digest
        scope = _followed_scope(name)
        if scope is None:
            continue  # a framework module counts alone
        pending.extend(other for other in imported if other == scope or other.startswith(scope + "."))
        folder = os.path.dirname(path)
        for relative in beside:
            for label, file_path in _files_under(folder, relative):
                pieces[f"{name.rpartition('.')[0] or name}/{label}"] = _file_digest(file_path)
    return pieces


def _followed_scope(module_name: str) -> str | None:
    """The package whose modules are followed from ``module_name``: its top-level package, except
    inside rewardkit (the framework), where only the built-in providers' package is."""
    top = module_name.partition(".")[0]
    if top != _FRAMEWORK:
        return top
    builtin = f"{_FRAMEWORK}.builtin"
    return builtin if module_name.startswith(builtin + ".") else None


def _module_file(module_name: str) -> str | None:
    """The source file of a module, ``None`` for one without source (built-in, C, REPL). A module not
    imported yet (a lazy import inside a function) is found below its top-level package's folders,
    without importing anything: fingerprinting runs no code."""
    module = sys.modules.get(module_name)
    if module is not None:
        path = getattr(module, "__file__", None)
        return path if path and path.endswith(".py") and os.path.isfile(path) else None
    top, _, rest = module_name.partition(".")
    folders = list(getattr(sys.modules.get(top), "__path__", None) or [])
    if not rest:
        return None
    for folder in folders:
        base = os.path.join(folder, *rest.split("."))
        for path in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(path):
                return path
    return None


_FRAMEWORK = __name__.partition(".")[0]
# (which digest, path) -> ((mtime, size), value): a file is read and parsed again only when it changed.
_stat_cache: dict[tuple[str, str], tuple[tuple[int, int], Any]] = {}
_cache_lock = threading.Lock()
ModuleFacts = tuple[str, tuple[str, ...], tuple[str, ...]]


def _stat_key(path: str) -> tuple[int, int]:
    try:
        info = os.stat(path)
    except OSError:
        return (-1, -1)
    return (info.st_mtime_ns, info.st_size)


def _cached_by_stat(kind: str, path: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` for ``path``, remembered until the file's mtime or size changes (a None, for a file
    that could not be read, is not remembered)."""
    key = _stat_key(path)
    with _cache_lock:
        cached = _stat_cache.get((kind, path))
    if cached is not None and cached[0] == key:
        return cached[1]
    value = compute()
    if value is not None:
        with _cache_lock:
            _stat_cache[(kind, path)] = (key, value)
    return value


def _code_digest(tree: ast.Module) -> str:
    """A module's code as its syntax tree without docstrings (comments are gone already)."""
    _drop_docstrings(tree)
    return sha256_hex(ast.dump(tree, annotate_fields=False, include_attributes=False))


def _module_digest(name: str, path: str) -> ModuleFacts:
    """The digest of a module's code, the modules it imports (absolute names) and the names of the files
    or folders beside it that it mentions as string literals; cached by stat."""

    def read() -> ModuleFacts:
        try:
            with open(path, "rb") as handle:
                tree = ast.parse(handle.read(), filename=path)
        except (OSError, SyntaxError, ValueError):
            return (_file_digest(path), (), ())
        package = name if os.path.basename(path) == "__init__.py" else name.rpartition(".")[0]
        imported = tuple(sorted({*_imports_of(tree, package), *_modules_named(tree)}))
        beside = _names_beside(tree, os.path.dirname(path))
        return (_code_digest(tree), imported, beside)

    facts: ModuleFacts = _cached_by_stat("module", path, read)
    return facts


def _drop_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]


def _imports_of(tree: ast.AST, package: str) -> tuple[str, ...]:
    """Absolute names of the modules ``tree`` imports (``from a import b`` names ``a`` and ``a.b``:
    ``b`` may be a submodule), relative imports resolved against ``package``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 > len(parts):
                    continue
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                source = f"{base}.{node.module}" if node.module and base else (node.module or base)
            else:
                source = node.module or ""
            if not source:
                continue
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names if alias.name != "*")
    return tuple(sorted(found))


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[\w.]+)?")


def _modules_named(tree: ast.AST) -> set[str]:
    """Modules a string literal names as code to run (``"pkg.check:run"`` for a worker to import,
    ``python -m pkg.worker``): loaded by name, never imported here, still the provider's code. Only
    those of the followed package count (``_fingerprinted``), and only if they exist."""
    return {
        node.value.partition(":")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _DOTTED.fullmatch(node.value)
    }


def _names_beside(tree: ast.AST, folder: str) -> tuple[str, ...]:
    """String literals of ``tree`` that name a file or folder in ``folder`` (relative, inside it)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if not text or len(text) > 200 or "\0" in text or os.path.isabs(text):
                continue
            normal = os.path.normpath(text)
            if normal.startswith(os.pardir) or normal in (".", "__pycache__", "__init__.py"):
                continue
            if os.path.exists(os.path.join(folder, normal)):
                found.add(normal.replace(os.sep, "/"))
    return tuple(sorted(found))


def _files_under(folder: str, relative: str) -> list[tuple[str, str]]:
    """``(label, path)`` of the file ``relative`` in ``folder``, or of every file below that folder."""
    root = os.path.join(folder, relative)
    if os.path.isfile(root):
        return [(relative, root)]
    files = []
    for here, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__" and not d.startswith("."))
        for file_name in names:
            if file_name.startswith(".") or file_name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(here, file_name)
            files.append((os.path.relpath(path, folder).replace(os.sep, "/"), path))
    return sorted(files)


def _file_digest(path: str) -> str:
    """A Python file as its syntax tree without docstrings, anything else by bytes; cached by stat."""

    def read() -> str | None:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        if path.endswith(".py"):
            try:
                return _code_digest(ast.parse(data, filename=path))
            except (SyntaxError, ValueError):
                pass
        return hashlib.sha256(data).hexdigest()

    digest: str | None = _cached_by_stat("file", path, read)
    return "unreadable" if digest is None else digest


def _distribution_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def callables_behind(factory: Any) -> list[Any]:
    """The functions and classes behind a factory: what ``functools.partial`` wraps, its callable
    arguments (the scorer of ``partial(map_candidates, scorer)``), ``__wrapped__`` targets unwrapped."""
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
