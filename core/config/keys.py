"""The dotted-key engine under the run configuration (``rewardkit.config`` holds the schema): reading
YAML and TOML files, nesting dotted and nested keys into one tree (a key given twice is an error),
``key=value`` overrides read as YAML, list indices (``components.0.weight``), open mappings whose keys
are kept verbatim, and errors in the user's words: every problem under its dotted key, an unknown key
with the nearest known one.

It knows nothing of any section: it reads pydantic models, and a section tells it what is particular
to it through the hooks of ``Section`` (keys it takes beyond its fields, its explanation of a
misplaced key, names that are one key, hints for a missing key). Imports point one way: the schema
imports this module, never the reverse."""

from __future__ import annotations

import os
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from rewardkit.contracts.errors import ConfigError, nearest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

__all__ = [
    "Section",
    "apply_override",
    "known_keys",
    "model_in",
    "nest",
    "parse_override",
    "read_file",
    "resolve_paths",
    "validation_error",
]


class Section(BaseModel):
    """The base of every section, the core's and the plugins': unknown keys are errors (with the nearest
    known one), and types are strict. The class attributes and class methods below are the engine's
    hooks: a section overrides them for what is particular to it, so the engine names no section."""

    # strict: "8" is not silently an int; overrides are YAML-typed, so users get real types anyway.
    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)

    # Groups of field names that are one key (two names of one column): an override of one name
    # replaces the file's value under every name of its group.
    SAME_KEY: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # Field name -> text appended to "required key is missing" when that field is absent.
    MISSING_HINTS: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def takes_key(cls, name: str) -> bool:
        """Whether the section accepts ``name`` although no field declares it (a key a validator of the
        section turns into its fields); its value is an open mapping, its keys unchecked here."""
        return False

    @classmethod
    def misplaced_key(cls, parts: Sequence[str], source: str | None) -> ConfigError | None:
        """The section's own explanation of the unknown key at ``parts`` (a key that belongs elsewhere),
        or ``None`` for the engine's did-you-mean."""
        return None


# The key tree, derived from the models so it can never drift from them.


def model_in(annotation: Any) -> type[BaseModel] | None:
    """The section model a field holds (directly or inside a union), or ``None`` for a plain value."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return next(filter(None, map(model_in, typing.get_args(annotation))), None)
    return None


def _is_free_mapping(annotation: Any) -> bool:
    """Whether a field holds an open mapping (``params``, ``spec``) whose own keys are not checked; a field
    typed ``Any`` too, as its validator reads the value as written (``rl.monitor.reference``)."""
    if annotation is dict or annotation is Any or typing.get_origin(annotation) is dict:
        return True
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return union and any(_is_free_mapping(member) for member in typing.get_args(annotation))


def known_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every dotted key ``model`` accepts, sections included, in declaration order."""
    keys: list[str] = []
    for name, info in model.model_fields.items():
        sub = model_in(info.annotation)
        keys.append(f"{prefix}{name}")
        keys.extend(known_keys(sub, f"{prefix}{name}.") if sub is not None else [])
    return keys


def _suggest(parts: Sequence[str], model: type[BaseModel], root: type[BaseModel]) -> str | None:
    """The nearest known key to an unknown one: a sibling first, then a same-named key anywhere under
    ``root``."""
    parent = ".".join(parts[:-1])
    wrong = parts[-1]
    close = nearest(wrong, model.model_fields)
    if close is not None:
        return f"{parent}.{close}" if parent else close
    everywhere = known_keys(root)
    # A right name in the wrong section (``group_size`` at the top) is the next most likely slip.
    by_leaf = {key: key.rsplit(".", 1)[-1] for key in everywhere}
    leaf_match = nearest(wrong, set(by_leaf.values()), cutoff=0.75)
    if leaf_match is not None:
        return next(key for key, leaf in by_leaf.items() if leaf == leaf_match)
    return nearest(".".join(parts), everywhere)


def _unknown_key(
    parts: Sequence[str], model: type[BaseModel], root: type[BaseModel], source: str | None
) -> ConfigError:
    dotted = ".".join(parts)
    explained = model.misplaced_key(parts, source) if issubclass(model, Section) else None
    if explained is not None:
        return explained
    nearest = _suggest(parts, model, root)
    hint = f"; did you mean {nearest}?" if nearest else ""
    parent = ".".join(parts[:-1]) or "the top level"
    known = ", ".join(model.model_fields)
    return ConfigError(f"unknown key{hint} (keys under {parent}: {known})", key=dotted, source=source)


# Turning dotted and nested keys into one nested tree.

_MISSING = object()


def _split_key(key: object, prefix: Sequence[str], source: str | None) -> list[str]:
    where = ".".join(prefix) or None
    if not isinstance(key, str):
        raise ConfigError(f"key {key!r} is not a string", key=where, source=source)
    parts = key.split(".")
    if any(not part.strip() for part in parts):
        raise ConfigError(f"key {key!r} has an empty segment", key=where, source=source)
    return parts


def _put(
    tree: dict[str, Any],
    model: type[BaseModel] | None,
    prefix: list[str],
    parts: Sequence[str],
    value: Any,
    *,
    replace: bool,
    source: str | None,
    root: type[BaseModel],
) -> None:
    """Set ``value`` at ``prefix + parts`` inside ``tree`` (which sits at ``prefix``). ``model`` is the
    section at ``prefix`` (``None``: an open mapping) and ``root`` the whole configuration's (for the
    did-you-mean); ``replace=False`` (a file) refuses a key set twice."""
    head, rest = parts[0], parts[1:]
    path = [*prefix, head]
    dotted = ".".join(path)
    sub_model: type[BaseModel] | None = None
    free = model is None
    if model is not None:
        info = model.model_fields.get(head)
        if info is None and not (issubclass(model, Section) and model.takes_key(head)):
            raise _unknown_key(path, model, root, source)
        sub_model = model_in(info.annotation) if info is not None else None
        free = _is_free_mapping(info.annotation) if info is not None else True  # a taken key's value is open
        if rest and sub_model is None and not free and not isinstance(tree.get(head), (list, tuple)):
            raise ConfigError(
                f"{dotted} is a single value, it has no key {rest[0]!r}",
                key=".".join([*path, *rest[:1]]),
                source=source,
            )
    if rest:
        current = tree.get(head, _MISSING)
        # Inside an open mapping, a digit segment indexes a list; a mapping's own "0" key stays a key.
        indexed = model is None and _is_index(rest[0]) and not isinstance(current, dict)
        if isinstance(current, (list, tuple)) or indexed:
            tree[head] = _put_item(current, path, rest, value, replace=replace, source=source, root=root)
            return
        if current is _MISSING or (replace and not isinstance(current, dict)):
            current = tree[head] = {}
        elif not isinstance(current, dict):
            raise ConfigError(
                f"{dotted} is already set to {current!r}, so it cannot also take the key {rest[0]!r}",
                key=".".join([*path, *rest[:1]]),
                source=source,
            )
        _put(current, sub_model, path, rest, value, replace=replace, source=source, root=root)
        return
    descend = sub_model is not None or (free and model is not None)
    if descend and isinstance(value, Mapping):
        # Sections and open mappings are merged key by key, so dotted and nested forms can mix.
        target = tree.get(head, _MISSING)
        if replace or not isinstance(target, dict):
            if target is not _MISSING and not replace:
                raise ConfigError("given twice", key=dotted, source=source)
            target = tree[head] = {}
        for key, item in value.items():
            if sub_model is None:
                # Keys inside an open mapping (a parameter named "a.b") are kept verbatim.
                if not isinstance(key, str):
                    raise ConfigError(f"key {key!r} is not a string", key=dotted, source=source)
                if key in target and not replace:
                    raise ConfigError("given twice", key=f"{dotted}.{key}", source=source)
                target[key] = item
            else:
                split = _split_key(key, path, source)
                _put(target, sub_model, path, split, item, replace=replace, source=source, root=root)
        return
    if head in tree and not replace:
        raise ConfigError("given twice", key=dotted, source=source)
    tree[head] = value


def _is_index(segment: str) -> bool:
    """Whether a key segment is a list index (``components.0.weight``): digits only."""
    return segment.isascii() and segment.isdigit()


def _put_item(
    current: Any,
    path: Sequence[str],
    parts: Sequence[str],
    value: Any,
    *,
    replace: bool,
    source: str | None,
    root: type[BaseModel],
) -> Any:
    """A copy of ``current`` (the list at ``path``) with ``value`` set at ``parts``, whose first
    segment indexes it; a dict inside it is an open mapping (the model validates its keys)."""
    dotted = ".".join(path)
    head, rest = parts[0], parts[1:]
    key = f"{dotted}.{head}"
    if not isinstance(current, (list, tuple)):
        what = "is not set" if current is _MISSING else f"is {current!r}, not a list"
        raise ConfigError(f"{dotted} {what}, so it has no index {head}", key=key, source=source)
    if not _is_index(head):
        raise ConfigError(
            f"{dotted} is a list; index it with 0 to {len(current) - 1} ({dotted}.0), not {head!r}",
            key=key,
            source=source,
        )
    index = int(head)
    if index >= len(current):
        held = f"indices 0 to {len(current) - 1}" if current else "no items"
        raise ConfigError(
            f"index {index} is out of range: {dotted} has {len(current)} item(s) ({held})",
            key=key,
            source=source,
        )
    items = list(current)
    if not rest:
        items[index] = value
        return items
    item = items[index]
    if isinstance(item, (list, tuple)):
        items[index] = _put_item(item, [*path, head], rest, value, replace=replace, source=source, root=root)
    elif isinstance(item, dict):
        copy = dict(item)
        _put(copy, None, [*path, head], rest, value, replace=replace, source=source, root=root)
        items[index] = copy
    else:
        raise ConfigError(
            f"{key} is {item!r}, a single value, so it has no key {rest[0]!r}",
            key=f"{key}.{rest[0]}",
            source=source,
        )
    return items


def nest(raw: object, source: str | None, root: type[BaseModel]) -> dict[str, Any]:
    """A raw mapping with dotted and nested keys as one nested tree of known keys."""
    if not isinstance(raw, Mapping | None):
        raise ConfigError(f"the top level must be a mapping of keys, got {type(raw).__name__}", source=source)
    tree: dict[str, Any] = {}
    for key, value in (raw or {}).items():
        _put(tree, root, [], _split_key(key, [], source), value, replace=False, source=source, root=root)
    return tree


def parse_override(text: str) -> tuple[str, Any]:
    """Split ``key=value`` and read the value as YAML (``8`` -> int, ``{a: 1}`` -> dict, ``x`` -> str)."""
    source = f"override {text!r}"
    key, sep, raw_value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError("expected key=value, e.g. rl.group_size=8", source=source)
    if any(char.isspace() for char in key):
        raise ConfigError(f"key {key!r} contains whitespace", source=source)
    try:
        value = yaml.load(raw_value, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as error:
        raise ConfigError(
            f"value is not a YAML scalar or flow collection: {error}", key=key, source=source
        ) from error
    return key, value


# Reading files.


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses duplicate keys instead of keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, _value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_file(path: Path) -> object:
    """The raw content of a YAML or TOML configuration file (a YAML key given twice is an error)."""
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise ConfigError(
            f"unsupported config format {suffix or '(no suffix)'!r}; use .yaml, .yml or .toml",
            source=str(path),
        )
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("config file not found", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config file: {error}", source=str(path)) from error
    if suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"invalid TOML: {error}", source=str(path)) from error
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as error:
        raise ConfigError(f"invalid YAML: {error}", source=str(path)) from error


def resolve_paths(tree: dict[str, Any], base: Path, path_keys: Sequence[tuple[str, ...]]) -> None:
    """Make the non-blank strings at ``path_keys`` in ``tree`` absolute against ``base`` (``~`` expanded)."""
    for keys in path_keys:
        node: Any = tree
        for key in keys[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(keys[-1]), str) and node[keys[-1]].strip():
            value = Path(os.path.expanduser(node[keys[-1]]))
            node[keys[-1]] = str(value if value.is_absolute() else (base / value))


# Validation errors in the user's words.


def _dotted_loc(loc: Sequence[int | str], root: type[BaseModel]) -> str:
    """A pydantic error location as the user's dotted key (union member tags dropped)."""
    parts: list[str] = []
    model: type[BaseModel] | None = root
    free = False
    for item in loc:
        if free:
            parts.append(str(item))
            continue
        if model is not None and isinstance(item, str) and item in model.model_fields:
            info = model.model_fields[item]
            parts.append(item)
            free = _is_free_mapping(info.annotation) and model_in(info.annotation) is None
            model = model_in(info.annotation)
        # Anything else is a union member tag such as 'str' or 'RewardSelection': not a user key.
    return ".".join(parts) or "(top level)"


def _section_at(loc: Sequence[int | str], root: type[BaseModel]) -> type[BaseModel] | None:
    """The section model at ``loc``, following ``dict[str, Model]`` values; ``None`` if free."""
    model: type[BaseModel] | None = root
    values: type[BaseModel] | None = None
    for item in loc:
        if values is not None:
            model, values = values, None
            continue
        if model is None or not isinstance(item, str) or item not in model.model_fields:
            if model is not None and isinstance(item, str) and item[:1].isupper():
                continue  # a union member tag
            return None
        annotation = model.model_fields[item].annotation
        model = model_in(annotation)
        # The section model of the values of a ``dict[str, Model]`` field (``allow.providers``).
        values = model_in(typing.get_args(annotation)[-1]) if typing.get_origin(annotation) is dict else None
    return None if values is not None else model


def _describe(error: Mapping[str, Any], root: type[BaseModel], prefix: Sequence[str]) -> str:
    if error["type"] == "extra_forbidden":
        parent = _section_at(error["loc"][:-1], root)
        if parent is not None:
            wrong = str(error["loc"][-1])
            close = nearest(wrong, parent.model_fields)
            hint = f"; did you mean {close}?" if close is not None else ""
            return f"unknown key {wrong!r}{hint} (known keys: {', '.join(parent.model_fields)})"
    message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if error["type"] == "missing":
        parent = _section_at(error["loc"][:-1], root)
        hints = parent.MISSING_HINTS if parent is not None and issubclass(parent, Section) else {}
        return "required key is missing" + hints.get(str(error["loc"][-1]), "")
    if error["type"] not in ("value_error", "assertion_error") and "input" in error:
        shown = repr(error["input"])
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        message = f"{message} (got {shown})"
    return message


def validation_error(
    error: ValidationError, source: str | None, root: type[BaseModel], prefix: Sequence[str] = ()
) -> ConfigError:
    """``error`` of validating ``root`` (the whole configuration, or the section at ``prefix``) in the
    user's words, each problem under its dotted key."""
    by_key: dict[str, list[str]] = {}
    for item in error.errors():
        key = (
            ".".join([*prefix, _dotted_loc(item["loc"], root)]) if prefix else _dotted_loc(item["loc"], root)
        )
        text = _describe(item, root, prefix)
        if text not in by_key.setdefault(key, []):
            by_key[key].append(text)
    if len(by_key) == 1:
        key, texts = next(iter(by_key.items()))
        return ConfigError(" | ".join(texts), key=key, source=source)
    lines = [f"{key}: {' | '.join(texts)}" for key, texts in by_key.items()]
    return ConfigError("invalid configuration:\n  " + "\n  ".join(lines), source=source)


def _drop_same_key(tree: dict[str, Any], parts: Sequence[str], root: type[BaseModel]) -> None:
    """Before an override sets one name of a key with several (``Section.SAME_KEY``), drop the file's
    value under every name of it, so the override replaces it whichever name the file used."""
    section, name = tuple(parts[:-1]), parts[-1]
    model = _section_at(section, root) if section else None
    group = next((names for names in getattr(model, "SAME_KEY", ()) if name in names), None)
    if group is None:
        return
    node: Any = tree
    for key in section:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict):
        for other in group:
            node.pop(other, None)


def apply_override(tree: dict[str, Any], text: str, root: type[BaseModel]) -> None:
    """Apply the command-line override ``text`` (``key=value``) to ``tree``, the nested configuration
    of ``root``: the value replaces whatever the file held at that key."""
    key, value = parse_override(text)
    origin = f"override {text!r}"
    parts = _split_key(key, [], origin)
    _drop_same_key(tree, parts, root)
    _put(tree, root, [], parts, value, replace=True, source=origin, root=root)
