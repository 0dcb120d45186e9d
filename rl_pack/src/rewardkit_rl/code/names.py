"""Which names the tests may take from the candidate, and which they must resolve themselves.

The test process builds the tests' namespace from three sources: the task's own code (trusted),
the test setup (imports), and the candidate's top-level names. A candidate that defined ``len``,
``set`` or a fake ``math`` would otherwise answer for the tests' own calls (``assert
set(f(x)) == set(y)`` with ``def set(v): return 0``). So the candidate provides only:

- the entry point (the reference's ``entry_point``; for MBPP-style asserts, which name none,
  every non-builtin function or class the tests call, or, when they call only builtins, the
  names the first test calls: MBPP task 126 is a function named ``sum``);
- other free names of the tests that are neither builtins, nor bound by the task's code or the
  setup, nor standard-library modules used as modules (``math.isclose``): those the test process
  imports itself, a clean copy, whatever the candidate imported or faked under that name.
"""

from __future__ import annotations

import ast
import builtins
import sys
from collections.abc import Iterable
from dataclasses import dataclass

_BUILTINS = frozenset(dir(builtins))
_STDLIB = frozenset(sys.stdlib_module_names)


@dataclass(frozen=True)
class _Usage:
    loaded: frozenset[str]
    bound: frozenset[str]
    called: tuple[str, ...]
    attribute_bases: frozenset[str]


def _usage(sources: Iterable[str]) -> _Usage:
    loaded: set[str] = set()
    bound: set[str] = set()
    called: list[str] = []
    bases: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Name):
                (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called.append(node.func.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                bases.add(node.value.id)
    return _Usage(frozenset(loaded), frozenset(bound), tuple(called), frozenset(bases))


@dataclass(frozen=True)
class NamePlan:
    """``expose``: names taken from the candidate; ``stdlib_imports``: modules the tests import."""

    expose: tuple[str, ...]
    stdlib_imports: tuple[str, ...]


def names_for_tests(tests: tuple[str, ...], trusted: str, setup: str, entry_point: str | None) -> NamePlan:
    usage = _usage(tests)
    outside = _usage((trusted, setup)).bound
    free = usage.loaded - usage.bound - outside
    modules = {name for name in free if name in _STDLIB and name in usage.attribute_bases}
    modules -= set(usage.called)
    if entry_point:
        entry = {entry_point}
    else:
        entry = {name for name in usage.called if name in free and name not in _BUILTINS} - modules
        if not entry and tests:
            entry = {name for name in _usage(tests[:1]).called if name in free}
    expose = (free - _BUILTINS - modules) | entry
    return NamePlan(tuple(sorted(expose)), tuple(sorted(modules)))
