"""``@rewardkit.provider``: a plain scoring function as a catalog entry.

The function asks for its inputs by parameter name (``completion``, ``prompt``, ``reference``,
``candidate``, ``context``); its other parameters are the provider's params, with a schema derived
from their annotations. It returns a number (the one term's value), ``None`` (skipped), a mapping
of term values, or a ``RewardProviderResult``. The spec's factory is ``partial(map_candidates,
scorer)``, so an exception in the function becomes that candidate's ``error``.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import numbers
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from rewardkit.contracts import RewardCandidate, RewardContext, RewardProviderResult, RewardProviderSpec
from rewardkit.contracts.errors import RegistrationError
from rewardkit.contracts.params import derive_params_model
from rewardkit.scoring.pointwise import map_candidates

INPUTS: tuple[str, ...] = ("completion", "prompt", "reference", "candidate", "context")
# The inputs that exist only when the spec declares them as needs.
_NEEDED_INPUTS: tuple[str, ...] = ("prompt", "reference")


class FunctionScorer:
    """A pointwise scorer that calls a plain function with the inputs it names. ``__wrapped__`` points
    at the function so the code fingerprint hashes the package that defines it, not rewardkit's;
    ``__signature__`` shows ``map_candidates`` the params the function takes."""

    def __init__(self, function: Callable[..., Any], inputs: tuple[str, ...], terms: tuple[str, ...]) -> None:
        self.__wrapped__ = function
        self.__qualname__ = getattr(function, "__qualname__", repr(function))
        self.inputs = inputs
        self.terms = terms
        self.__signature__ = _scorer_signature(function, inputs)

    def __call__(
        self, candidate: RewardCandidate, context: RewardContext, /, **params: Any
    ) -> RewardProviderResult:
        available = {
            "completion": candidate.completion,
            "prompt": context.prompt,
            "reference": context.reference,
            "candidate": candidate,
            "context": context,
        }
        value = self.__wrapped__(**{name: available[name] for name in self.inputs}, **params)
        return self.result(value)

    def result(self, value: object) -> RewardProviderResult:
        """``value`` as a provider result; ``TypeError`` (the candidate's error) for anything else."""
        name = self.__qualname__
        if isinstance(value, RewardProviderResult):
            return value
        if value is None:
            return RewardProviderResult.skip(f"{name} returned None (does not apply)")
        if _is_number(value):
            if len(self.terms) != 1:
                raise TypeError(
                    f"{name} returned one number but declares terms {list(self.terms)}; "
                    "return a mapping of term values or a RewardProviderResult"
                )
            number = float(value)  # type: ignore[arg-type]
            if not math.isfinite(number):
                return RewardProviderResult.fail(f"{name} returned {number}")
            return RewardProviderResult({self.terms[0]: number})
        if isinstance(value, Mapping):
            # Each term is held to the rules of a single number: a real number, not a bool or a
            # string, and finite (else this candidate's error, never the whole batch's).
            terms: dict[str, float] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise TypeError(f"{name} returned a term named {key!r}; term names are strings")
                if not _is_number(item):
                    raise TypeError(
                        f"{name} returned {type(item).__name__} {item!r} for term {key!r}; "
                        "a term is a real number (not a bool or a string)"
                    )
                number = float(item)
                if not math.isfinite(number):
                    return RewardProviderResult.fail(f"{name} returned {number} for term {key!r}")
                terms[key] = number
            return RewardProviderResult(terms)
        raise TypeError(
            f"{name} returned {type(value).__name__}; return a float, None (skipped), "
            "a mapping of term values or a RewardProviderResult"
        )

    def __repr__(self) -> str:
        return f"FunctionScorer({self.__qualname__})"


def _is_number(value: object) -> bool:
    # bool is a number to Python but almost always a forgotten float(...) in a reward
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _scorer_signature(function: Callable[..., Any], inputs: tuple[str, ...]) -> inspect.Signature:
    """``(candidate, context, /, *, <the function's params>)``, which ``map_candidates`` checks params on."""
    own = [
        parameter.replace(kind=parameter.KEYWORD_ONLY)
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD
        else parameter
        for parameter in inspect.signature(function).parameters.values()
        if parameter.name not in inputs
    ]
    positional = inspect.Parameter.POSITIONAL_ONLY
    leading = [inspect.Parameter("candidate_", positional), inspect.Parameter("context_", positional)]
    return inspect.Signature(leading + own)


def _inputs_of(function: Callable[..., Any], name: str) -> tuple[str, ...]:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError) as error:
        raise RegistrationError(
            f"provider {name!r}: cannot read the signature of {function!r}: {error}"
        ) from None
    for parameter in parameters:
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.VAR_POSITIONAL):
            raise RegistrationError(
                f"provider {name!r}: parameter {parameter.name!r} of {function.__qualname__} is "
                "positional-only or *args; rewardkit passes inputs and params by name"
            )
    return tuple(parameter.name for parameter in parameters if parameter.name in INPUTS)


def _returned_literals(function: Callable[..., Any]) -> list[tuple[list[str], str]]:
    """The term names of each ``return {"name": ...}`` (a dict literal with string keys) in the function's
    own body, nested functions left out, each with ``file:line``. Read from the source, never by calling
    the function: registering runs no user code. ``[]`` when the source cannot be read."""
    try:
        lines, first = inspect.getsourcelines(function)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return []
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    where = inspect.getsourcefile(function) or "?"
    found: list[tuple[list[str], str]] = []
    pending: list[ast.AST] = list(tree.body[0].body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # another function's returns
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            keys = node.value.keys
            if keys and all(isinstance(key, ast.Constant) and isinstance(key.value, str) for key in keys):
                names = [
                    key.value for key in keys if isinstance(key, ast.Constant) and isinstance(key.value, str)
                ]
                found.append((names, f"{where}:{first + node.lineno - 1}"))
        pending.extend(ast.iter_child_nodes(node))
    return found


def _check_returned_terms(function: Callable[..., Any], name: str, terms: Sequence[str]) -> None:
    """Refuse, at registration, a function that visibly returns terms it does not declare: it would
    otherwise be listed as usable and fail the first batch it scores."""
    if isinstance(terms, str):
        return  # RewardProviderSpec refuses a bare string by name
    for returned, where in _returned_literals(function):
        undeclared = [term for term in returned if term not in terms]
        if undeclared:
            raise RegistrationError(
                f"provider {name!r}: {getattr(function, '__qualname__', function)} returns terms "
                f"{returned} ({where}) but declares terms {list(terms)}, so {undeclared} would fail every "
                f"batch it scores; add terms={tuple(returned)!r} to @rewardkit.provider(...) (the first "
                "term is the one a composition reads unless a component names another)"
            )


def _needs(name: str, inputs: tuple[str, ...], needs: Sequence[str] | None) -> tuple[str, ...]:
    taken = tuple(item for item in _NEEDED_INPUTS if item in inputs)
    if needs is None:
        return taken
    if isinstance(needs, str):
        raise RegistrationError(f"provider {name!r}: needs must be a tuple of names, got {needs!r}")
    missing = [item for item in taken if item not in needs]
    if missing:
        raise RegistrationError(
            f"provider {name!r}: the function takes {missing} but needs={tuple(needs)!r} does not "
            f"name them, so they would always be None; add them to needs (or leave needs out)"
        )
    return tuple(needs)


def _names(value: Sequence[str]) -> Any:
    """A tuple of names; a bare string is kept so that ``RewardProviderSpec`` refuses it by name."""
    return value if isinstance(value, str) else tuple(value)


def provider(
    *,
    name: str,
    revision: str,
    needs: Sequence[str] | None = None,
    terms: Sequence[str] = ("score",),
    diagnostics: Sequence[str] = (),
    notes: Sequence[str] = (),
    semantic_identity: Any = None,
    description: str | None = None,
    params_schema: type[BaseModel] | None = None,
    scoring_packages: Sequence[str] = (),
    cheap: bool = False,
) -> Callable[[Callable[..., Any]], RewardProviderSpec]:
    """Turn a scoring function into a ``RewardProviderSpec`` (see the module docstring). ``needs``
    defaults to the inputs the function takes, ``description`` to its docstring's first line, the
    params schema to one derived from its own params; the rest are the spec's fields (``cheap=True``:
    scored in the calling thread). ``RegistrationError`` when the function and the arguments disagree
    (an input taken but not needed, ``*args``, an invalid name)."""

    def decorate(function: Callable[..., Any]) -> RewardProviderSpec:
        if not callable(function):
            raise RegistrationError(f"provider {name!r}: @provider decorates a function, got {function!r}")
        inputs = _inputs_of(function, name)
        declared_terms = _names(terms)
        _check_returned_terms(function, name, declared_terms)
        scorer = FunctionScorer(function, inputs, tuple(declared_terms))
        # the inputs are bound by the framework, never set by a configuration
        own_params = functools.partial(function, **dict.fromkeys(inputs))
        schema = params_schema if params_schema is not None else derive_params_model(own_params, name)
        doc = inspect.getdoc(function) or ""
        return RewardProviderSpec(
            name=name,
            factory=functools.partial(map_candidates, scorer),
            needs=_needs(name, inputs, needs),
            revision=revision,
            terms=declared_terms,
            diagnostics=_names(diagnostics),
            notes=_names(notes),
            semantic_identity=semantic_identity,
            description=description if description is not None else doc.partition("\n")[0],
            cheap=cheap,
            params_schema=schema,
            scoring_packages=_names(scoring_packages),
        )

    return decorate
