"""What a Reward Service client may select: the configured reward, or what the operator allows.

Service params are the operator's. A request's selection (``provider`` with ``params``, or a
``spec``) is admitted when

1. normalised (terms resolved, each provider's params validated with its schema's defaults
   filled in) it equals a reward the service is configured with (``rl.reward`` or
   ``rl.validation.reward``): it is scored as sent. This is what ``RemoteReward`` sends when its
   configuration matches the server's, so that keeps working with no allow-list at all; or
2. the operator's allow-list (``rewards.service.allow``) permits every difference from the
   configured training reward: each component's provider is listed under ``providers``; each
   param the client gives with a value other than the operator's is listed for that provider;
   the components are the configured ones, by name and provider, unless ``components`` is
   ``any`` (the default, ``fixed``, refuses a selection that drops, adds or renames one, so a
   client cannot shed a gate or reset its fields by renaming it); each spec field (``floor``,
   ``onError``, ``clip``) and component field (``weight``, ``gate``, ``threshold``) the client
   gives with a value other than the operator's is in ``spec_fields``. Whatever the client leaves
   out is the operator's: params come from the configured component on that provider, spec
   fields from the configured reward, component fields from the configured component of the
   same name (a new component, admitted only with ``components: any``, gets the defaults).

Operator-only params (isolation, resource limits, URLs, credential references, paths; see
``rewardkit.contracts.params``) are never client-settable: an allow-list naming one stops the service at
start-up. A refusal is a ``SelectionRefused`` naming the request field; the app answers 403 and
nothing is built or run.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from rewardkit.plugin import (
    Catalog,
    ComponentSpec,
    ConfigError,
    ParamsError,
    RerunSpec,
    RewardSpec,
    SelectionRefused,
    canonical_json,
    operator_only_reason,
    strictly_equal,
)
from rewardkit.plugin import normalise_params as normalise
from rewardkit_service.section import ServiceAllow

_SPEC_LEVEL = ("floor", "onError", "clip")
_COMPONENT_LEVEL = ("weight", "gate", "threshold")
_COMPONENT_DEFAULTS = {name: ComponentSpec.model_fields[name].default for name in _COMPONENT_LEVEL}
_CACHE_SIZE = 256

log = logging.getLogger("rewardkit_service")


def _same(left: Any, right: Any) -> bool:
    """Equal values, where 2 and 2.0 are the same number but true is not 1."""
    numbers = (int, float)
    if isinstance(left, numbers) and isinstance(right, numbers):
        return isinstance(left, bool) == isinstance(right, bool) and left == right
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right))
    return bool(strictly_equal(left, right))


class SelectionPolicy:
    """Admits or refuses client selections for one service (see the module docstring)."""

    def __init__(self, catalog: Catalog, configured: Sequence[RewardSpec], allow: ServiceAllow) -> None:
        self.catalog = catalog
        self.allow = allow
        self.training = configured[0]
        self._configured = {key for key in (self._normalised(spec.to_json()) for spec in configured) if key}
        self._decisions: OrderedDict[str, RewardSpec | SelectionRefused] = OrderedDict()
        self._lock = threading.Lock()
        self._check_allow_list()

    # -- the operator's allow-list, checked at start-up ----------------------------------------

    def _check_allow_list(self) -> None:
        configured = {component.provider for component in self.training.components}
        idle = sorted(set(self.allow.providers) - configured)
        if idle and self.allow.components == "fixed":
            log.warning(
                "rewards.service.allow.providers lists %s, not a component of the configured reward "
                "(rl.reward): with rewards.service.allow.components: fixed (the default) no client can "
                "add it; set components: any to allow that",
                ", ".join(idle),
            )
        for provider, allowed in self.allow.providers.items():
            key = f"rewards.service.allow.providers.{provider}"
            if provider not in self.catalog:
                raise ConfigError(
                    f"no provider {provider!r} in this service's catalog "
                    f"(known: {', '.join(self.catalog.names())})",
                    key=key,
                )
            model = self.catalog.entry(provider).params_model
            for name in allowed.params:
                if model is not None and name not in model.model_fields:
                    raise ConfigError(
                        f"provider {provider!r} has no param {name!r} "
                        f"(it accepts {list(model.model_fields)})",
                        key=f"{key}.params",
                    )
                reason = operator_only_reason(model, name)
                if reason is not None:
                    raise ConfigError(
                        f"param {name!r} of {provider!r} is operator-only ({reason}): a client can never "
                        "set it, whatever the allow-list says; set it in rl.reward instead",
                        key=f"{key}.params",
                    )

    # -- admission ---------------------------------------------------------------------------------

    def admit(self, provider: str | None, params: Mapping[str, Any] | None, spec: Mapping[str, Any] | None
              ) -> RewardSpec:  # fmt: skip
        """The spec to build for a client's selection, or ``SelectionRefused`` naming the field.

        An unknown provider or an invalid spec raises the catalog's or composition's own error.
        """
        if spec is not None:
            raw = dict(spec)
            where = "spec."
        else:
            assert provider is not None
            raw = {"components": [{"provider": provider, "params": dict(params or {})}]}
            where = ""
        key = canonical_json(raw)
        with self._lock:
            decision = self._decisions.get(key)
            if decision is not None:
                self._decisions.move_to_end(key)
        if decision is None:
            decision = self._decide(raw, where, single=spec is None)
            with self._lock:
                self._decisions[key] = decision
                while len(self._decisions) > _CACHE_SIZE:
                    self._decisions.popitem(last=False)
        if isinstance(decision, SelectionRefused):
            raise SelectionRefused(decision.reason, field=decision.field)
        return decision

    def _decide(self, raw: dict[str, Any], where: str, *, single: bool) -> RewardSpec | SelectionRefused:
        parsed = RewardSpec.parse(raw)  # RewardSpecError: the request's own mistake (422)
        for component in parsed.components:
            self.catalog.entry(component.provider)  # UnknownNameError lists the known ones (422)
        if self._normalised(parsed.to_json()) in self._configured:
            return parsed
        try:
            return self._merged(raw, where, single=single)
        except SelectionRefused as refused:
            return refused

    def _term(self, provider: str) -> str:
        return self.catalog.entry(provider).spec.default_term

    def _normalised(self, data: dict[str, Any]) -> str | None:
        """Canonical JSON of a spec with terms resolved and params' defaults filled in."""
        try:
            spec = RewardSpec.parse(data).with_terms(self._term).to_json()
            for component in spec["components"]:
                model = self.catalog.entry(component["provider"]).params_model
                component["params"] = normalise(model, component["params"])
        except (ParamsError, ValueError):
            return None  # params that do not fit can equal no configured reward
        return canonical_json(spec)

    def _refuse_field(self, path: str, field: str, theirs: Any, ours: Any) -> None:
        if field not in self.allow.spec_fields and not _same(theirs, ours):
            listed = "does not list it" if self.allow.spec_fields else "is empty"
            raise SelectionRefused(
                f"{field} is the operator's ({json.dumps(ours)} here) and this service's rewards.service."
                f"allow.spec_fields {listed}, so a client cannot set {json.dumps(theirs)}; leave it out "
                "to use the service's value",
                field=path,
            )

    def _merged(self, raw: dict[str, Any], where: str, *, single: bool) -> RewardSpec:
        base = self.training.to_json()
        merged: dict[str, Any] = {"components": []}
        if "reruns" in raw and not _same_reruns(raw["reruns"], self.training.reruns):
            raise SelectionRefused(  # the operator's alone, never among spec_fields
                f"reruns is the operator's ({json.dumps(self.training.reruns.model_dump())} here): a "
                "client cannot set it; leave it out to use the service's value",
                field=f"{where}reruns",
            )
        if "reruns" in base:
            merged["reruns"] = base["reruns"]
        for name in _SPEC_LEVEL:
            spelling = "on_error" if name == "onError" and "on_error" in raw else name
            if spelling in raw:
                self._refuse_field(f"{where}{spelling}", name, raw[spelling], base[name])
                merged[name] = raw[spelling]
            else:
                merged[name] = base[name]
        allowed = self.allow.providers
        components = raw.get("components", [])
        changes = []
        for index, component in enumerate(components):
            at = "" if single else f"{where}components[{index}]."
            provider = component["provider"]
            name = component.get("name") or provider
            theirs = component.get("params") or {}
            ours = self._operator_params(provider, name)
            changed = self._changed_params(provider, ours, theirs)
            changes.append((at, provider, name, theirs, ours, changed))
            model = self.catalog.entry(provider).params_model
            for key in changed:  # never client-settable: named first, whatever else is wrong
                reason = operator_only_reason(model, key)
                if reason is not None:
                    raise SelectionRefused(
                        f"param {key!r} of {provider!r} is operator-only ({reason}) and can never be set "
                        "by a client; leave it out to use the service's value",
                        field=f"{at}params.{key}",
                    )
        for at, provider, _, _, _, changed in changes:
            if provider not in allowed:
                listed = sorted(allowed) or "none"
                raise SelectionRefused(
                    f"provider {provider!r} is not in this service's allow-list "
                    f"(rewards.service.allow.providers: {listed}); a client may select the configured "
                    "reward or an allowed provider",
                    field=f"{at}provider",
                )
            permitted = allowed[provider].params
            for key in changed:
                if key not in permitted:
                    raise SelectionRefused(
                        f"param {key!r} of {provider!r} is the operator's: rewards.service.allow."
                        f"providers.{provider}.params lists {sorted(permitted)}; leave it out to use the "
                        "service's value",
                        field=f"{at}params.{key}",
                    )
        if self.allow.components != "any":
            self._refuse_component_changes(
                [(at, name, provider) for at, provider, name, *_ in changes], where
            )
        for component, (at, provider, name, theirs, ours, _) in zip(components, changes):
            mine = self._component(name, provider)
            out = dict(component)
            for field in _COMPONENT_LEVEL:
                base_value = mine[field] if mine is not None else _COMPONENT_DEFAULTS[field]
                if field in component:
                    self._refuse_field(f"{at}{field}", field, component[field], base_value)
                else:
                    out[field] = base_value
            out["params"] = {**ours, **theirs}
            merged["components"].append(out)
        return RewardSpec.parse(merged)

    def _refuse_component_changes(self, requested: list[tuple[str, str, str]], where: str) -> None:
        """Refuse a selection whose components are not the configured ones (``components: fixed``).

        ``requested`` holds each component's field prefix (empty for a single ``provider``), name
        and provider. A component matches the configured one of the same name and provider; an
        unmatched one on the provider of an unmatched configured component renames it; any other
        is added; a configured component left unmatched is dropped.
        """
        configured = [(component.name, component.provider) for component in self.training.components]
        matched = {(name, provider) for _, name, provider in requested} & set(configured)
        missing = [pair for pair in configured if pair not in matched]
        problems: list[tuple[str, str]] = []  # (field, what is wrong)
        for at, name, provider in requested:
            if (name, provider) in matched:
                continue
            old = next((pair for pair in missing if pair[1] == provider), None)
            if old is not None:
                missing.remove(old)
                problems.append(
                    (f"{at}name", f"component {old[0]!r} (provider {provider!r}) is renamed {name!r}")
                )
            else:
                problems.append((f"{at}provider", f"component {name!r} (provider {provider!r}) is added"))
        for name, provider in missing:
            problems.append((f"{where}components", f"component {name!r} (provider {provider!r}) is dropped"))
        if not problems:
            return
        field = problems[0][0] if where else "provider"
        listed = ", ".join(f"{name!r} (provider {provider!r})" for name, provider in configured)
        raise SelectionRefused(
            "; ".join(problem for _, problem in problems) + ": this service's components are the "
            f"operator's (rewards.service.allow.components is fixed): {listed}; a selection keeps each of "
            "them under its configured name, adding none",
            field=field,
        )

    def _component(self, name: str, provider: str) -> dict[str, Any] | None:
        for component in self.training.to_json()["components"]:
            if component["name"] == name and component["provider"] == provider:
                return component
        return None

    def _operator_params(self, provider: str, name: str) -> dict[str, Any]:
        ours = self._component(name, provider)
        if ours is not None:
            return dict(ours["params"])
        for component in self.training.components:
            if component.provider == provider:
                return dict(component.params)
        return {}

    def _changed_params(self, provider: str, ours: dict[str, Any], theirs: Mapping[str, Any]) -> list[str]:
        """The params the client sets to something other than the operator's value."""
        model = self.catalog.entry(provider).params_model
        ours_normal = normalise(model, ours)
        changed = []
        for key, value in theirs.items():
            if model is not None and key not in model.model_fields:
                continue  # an unknown param: the catalog names it and what is accepted (422)
            try:
                same = _same(normalise(model, {**ours, key: value}).get(key), ours_normal.get(key))
            except ParamsError:
                same = False  # a value the schema refuses is not the operator's value
            if not same:
                changed.append(key)
        return changed


__all__ = ["SelectionPolicy"]


def _same_reruns(theirs: Any, ours: RerunSpec) -> bool:
    try:
        return RerunSpec.model_validate(theirs) == ours
    except ValueError:
        return False
