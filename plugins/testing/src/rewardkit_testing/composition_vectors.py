"""The shared composition vectors and the checker every composition implementation runs them with.

``testdata/reward_vectors.json`` pins the composition rules (floor, weights, onError, clip,
finiteness): the in-process ``compose``, the Reward Service and the Ray path each pass their own
``compose_fn(spec_dict, components_dict) -> {"total", "gated", "breakdown"}`` (plain JSON, or it
raises) to ``check_vector``, so a mismatch is a test failure, not a silent difference in rewards.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rewardkit import compose

ComposeFn = Callable[[dict[str, Any], dict[str, Any]], Mapping[str, Any]]

VECTORS_ENV = "REWARDKIT_REWARD_VECTORS"
SUPPORTED_VERSION = 1
TOLERANCE = 1e-12
_OUTCOMES = ("expect", "expect_error", "expect_spec_error")
_CASE_KEYS = frozenset(("name", "description", "rules", "spec", "components", *_OUTCOMES))
_EXPECT_KEYS = frozenset(("total", "gated", "breakdown"))


class VectorMismatch(AssertionError):
    """An implementation disagreed with a vector; the message names the case and every difference."""


def default_vectors_path() -> Path:
    """``$REWARDKIT_REWARD_VECTORS`` if set, else ``testdata/reward_vectors.json`` of this checkout."""
    # this file is plugins/testing/src/rewardkit_testing/composition_vectors.py of the checkout
    in_checkout = Path(__file__).resolve().parents[4] / "testdata" / "reward_vectors.json"
    return Path(os.environ.get(VECTORS_ENV) or in_checkout)


def load_reward_vectors(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Read and check the vector file; return its cases in file order. Raises ``FileNotFoundError``
    saying where it looked, and ``ValueError`` naming the case and key of a malformed file."""
    where = Path(path) if path is not None else default_vectors_path()
    if not where.is_file():
        raise FileNotFoundError(
            f"reward vectors not found at {where}; they live in testdata/reward_vectors.json of the "
            f"rewardkit repository (set {VECTORS_ENV} to point elsewhere)"
        )
    try:
        document = json.loads(where.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: not valid JSON: {error}") from None
    if not isinstance(document, dict) or document.get("version") != SUPPORTED_VERSION:
        raise ValueError(f'{where}: expected an object with "version": {SUPPORTED_VERSION} and "cases"')
    cases = document.get("cases")
    if not isinstance(cases, list) or not cases:
        raise ValueError(f'{where}: "cases" must be a non-empty list')
    seen: set[str] = set()
    for index, case in enumerate(cases):
        _check_case_shape(case, f"{where}: cases[{index}]")
        if case["name"] in seen:
            raise ValueError(f"{where}: cases[{index}]: duplicate case name {case['name']!r}")
        seen.add(case["name"])
    return cases


def _check_case_shape(case: object, where: str) -> None:
    if not isinstance(case, dict):
        raise ValueError(f"{where}: a case must be an object")
    name = case.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f'{where}: "name" must be a non-empty string')
    where = f"{where} ({name!r})"
    unknown = sorted(set(case) - _CASE_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; known: {sorted(_CASE_KEYS)}")
    for key in ("description", "spec", "components"):
        if key not in case:
            raise ValueError(f"{where}: missing {key!r}")
    if not isinstance(case["description"], str) or not case["description"].strip():
        raise ValueError(f'{where}: "description" must say what the case pins')
    if not isinstance(case["components"], dict):
        raise ValueError(f'{where}: "components" must be an object of component name -> outcome')
    outcomes = [key for key in _OUTCOMES if key in case]
    if len(outcomes) != 1:
        raise ValueError(f"{where}: give exactly one of {list(_OUTCOMES)}, got {outcomes}")
    if "expect" in case:
        expect = case["expect"]
        if not isinstance(expect, dict) or not {"total", "gated"} <= set(expect) <= _EXPECT_KEYS:
            raise ValueError(f'{where}: "expect" needs "total" and "gated" (and optionally "breakdown")')
    else:
        needle = case[outcomes[0]]
        if not isinstance(needle, str) or not needle:
            raise ValueError(f"{where}: {outcomes[0]!r} must be a non-empty message substring")


def check_vector(case: Mapping[str, Any], compose_fn: ComposeFn) -> None:
    """Run one case through ``compose_fn``; raise ``VectorMismatch`` describing every difference. Error
    substrings match case-insensitively (other implementations need only keep a message's key words);
    numbers compare within ``1e-12`` (absolute or relative)."""
    name = case["name"]
    spec = json.loads(json.dumps(case["spec"]))  # a private copy: an implementation may not mutate the vector
    components = json.loads(json.dumps(case["components"]))
    needle = case.get("expect_error") or case.get("expect_spec_error")
    try:
        got = compose_fn(spec, components)
    except Exception as error:
        raised = f"{type(error).__name__}: {error}"
        if needle is None:
            raise VectorMismatch(f"case {name!r}: expected a result, but it raised {raised}") from error
        if needle.casefold() not in str(error).casefold():
            raise VectorMismatch(
                f"case {name!r}: raised as expected, but the message does not contain {needle!r}: {raised}"
            ) from error
        return
    if needle is not None:
        raise VectorMismatch(f"case {name!r}: expected an error containing {needle!r}, got {dict(got)!r}")
    expect = case["expect"]
    problems: list[str] = []
    if not isinstance(got, Mapping) or not {"total", "gated", "breakdown"} <= set(got):
        raise VectorMismatch(f"case {name!r}: the result must have total, gated and breakdown, got {got!r}")
    if not _same(expect["total"], got["total"]):
        problems.append(f"total: expected {expect['total']!r}, got {got['total']!r}")
    if got["gated"] is not expect["gated"]:
        problems.append(f"gated: expected {expect['gated']!r}, got {got['gated']!r}")
    breakdown = got["breakdown"]
    names = [c.get("name") or c.get("provider") for c in spec.get("components", [])]
    if not isinstance(breakdown, Mapping) or sorted(breakdown) != sorted(names):
        problems.append(f"breakdown must have exactly the components {sorted(names)}, got {breakdown!r}")
    else:
        for component, wanted in expect.get("breakdown", {}).items():
            entry = breakdown.get(component)
            for key, value in wanted.items():
                if not isinstance(entry, Mapping) or key not in entry:
                    problems.append(f"breakdown[{component!r}] has no {key!r}")
                elif not _same(value, entry[key]):
                    problems.append(
                        f"breakdown[{component!r}][{key!r}]: expected {value!r}, got {entry[key]!r}"
                    )
    if problems:
        raise VectorMismatch(f"case {name!r}: " + "; ".join(problems))


def _same(expected: object, got: object) -> bool:
    # null, true and false match only themselves: 0 is not null and 1 is not true.
    if expected is None or isinstance(expected, bool) or got is None or isinstance(got, bool):
        return expected is got
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(expected, got, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    return expected == got


def in_process_compose(spec: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """The in-process implementation as a ``compose_fn`` (the reference the others are checked with)."""
    return compose(spec, components).to_json()


__all__ = [
    "VECTORS_ENV",
    "ComposeFn",
    "VectorMismatch",
    "check_vector",
    "default_vectors_path",
    "in_process_compose",
    "load_reward_vectors",
]
