"""The data contract: prompt rows and rollouts, mapped onto the canonical ``prompt`` and ``reference``.

Column names are the customer's; ``rl.data.prompt_column`` and ``rl.data.reference_column`` (also
spelt ``response_column``: it names the gold reference, not the model's response) map them onto the
framework's ``prompt`` and opaque ``reference``. Rows that already hold fields named ``prompt`` and
``reference`` need no mapping: those are the defaults, read where present and required only when the
provider needs them. A column mapped under another name must be on every row (a misspelt mapping
is an error listing the row's columns, not an input silently left out). rewardkit checks that the
values are present, non-null when the provider needs them, and JSON-compatible; it never
interprets them.

* A local JSONL file keeps only the mapped fields: anything else a provider needs must live inside
  the structured reference.
* A Hugging Face ``datasets`` source (a folder written by ``Dataset.save_to_disk`` or a local data
  file, never the hub) may rewrite row values with ``rl.data.items_fn`` before mapping, but must keep
  each row's keys; its unmapped columns are kept in ``PreparedRow.representations``.
* A job may keep further columns of every row (``keep``: checkpoint evaluation's record id and
  cluster), in ``PreparedRow.kept``; they must be on every row, whichever the source.
* ``checkpoints.prompts`` is a data section of the same shape (``PromptsConfig``); errors name the
  keys of the section read.
* Rollouts (the input of ``rewardkit score``) are JSONL rows with ``group_id``, optional
  ``trajectory_id``, the mapped prompt/reference columns, ``completion`` and optionally
  ``completion_token_count`` and ``finish_reason``. Rows of one group need not be adjacent: they
  are grouped by ``group_id`` in order of first appearance, candidates in file order.

Every violation raises ``DataError`` naming the file, the row and the column.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rewardkit.config import DataConfig
from rewardkit.errors import DataError
from rewardkit.frozen import NotJSONError, freeze, strictly_equal
from rewardkit.plugins import import_module_attribute

__all__ = [
    "CANONICAL_ROLLOUT_KEYS",
    "PreparedRow",
    "RolloutGroup",
    "check_group_sizes",
    "iter_rollout_groups",
    "load_prompt_rows",
    "parse_json_line",
    "read_rollouts",
]

CANONICAL_ROLLOUT_KEYS: tuple[str, ...] = (
    "group_id",
    "trajectory_id",
    "completion",
    "prompt",
    "reference",
    "completion_token_count",
    "finish_reason",
)
# Local data files ``datasets`` reads with a packaged builder (no hub access needed).
_HF_BUILDERS = {
    ".json": "json",
    ".jsonl": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".arrow": "arrow",
    ".txt": "text",
}


@dataclass(frozen=True, slots=True)
class PreparedRow:
    """One prompt row in canonical form.

    ``index`` is the row's 0-based position in the source (blank JSONL lines not counted).
    ``prompt`` and ``reference`` are JSON values (``reference`` is ``None`` when not mapped).
    ``representations`` holds a datasets row's unmapped columns as they were (empty for JSONL).
    ``kept`` holds the columns the caller asked to keep (``keep``), by column name, for either source.
    """

    index: int
    prompt: Any
    reference: Any = None
    representations: Mapping[str, Any] = field(default_factory=dict)
    kept: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RolloutGroup:
    """Every rollout of one group, in file order; ``first_row`` is the line where the group first appears."""

    group_id: str
    rollouts: tuple[dict[str, Any], ...]
    first_row: int


# --------------------------------------------------------------------------------------------
# Shared checks.


def _check_needs(needs: Sequence[str], path: str | None) -> frozenset[str]:
    if isinstance(needs, str):
        raise TypeError(f"needs must be a sequence of names such as ('prompt', 'reference'), not {needs!r}")
    unknown = sorted(set(needs) - {"prompt", "reference"})
    if unknown:
        raise DataError(
            f"unknown needs {unknown}; a provider may need 'prompt' and/or 'reference'", path=path
        )
    return frozenset(needs)


def reference_column_of(response_column: str | None) -> str:
    """The column read as the reference: the mapped one, else the field named ``reference``."""
    return response_column if response_column is not None else "reference"


# The key (in its data section) that maps each canonical input, named in errors about its column.
_KEYS = {"prompt": "prompt_column", "reference": "reference_column"}


def _json_value(value: Any, *, path: str | None, row: int, column: str, label: str) -> Any:
    """``value`` if it is JSON-compatible (finite numbers, string keys), else a ``DataError`` saying where."""
    try:
        freeze(value, "$")
    except NotJSONError as error:
        raise DataError(
            f"value is not JSON-compatible at {error.path}: {error.reason}",
            path=path,
            row=row,
            column=column,
            row_label=label,
        ) from None
    except RecursionError:
        raise DataError(
            "value is nested too deeply to use", path=path, row=row, column=column, row_label=label
        ) from None
    return value


def _missing_column(canonical: str, column: str, holder: str, shown: str, section: str = "rl.data") -> str:
    """Why ``holder`` (a line, a row, the dataset) lacks ``column``, naming the key that maps it."""
    key = f"{section}.{_KEYS[canonical]}"
    if column == canonical:
        return (
            f"missing {canonical} column {column!r}: {key} is not set, so the {canonical} is read from "
            f"a column named {column!r}, which {holder} does not have (columns: {shown}). Set {key} "
            f"to the column that holds the {canonical}"
        )
    return f"missing {canonical} column {column!r}, mapped by {key} ({holder} has columns: {shown})"


def _mapped(
    record: Mapping[str, Any],
    column: str,
    *,
    needed: bool,
    path: str | None,
    row: int,
    label: str,
    canonical: str,
    section: str = "rl.data",
) -> Any:
    """The value of ``column`` as the ``canonical`` input, or ``None`` when it may be left out.

    The column must be on the row when the provider needs the input, or when the user mapped it
    (a name other than the canonical one); a null value is an error only when needed.
    """
    if column not in record:
        if not needed and column == canonical:
            return None
        shown = ", ".join(sorted(map(str, record))) or "(none)"
        raise DataError(
            _missing_column(canonical, column, f"the {label}", shown, section),
            path=path,
            row=row,
            column=column,
            row_label=label,
        )
    value = record[column]
    if value is None and needed:
        raise DataError(f"the {canonical} is null", path=path, row=row, column=column, row_label=label)
    return _json_value(value, path=path, row=row, column=column, label=label)


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for each non-blank line; a bad line is a ``DataError`` naming it."""
    where = str(path)
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("file not found", path=where) from None
    except OSError as error:
        raise DataError(f"cannot open: {error}", path=where) from error
    with handle:
        line_number = 0
        while True:
            try:
                line = handle.readline()
            except UnicodeDecodeError as error:
                raise DataError(f"not UTF-8 text: {error}", path=where, row=line_number + 1) from error
            if not line:
                return
            line_number += 1
            if not line.strip():
                continue
            yield line_number, parse_json_line(line, where, line_number)


class _NonJSONConstant(ValueError):
    pass


_fast_loads: Callable[[str | bytes], Any] | None
try:  # a C parser ~3x faster than json's on rollout rows; json decides whatever it refuses
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - orjson comes with rewardkit-service
    _fast_loads = None


def parse_json_line(line: str | bytes, where: str, line_number: int) -> dict[str, Any]:
    """One JSONL line as an object, or a ``DataError`` naming the line: invalid JSON, NaN or
    Infinity, an integer of more digits than Python converts (4300), nesting too deep to read."""
    if _fast_loads is not None:
        try:
            record = _fast_loads(line)
        except ValueError:
            record = _slow_loads(line, where, line_number)  # big integers, or to word the error
    else:
        record = _slow_loads(line, where, line_number)
    if not isinstance(record, dict):
        raise DataError(f"expected a JSON object, got {type(record).__name__}", path=where, row=line_number)
    return record


def _slow_loads(line: str | bytes, where: str, line_number: int) -> Any:
    try:
        return json.loads(line, parse_constant=_reject_constant)
    except (json.JSONDecodeError, _NonJSONConstant) as error:
        raise DataError(f"not valid JSON: {error}", path=where, row=line_number) from None
    except RecursionError:
        raise DataError("not readable: the JSON is nested too deeply", path=where, row=line_number) from None
    except UnicodeDecodeError as error:
        raise DataError(f"not UTF-8 text: {error}", path=where, row=line_number) from None
    except ValueError as error:  # e.g. an integer longer than 4300 digits
        raise DataError(f"not readable: {error}", path=where, row=line_number) from None


def _reject_constant(name: str) -> float:
    # Python's json accepts NaN/Infinity; JSON does not, and a NaN reference would poison scoring.
    raise _NonJSONConstant(f"{name} is not a JSON value")


# --------------------------------------------------------------------------------------------
# Prompt rows.


def load_prompt_rows(
    data: DataConfig, needs: Sequence[str] = ("prompt",), *, keep: Mapping[str, str] | None = None
) -> list[PreparedRow]:
    """Read ``rl.data`` (or another data section, ``checkpoints.prompts``) into canonical rows,
    checking what ``needs`` requires.

    The prompt column is required on every row. The reference column (``rl.data.reference_column``,
    else ``reference``) is required and non-null on every row when ``"reference"`` is in ``needs``;
    otherwise a mapped one must be on every row, and an unmapped ``reference`` is read where present.
    ``keep`` maps further columns to keep (in ``PreparedRow.kept``) to the key that names each; they
    must be on every row and hold JSON values.
    """
    if data.path is None:
        raise DataError(f"{data.SECTION}.path is not set; point it at a JSONL file or a datasets folder/file")
    wanted = _check_needs(needs, data.path)
    kept = dict(keep or {})
    rows = _jsonl_rows(data, wanted, kept) if data.source == "jsonl" else _hf_rows(data, wanted, kept)
    if not rows:
        raise DataError("no rows: the data source is empty", path=data.path)
    return rows


def _prompt_and_reference(
    record: Mapping[str, Any], data: DataConfig, needs: frozenset[str], where: str, row: int, label: str
) -> tuple[Any, Any]:
    """The prompt (always required) and the reference (required when needed or mapped, else
    read when the row has a ``reference`` field)."""
    prompt = _mapped(
        record,
        data.prompt_column,
        needed=True,
        path=where,
        row=row,
        label=label,
        canonical="prompt",
        section=data.SECTION,
    )
    reference = _mapped(
        record,
        reference_column_of(data.response_column),
        needed="reference" in needs,
        path=where,
        row=row,
        label=label,
        canonical="reference",
        section=data.SECTION,
    )
    return prompt, reference


def _kept(
    record: Mapping[str, Any], keep: Mapping[str, str], where: str, row: int, label: str
) -> dict[str, Any]:
    """The values of the columns in ``keep`` (column -> the key naming it), each required."""
    values: dict[str, Any] = {}
    for column, key in keep.items():
        if column not in record:
            shown = ", ".join(sorted(map(str, record))) or "(none)"
            raise DataError(
                f"missing column {column!r}, named by {key} (the {label} has columns: {shown})",
                path=where,
                row=row,
                column=column,
                row_label=label,
            )
        values[column] = _json_value(record[column], path=where, row=row, column=column, label=label)
    return values


def _jsonl_rows(data: DataConfig, needs: frozenset[str], keep: Mapping[str, str]) -> list[PreparedRow]:
    path = Path(data.path or "")
    where = str(path)
    rows: list[PreparedRow] = []
    for line, record in _json_lines(path):
        prompt, reference = _prompt_and_reference(record, data, needs, where, line, "line")
        kept = _kept(record, keep, where, line, "line")
        rows.append(PreparedRow(index=len(rows), prompt=prompt, reference=reference, kept=kept))
    return rows


def _import_datasets(section: str = "rl.data") -> Any:
    try:
        import datasets
    except ImportError as error:
        raise DataError(f"{section}.source: hf needs the 'datasets' library: pip install datasets") from error
    return datasets


def _open_dataset(data: DataConfig) -> Any:
    """The ``datasets.Dataset`` that ``rl.data`` names, read from local disk only."""
    datasets = _import_datasets(data.SECTION)
    path = Path(data.path or "")
    where = str(path)
    if path.is_dir():
        try:
            loaded = datasets.load_from_disk(where)
        except (FileNotFoundError, ValueError) as error:
            raise DataError(f"not a folder written by Dataset.save_to_disk: {error}", path=where) from error
    elif path.is_file():
        builder = _HF_BUILDERS.get(path.suffix.lower())
        if builder is None:
            known = ", ".join(sorted(_HF_BUILDERS))
            raise DataError(
                f"cannot read {path.suffix or 'a file without suffix'!r} with datasets; use {known}",
                path=where,
            )
        try:
            loaded = datasets.load_dataset(builder, data_files=where, split=data.split or "train")
        except Exception as error:
            raise DataError(f"datasets could not read the file: {error}", path=where) from error
        return loaded
    else:
        raise DataError("file or folder not found", path=where)
    if isinstance(loaded, datasets.DatasetDict):
        splits = sorted(loaded)
        if data.split is None:
            if len(splits) != 1:
                raise DataError(
                    f"the folder holds splits {splits}; choose one with {data.SECTION}.split", path=where
                )
            return loaded[splits[0]]
        if data.split not in loaded:
            raise DataError(f"no split {data.split!r}; the folder holds {splits}", path=where)
        return loaded[data.split]
    if data.split is not None:
        raise DataError(
            f"{data.SECTION}.split is {data.split!r} but the folder holds one dataset, not splits",
            path=where,
        )
    return loaded


def _items_fn(dotted: str, section: str = "rl.data") -> Callable[[dict[str, Any]], Mapping[str, Any]]:
    try:
        function = import_module_attribute(dotted)
    except (ImportError, AttributeError, ValueError) as error:
        raise DataError(f"{section}.items_fn {dotted!r} cannot be imported: {error}") from error
    if not callable(function):
        raise DataError(f"{section}.items_fn {dotted!r} is not callable")
    return function


def _apply_items_fn(
    function: Callable[[dict[str, Any]], Mapping[str, Any]],
    dotted: str,
    row: dict[str, Any],
    index: int,
    where: str,
    section: str = "rl.data",
) -> dict[str, Any]:
    try:
        rewritten = function(dict(row))
    except Exception as error:
        raise DataError(
            f"{section}.items_fn {dotted!r} raised {error!r}", path=where, row=index, row_label="row"
        ) from error
    if not isinstance(rewritten, Mapping):
        raise DataError(
            f"{section}.items_fn {dotted!r} returned {type(rewritten).__name__}, not a row mapping",
            path=where,
            row=index,
            row_label="row",
        )
    added = sorted(set(rewritten) - set(row))
    removed = sorted(set(row) - set(rewritten))
    if added or removed:
        raise DataError(
            f"{section}.items_fn {dotted!r} must keep the row's keys; it added {added} and removed "
            f"{removed}. Rewrite values only; map columns with {section}.prompt_column/reference_column",
            path=where,
            row=index,
            row_label="row",
        )
    return dict(rewritten)


def _hf_rows(data: DataConfig, needs: frozenset[str], keep: Mapping[str, str]) -> list[PreparedRow]:
    dataset = _open_dataset(data)
    where = str(data.path)
    columns = list(dataset.column_names)
    shown = ", ".join(map(str, columns)) or "(none)"
    reference_column = reference_column_of(data.response_column)
    for column, canonical, needed in (
        (data.prompt_column, "prompt", True),
        (reference_column, "reference", "reference" in needs),
    ):
        if (needed or column != canonical) and column not in columns:
            raise DataError(
                _missing_column(canonical, column, "the dataset", shown, data.SECTION),
                path=where,
                column=column,
            )
    for column, key in keep.items():
        if column not in columns:
            raise DataError(
                f"missing column {column!r}, named by {key} (the dataset has columns: {shown})",
                path=where,
                column=column,
            )
    function = _items_fn(data.items_fn, data.SECTION) if data.items_fn else None
    mapped = {data.prompt_column} | ({reference_column} & set(columns))
    rows: list[PreparedRow] = []
    for index, raw in enumerate(dataset):
        record = (
            _apply_items_fn(function, data.items_fn or "", raw, index, where, data.SECTION)
            if function
            else raw
        )
        prompt, reference = _prompt_and_reference(record, data, needs, where, index, "row")
        representations = {key: value for key, value in record.items() if key not in mapped}
        rows.append(
            PreparedRow(
                index=index,
                prompt=prompt,
                reference=reference,
                representations=representations,
                kept=_kept(record, keep, where, index, "row"),
            )
        )
    return rows


# --------------------------------------------------------------------------------------------
# Rollouts.


def _identifier(record: Mapping[str, Any], key: str, *, where: str, line: int) -> str | None:
    """A group or trajectory id: a non-empty string, or an integer (read as its decimal string)."""
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataError(
            f"{key} must be a string (or an integer), got {type(value).__name__} {value!r}",
            path=where,
            row=line,
            column=key,
        )
    text = str(value)
    if not text.strip():
        raise DataError(f"{key} is empty", path=where, row=line, column=key)
    return text


def _optional_fields(record: Mapping[str, Any], out: dict[str, Any], *, where: str, line: int) -> None:
    count = record.get("completion_token_count")
    if count is not None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise DataError(
                f"completion_token_count must be a non-negative integer, got {count!r}",
                path=where,
                row=line,
                column="completion_token_count",
            )
        out["completion_token_count"] = count
    reason = record.get("finish_reason")
    if reason is not None:
        if not isinstance(reason, str):
            raise DataError(
                f"finish_reason must be a string such as 'stop' or 'length', got {reason!r}",
                path=where,
                row=line,
                column="finish_reason",
            )
        out["finish_reason"] = reason


def read_rollouts(
    path: str | Path,
    *,
    prompt_column: str = "prompt",
    response_column: str | None = None,
    needs: Sequence[str] = (),
) -> list[RolloutGroup]:
    """Read a rollouts JSONL file into groups, in order of each group's first appearance.

    Each rollout dict holds the canonical keys present (``group_id``, ``trajectory_id``,
    ``completion``, ``prompt``, ``reference``, ``completion_token_count``, ``finish_reason``) plus
    ``row``, its 1-based line number. ``trajectory_id`` is kept when given and otherwise generated
    as ``f"{group_id}/{k}"`` with ``k`` the rollout's position in its group. ``response_column``
    ``None`` reads the reference from a ``reference`` field. The prompt and reference columns are
    required, non-null and equal across a group when in ``needs``; when not needed they are carried
    along if present (a column mapped under another name must still be on every row), and the
    prompt must still be one per group (a group whose rows carry different prompts is refused
    naming the line and column).
    """
    where = str(path)
    wanted = _check_needs(needs, where)
    reference_column = reference_column_of(response_column)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for line, record in _json_lines(Path(path)):
        group_id = _group_id(record, where, line)
        members = by_group.setdefault(group_id, [])
        members.append(
            _rollout(record, group_id, len(members), line, prompt_column, reference_column, wanted, where)
        )
    if not by_group:
        raise DataError("no rollouts: the file has no rows", path=where)
    groups = [
        RolloutGroup(group_id=group_id, rollouts=tuple(members), first_row=members[0]["row"])
        for group_id, members in by_group.items()
    ]
    for group in groups:
        _check_group(group, wanted, prompt_column, reference_column, where)
    return groups


def _group_id(record: Mapping[str, Any], where: str, line: int) -> str:
    group_id = _identifier(record, "group_id", where=where, line=line)
    if group_id is None:
        raise DataError(
            "missing group_id: every rollout row names its group", path=where, row=line, column="group_id"
        )
    return group_id


def _rollout(
    record: Mapping[str, Any],
    group_id: str,
    position: int,
    line: int,
    prompt_column: str,
    reference_column: str,
    wanted: frozenset[str],
    where: str,
) -> dict[str, Any]:
    """The canonical rollout of one row (the ``position``-th of its group), checked."""
    completion = record.get("completion")
    if not isinstance(completion, str):
        problem = "missing" if "completion" not in record else f"not a string ({type(completion).__name__})"
        raise DataError(f"completion is {problem}", path=where, row=line, column="completion")
    rollout: dict[str, Any] = {"group_id": group_id}
    given_id = _identifier(record, "trajectory_id", where=where, line=line)
    rollout["trajectory_id"] = given_id if given_id is not None else f"{group_id}/{position}"
    rollout["completion"] = completion
    for column, canonical in ((prompt_column, "prompt"), (reference_column, "reference")):
        value = _mapped(
            record,
            column,
            needed=canonical in wanted,
            path=where,
            row=line,
            label="line",
            canonical=canonical,
        )
        if value is not None:
            rollout[canonical] = value
    _optional_fields(record, rollout, where=where, line=line)
    rollout["row"] = line
    return rollout


# --------------------------------------------------------------------------------------------
# Rollouts, streamed: for jobs larger than memory.


class RestartGroups:
    """Yielded by ``iter_rollout_groups`` when it has to start again from the first group."""


RESTART = RestartGroups()


class _NotContiguous(Exception):
    pass


def iter_rollout_groups(
    path: str | Path,
    *,
    prompt_column: str = "prompt",
    response_column: str | None = None,
    needs: Sequence[str] = (),
    group_size: int | None = None,
) -> Iterator[tuple[RolloutGroup, bytes] | RestartGroups]:
    """``read_rollouts`` one group at a time, each with the SHA-256 of its rows' bytes.

    Groups come in order of first appearance with the same checks. A file whose groups are
    contiguous (every row of a group next to the others, the usual layout) is read in one pass
    holding one group at a time, plus the set of group ids seen. When a group turns out not to
    be contiguous (its id comes back, or with ``group_size`` it ends short), the reader yields
    ``RESTART`` and starts over with an index pass: file offsets of every row (8 bytes a row, 16
    with line numbers and groups) and the group sizes, checked before the first group is yielded;
    each group's rows are then read by offset. Groups yielded before a ``RESTART`` are void.
    """
    where = str(path)
    wanted = _check_needs(needs, where)
    if group_size is not None:
        check_group_sizes((), group_size, path=where)
    columns = (prompt_column, reference_column_of(response_column), wanted, where)
    try:
        yield from _contiguous_groups(Path(path), columns, group_size)
        return
    except _NotContiguous:
        pass
    yield RESTART
    yield from _indexed_groups(Path(path), columns, group_size)


def _lines(handle: IO[bytes], where: str) -> Iterator[tuple[int, int, bytes]]:
    """(1-based line number, byte offset, raw line) of each non-blank line."""
    offset = 0
    for number, raw in enumerate(handle, 1):
        start = offset
        offset += len(raw)
        if raw.strip():
            yield number, start, raw


def _open_rollouts(path: Path) -> IO[bytes]:
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise DataError("file not found", path=str(path)) from None
    except OSError as error:
        raise DataError(f"cannot open: {error}", path=str(path)) from error


def _finish_group(
    group_id: str, rows: list[dict[str, Any]], digest: Any, columns: tuple
) -> tuple[RolloutGroup, bytes]:
    prompt_column, reference_column, wanted, where = columns
    group = RolloutGroup(group_id=group_id, rollouts=tuple(rows), first_row=rows[0]["row"])
    _check_group(group, wanted, prompt_column, reference_column, where)
    return group, digest.digest()


def _contiguous_groups(
    path: Path, columns: tuple, group_size: int | None
) -> Iterator[tuple[RolloutGroup, bytes]]:
    prompt_column, reference_column, wanted, where = columns
    seen: set[str] = set()
    current: str | None = None
    rows: list[dict[str, Any]] = []
    digest = hashlib.sha256()
    with _open_rollouts(path) as handle:
        for line, _, raw in _lines(handle, where):
            record = parse_json_line(raw, where, line)
            group_id = _group_id(record, where, line)
            if group_id != current:
                if current is not None:
                    if group_size is not None and len(rows) != group_size:
                        raise _NotContiguous  # short: the rest may come later, or it is an error
                    yield _finish_group(current, rows, digest, columns)
                if group_id in seen:
                    raise _NotContiguous
                seen.add(group_id)
                current, rows, digest = group_id, [], hashlib.sha256()
            digest.update(raw)
            rows.append(
                _rollout(record, group_id, len(rows), line, prompt_column, reference_column, wanted, where)
            )
    if current is None:
        raise DataError("no rollouts: the file has no rows", path=where)
    if group_size is not None and len(rows) != group_size:
        raise _NotContiguous
    yield _finish_group(current, rows, digest, columns)


def _indexed_groups(
    path: Path, columns: tuple, group_size: int | None
) -> Iterator[tuple[RolloutGroup, bytes]]:
    prompt_column, reference_column, wanted, where = columns
    ids: dict[str, int] = {}
    row_group, row_line, row_offset = array("l"), array("l"), array("q")
    with _open_rollouts(path) as handle:
        for line, offset, raw in _lines(handle, where):
            group_id = _group_id(parse_json_line(raw, where, line), where, line)
            row_group.append(ids.setdefault(group_id, len(ids)))
            row_line.append(line)
            row_offset.append(offset)
    if not ids:
        raise DataError("no rollouts: the file has no rows", path=where)
    counts = array("l", bytes(array("l").itemsize * len(ids)))
    for index in row_group:
        counts[index] += 1
    starts = array("l", [0]) * len(ids)
    total = 0
    for index, count in enumerate(counts):
        starts[index] = total
        total += count
    order = array("l", bytes(array("l").itemsize * total))  # row numbers, grouped, in file order
    filled = array("l", starts)
    for row, index in enumerate(row_group):
        order[filled[index]] = row
        filled[index] += 1
    del row_group, filled
    names = list(ids)
    if group_size is not None:
        for index, count in enumerate(counts):
            if count != group_size:
                lines = [row_line[order[starts[index] + k]] for k in range(min(count, 8))]
                shown = ", ".join(map(str, lines)) + (", ..." if count > 8 else "")
                raise DataError(
                    f"group {names[index]!r} has {count} rollout(s) but rl.group_size is {group_size} "
                    f"(its rows: {shown})",
                    path=where,
                    row=lines[0],
                    column="group_id",
                )
    del ids
    with _open_rollouts(path) as handle:
        for index, group_id in enumerate(names):
            rows: list[dict[str, Any]] = []
            digest = hashlib.sha256()
            for k in range(counts[index]):
                row = order[starts[index] + k]
                handle.seek(row_offset[row])
                raw = handle.readline()
                line = row_line[row]
                digest.update(raw)
                record = parse_json_line(raw, where, line)
                rows.append(
                    _rollout(record, group_id, k, line, prompt_column, reference_column, wanted, where)
                )
            yield _finish_group(group_id, rows, digest, columns)


def _check_group(
    group: RolloutGroup,
    needs: frozenset[str],
    prompt_column: str,
    reference_column: str,
    where: str,
) -> None:
    """Unique trajectory ids and one common prompt/reference per group, named by row before scoring."""
    seen: dict[str, int] = {}
    for rollout in group.rollouts:
        previous = seen.setdefault(rollout["trajectory_id"], rollout["row"])
        if previous != rollout["row"]:
            raise DataError(
                f"trajectory_id {rollout['trajectory_id']!r} of group {group.group_id!r} "
                f"was already used on line {previous}",
                path=where,
                row=rollout["row"],
                column="trajectory_id",
            )
    for canonical, column in (("prompt", prompt_column), ("reference", reference_column)):
        # A GRPO group is one prompt: mixed prompts corrupt its advantages, whatever the provider
        # needs. A prompt that is not needed may be left out of a row, but not be another one.
        if canonical not in needs and canonical != "prompt":
            continue
        carrying = [rollout for rollout in group.rollouts if canonical in rollout]
        if not carrying:
            continue
        first = carrying[0]
        for rollout in carrying[1:]:
            if not strictly_equal(rollout[canonical], first[canonical]):
                raise DataError(
                    f"the {canonical} differs from the one on line {first['row']} of group "
                    f"{group.group_id!r}; a group shares one {canonical} "
                    "(types count: 1, 1.0 and true differ)",
                    path=where,
                    row=rollout["row"],
                    column=column,
                )


def check_group_sizes(
    groups: Iterable[RolloutGroup], group_size: int | None, *, path: str | None = None
) -> None:
    """Every group must hold exactly ``group_size`` rollouts (``rl.group_size``); ``None`` checks nothing."""
    if group_size is None:
        return
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise DataError(f"group size must be a positive integer, got {group_size!r}", path=path)
    for group in groups:
        size = len(group.rollouts)
        if size != group_size:
            rows = ", ".join(str(rollout["row"]) for rollout in group.rollouts[:8])
            more = ", ..." if size > 8 else ""
            raise DataError(
                f"group {group.group_id!r} has {size} rollout(s) but rl.group_size is {group_size} "
                f"(its rows: {rows}{more})",
                path=path,
                row=group.first_row,
                column="group_id",
            )
