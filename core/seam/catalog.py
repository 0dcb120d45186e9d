"""The provider catalog: built-ins, installed plugins and an optional run-bound catalog.

``resolve_catalog(ref)`` returns every provider a run may select. ``ref`` names a catalog
registered through ``register_catalogs`` or is a dotted ``package.module:factory`` path to a
zero-argument factory returning ``RewardProviderSpec``s. A run persists ``ref`` so the driver,
every reward actor and a resumed run resolve exactly the same catalog.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from pydantic import BaseModel

from rewardkit.contracts import CANDIDATE_NEEDS, KNOWN_NEEDS, RewardProviderSpec, check_name
from rewardkit.contracts.errors import PreflightError, RegistrationError
from rewardkit.contracts.frozen import NotJSONError
from rewardkit.contracts.identity import (
    callables_behind,
    canonical_json,
    code_fingerprint,
    provider_identity,
    sha256_hex,
)
from rewardkit.contracts.params import (
    ParamsError,
    derive_params_model,
    normalised_params,
    require_unsandboxed_opt_in,
    schema_document,
    unsandboxed_choices,
)
from rewardkit.scoring.bound_provider import BoundProvider
from rewardkit.seam.extensions import (
    CatalogSpec,
    ConfigSectionSpec,
    RewardBackendSpec,
    RewardExpansionSpec,
    ServingStrategySpec,
    TrainerBindingSpec,
)
from rewardkit.seam.plugins import PluginInfo, PluginManager, import_module_attribute, load_plugins
from rewardkit.seam.protocols import CatalogRegistrar
from rewardkit.seam.registry import CATALOG_VERSION, Registry, owner_label

CatalogFactory = Callable[[], Iterable[RewardProviderSpec]]


@dataclass(frozen=True)
class ProviderEntry:
    """A catalog entry with the plugin that owns it."""

    spec: RewardProviderSpec
    owner: PluginInfo

    @functools.cached_property
    def identity(self) -> str:
        """The identity of the provider configured with no params (its defaults filled in)."""
        return provider_identity(self.spec, self.default_params)

    @functools.cached_property
    def code_fingerprint(self) -> str:
        return code_fingerprint(self.spec)

    @functools.cached_property
    def params_model(self) -> type[BaseModel] | None:
        """The provider's parameter schema: declared, or derived from its factory's annotations."""
        spec = self.spec
        factory = spec.factory
        if spec.runtime:  # runtime objects are keyword arguments of the factory but never params
            factory = functools.partial(factory, **dict.fromkeys(spec.runtime))
        return spec.params_schema or derive_params_model(factory, spec.name)

    @functools.cached_property
    def default_params(self) -> dict[str, Any] | None:
        """Every param at its default, as JSON; ``None`` when a param is required or there is no schema."""
        if self.params_model is None:
            return None
        try:
            return normalised_params(self.params_model, {})
        except (ParamsError, NotJSONError):
            return None

    @functools.cached_property
    def description(self) -> str:
        """The spec's description, else the first line of the docstring of the code behind its factory
        (the scorer of ``partial(map_candidates, scorer)``, the provider class), so every listed
        provider says what it scores."""
        if self.spec.description:
            return self.spec.description
        for target in callables_behind(self.spec.factory):
            if getattr(target, "__module__", "") in _FRAMEWORK_WRAPPERS:
                continue
            doc = (
                inspect.cleandoc(vars(target).get("__doc__") or "")
                if isinstance(target, type)
                else (inspect.getdoc(target) or "")
            )
            if doc:
                return doc.partition("\n")[0].strip()
        return ""

    @property
    def missing_modules(self) -> list[str]:
        """The spec's ``extra_modules`` that are not installed. ``find_spec`` locates a module without
        importing it: listing must not pay for importing torch when it is there."""
        return [module for module in self.spec.extra_modules if not _installed(module)]

    def describe(self) -> dict[str, Any]:
        """The row ``rewardkit providers --json`` prints."""
        spec = self.spec
        return {
            "name": spec.name,
            "distribution": self.owner.distribution,
            "version": self.owner.version,
            "plugin": self.owner.name,
            "builtin": self.owner.builtin,
            "revision": spec.revision,
            "identity": self.identity,
            "code_fingerprint": self.code_fingerprint,
            "needs": list(spec.needs),
            "terms": list(spec.terms),
            "diagnostics": list(spec.diagnostics),
            "semantic_identity": spec.semantic_identity,
            "description": self.description,
            "extra": spec.extra or None,
            "missing_modules": self.missing_modules,
            "scoring_packages": list(spec.scoring_packages),
            "runtime": list(spec.runtime),
            "cheap": spec.cheap,
            "sandboxed": spec.sandboxed,
            "params": schema_document(self.params_model),
        }


# rewardkit's own wrappers behind a factory: their docstrings describe the wrapper, not the provider.
_FRAMEWORK_WRAPPERS = frozenset(
    {
        "rewardkit.scoring.pointwise",
        "rewardkit.scoring.pointwise_batch",
        "rewardkit.scoring.function_providers",
    }
)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _check_needs(name: str, spec: RewardProviderSpec, available_inputs: Sequence[str]) -> None:
    """``PreflightError`` when provider ``name`` needs an input the data cannot supply."""
    # A candidate field (a token count) is on each candidate, checked where it is scored.
    missing = [need for need in spec.needs if need not in (*available_inputs, *CANDIDATE_NEEDS)]
    if "media" in missing:
        raise PreflightError(
            f"provider {name!r} needs in-process media (an object such as a latent on each "
            "candidate), which JSONL files and HTTP requests cannot carry: score it in the "
            "trainer's own process with rewardkit.load(config, runtime={...}), not through the "
            "Reward Service, `rewardkit score` or Ray actors"
        )
    if missing:
        raise PreflightError(
            f"provider {name!r} needs {missing} but the data supplies only "
            f"{list(available_inputs)}; map a column to it (rl.data.prompt_column / "
            "rl.data.reference_column)"
        )


class Catalog:
    """Every provider a run can select, by name."""

    def __init__(self, providers: Registry[RewardProviderSpec], ref: str | None) -> None:
        self._providers = providers
        self.ref = ref
        self._entries: dict[str, ProviderEntry] = {}  # keeps each entry's cached identity

    def names(self) -> list[str]:
        return [entry.name for entry in self._providers]

    def __contains__(self, name: object) -> bool:
        return name in self._providers

    def entry(self, name: str) -> ProviderEntry:
        if name not in self._entries:
            registered = self._providers.get(name)
            self._entries[name] = ProviderEntry(registered.value, registered.owner)
        return self._entries[name]

    def entries(self) -> list[ProviderEntry]:
        return [self.entry(registered.name) for registered in self._providers]

    def bind(
        self,
        name: str,
        params: Mapping[str, Any] | None = None,
        available_inputs: Sequence[str] = KNOWN_NEEDS,
        runtime: Mapping[str, Any] | None = None,
    ) -> BoundProvider:
        """Construct provider ``name`` with ``params``, bound to its spec (preflight). ``runtime`` holds
        in-process objects (a decoder) for providers declaring them in ``spec.runtime``; ``None`` (Reward
        Service, ``rewardkit score``, Ray actors) refuses those and in-process ``media``.
        ``PreflightError``: params outside the schema, unsandboxed choices without opt-in, a failing
        factory, missing inputs."""
        entry = self.entry(name)
        params = dict(params or {})
        _check_needs(name, entry.spec, available_inputs)
        return self._construct(name, entry, params, self._normalised(name, entry, params), runtime)

    def bind_component(
        self,
        name: str,
        params: Mapping[str, Any] | None,
        available_inputs: Sequence[str],
        runtime: Mapping[str, Any] | None,
        known: Callable[[dict[str, Any]], BoundProvider | None],
    ) -> BoundProvider:
        """``bind`` for one component of a reward, resolved in one visit: the entry is looked up and
        ``params`` normalised once, then ``known(normalised)`` (the caller's provider for these params, or
        ``None``; it may refuse them by raising) is asked before anything is constructed, so components
        with one configuration share one provider."""
        entry = self.entry(name)
        params = dict(params or {})
        normal = self._normalised(name, entry, params)
        found = known(normal)
        if found is not None:
            return found
        _check_needs(name, entry.spec, available_inputs)
        return self._construct(name, entry, params, normal, runtime)

    def _construct(
        self,
        name: str,
        entry: ProviderEntry,
        params: dict[str, Any],
        normal: dict[str, Any],
        runtime: Mapping[str, Any] | None,
    ) -> BoundProvider:
        """Provider ``name`` built from its entry, once its params are normalised and its needs met."""
        spec = entry.spec
        try:
            require_unsandboxed_opt_in(name, unsandboxed_choices(entry.params_model, params))
        except ParamsError as error:
            raise PreflightError(f"provider {name!r}: {error}") from None
        objects = self._runtime_objects(name, spec, runtime)
        where = f"provider {name!r} from {owner_label(entry.owner)}"
        try:
            provider = spec.factory(**params, **objects)
        except TypeError as error:
            raise PreflightError(f"{where} rejected params {sorted(params)}: {error}") from error
        except Exception as error:
            raise PreflightError(f"{where} failed to construct: {type(error).__name__}: {error}") from error
        if not callable(getattr(provider, "evaluate", None)):
            raise PreflightError(
                f"factory of provider {name!r} returned {type(provider).__name__}, which has no "
                "evaluate(request) method; a factory must return a provider"
            )
        identity = provider_identity(spec, normal)
        if spec.runtime:
            identity = self._with_runtime_identity(name, spec, identity, objects)
        return BoundProvider(spec, provider, params, identity)

    @staticmethod
    def _runtime_objects(
        name: str, spec: RewardProviderSpec, runtime: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        absent = [item for item in spec.runtime if runtime is None or item not in runtime]
        if absent:
            raise PreflightError(
                f"provider {name!r} needs runtime object(s) {absent}, which only the process that "
                f"owns them can pass: rewardkit.load(config, runtime={{{absent[0]!r}: ...}}); the "
                "Reward Service, `rewardkit score` and Ray actors cannot"
            )
        return {item: runtime[item] for item in spec.runtime} if runtime is not None else {}

    @staticmethod
    def _with_runtime_identity(
        name: str, spec: RewardProviderSpec, identity: str, objects: Mapping[str, Any]
    ) -> str:
        """The identity extended by what the runtime objects attest (never the objects)."""
        if spec.runtime_identity is not None:
            try:
                attested = spec.runtime_identity(objects)
            except Exception as error:
                raise PreflightError(
                    f"provider {name!r}: runtime objects {list(objects)} were refused: "
                    f"{type(error).__name__}: {error}"
                ) from error
        else:
            attested = {item: type(value).__qualname__ for item, value in objects.items()}
        try:
            text = canonical_json({"provider": identity, "runtime": attested}, f"runtime of {name!r}")
        except NotJSONError as error:
            raise PreflightError(f"provider {name!r}: runtime identity is not JSON ({error})") from None
        return sha256_hex(text)

    def normalise(self, name: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``params`` as the schema reads them: strictly checked, defaults filled in, numbers as declared, so
        equal configurations (``6``/``6.0`` for a float, an explicit or omitted default) share one identity.
        No schema: as given."""
        return self._normalised(name, self.entry(name), dict(params or {}))

    @staticmethod
    def _normalised(name: str, entry: ProviderEntry, params: dict[str, Any]) -> dict[str, Any]:
        try:
            text = canonical_json(params, f"params of {name!r}")
        except NotJSONError as error:
            raise PreflightError(f"provider {name!r}: params are not JSON ({error})") from None
        if entry.params_model is None:
            return params
        try:
            return normalised_params(entry.params_model, params, json_text=text)
        except ParamsError as error:
            verb = f" rejected params {list(error.unknown)}" if error.unknown else ""
            where = f"provider {name!r} from {owner_label(entry.owner)}{verb}"
            raise PreflightError(f"{where}: {error}") from None


def _collect(manager: PluginManager, hook: str, registry: Registry[Any], key: Callable[[Any], str]) -> None:
    _call_recording(
        manager, hook, registry, lambda owner: registry.registrar(owner, key, manager.override_refuser(owner))
    )


def _call_recording(
    manager: PluginManager, hook: str, registry: Registry[Any], make_register: Callable[[PluginInfo], Any]
) -> None:
    """Call ``hook`` into ``registry`` and record on it every plugin that failed to import, or failed
    in this hook, so an unknown name there names them (``Registry.failures``)."""
    failed: list[PluginInfo] = []

    def withdraw(owner: PluginInfo) -> None:
        failed.append(owner)
        registry.drop_owner(owner)

    manager.call_each(hook, make_register, withdraw)
    lines = [
        f"plugin {failure.name!r} from distribution {failure.distribution} {failure.version} "
        f"failed to load: {failure.error}"
        for failure in manager.failures
    ]
    for owner in failed:
        said = [line for line in manager.hook_failures.get(owner.name, []) if line.startswith(hook)]
        lines.append(
            f"plugin {owner.name!r} from distribution {owner.distribution} {owner.version} failed to "
            f"register: {said[-1] if said else hook + ' failed'}"
        )
    registry.failures = tuple(lines)


def _cached(manager: PluginManager, key: str, build: Callable[[], Any]) -> Any:
    if key not in manager.cache:
        manager.cache[key] = build()
    return manager.cache[key]


def _spec_registry(
    manager: PluginManager | None,
    key: str,
    kind: str,
    spec_type: type,
    hook: str,
    name_of: Callable[[Any], str] = attrgetter("name"),
) -> Any:
    """The registry of ``spec_type`` entries that ``hook`` registers (each under ``name_of(spec)``),
    built once per manager."""
    manager = manager or load_plugins()

    def build() -> Registry[Any]:
        registry: Registry[Any] = Registry(kind, spec_type)
        _collect(manager, hook, registry, name_of)
        return registry

    return _cached(manager, key, build)


def installed_providers(manager: PluginManager | None = None) -> Registry[RewardProviderSpec]:
    return _spec_registry(manager, "providers", "provider", RewardProviderSpec, "register_reward_providers")


def catalog_factories(manager: PluginManager | None = None) -> Registry[Callable[[], Any]]:
    manager = manager or load_plugins()

    def build() -> Registry[Callable[[], Any]]:
        registry: Registry[Callable[[], Any]] = Registry("catalog", object)

        def registrar(owner: PluginInfo) -> CatalogRegistrar:
            def register(spec: CatalogSpec | str, factory: CatalogFactory | None = None) -> None:
                # ``register(name, factory)`` is the 0.1 form, kept for plugins written against it.
                if isinstance(spec, str):
                    check_name("catalog", spec)
                    if not callable(factory):
                        raise RegistrationError(
                            f"{owner_label(owner)}: catalog {spec!r} factory is not callable"
                        )
                    spec = CatalogSpec(spec, factory)
                elif not isinstance(spec, CatalogSpec) or factory is not None:
                    raise RegistrationError(
                        f"{owner_label(owner)} registered {spec!r} as a catalog; expected a CatalogSpec"
                    )
                registry.add(spec.name, spec.factory, owner, manager.override_refuser(owner))

            return register  # type: ignore[return-value]  # one function serves both overloads

        _call_recording(manager, "register_catalogs", registry, registrar)
        return registry

    return _cached(manager, "catalogs", build)


def serving_strategies(manager: PluginManager | None = None) -> Registry[ServingStrategySpec]:
    return _spec_registry(
        manager, "serving", "serving strategy", ServingStrategySpec, "register_serving_strategies"
    )


def trainer_bindings(manager: PluginManager | None = None) -> Registry[TrainerBindingSpec]:
    return _spec_registry(
        manager, "bindings", "trainer binding", TrainerBindingSpec, "register_trainer_bindings"
    )


def reward_backends(manager: PluginManager | None = None) -> Registry[RewardBackendSpec]:
    return _spec_registry(
        manager, "backends", "reward backend", RewardBackendSpec, "register_reward_backends"
    )


def reward_expansions(manager: PluginManager | None = None) -> Registry[RewardExpansionSpec]:
    return _spec_registry(
        manager, "reward_expansions", "reward expansion", RewardExpansionSpec, "register_reward_expansions"
    )


def config_sections(manager: PluginManager | None = None) -> Registry[ConfigSectionSpec]:
    return _spec_registry(
        manager,
        "config_sections",
        "config section",
        ConfigSectionSpec,
        "register_config_sections",
        attrgetter("path"),
    )


def resolve_catalog(ref: str | None = None, manager: PluginManager | None = None) -> Catalog:
    """Built-in and installed providers, plus those of catalog ``ref`` when given."""
    manager = manager or load_plugins()
    base = installed_providers(manager)
    if not ref:
        return Catalog(base, None)
    return _cached(manager, f"catalog:{ref}", lambda: _with_catalog(manager, base, ref))


def _with_catalog(manager: PluginManager, base: Registry[RewardProviderSpec], ref: str) -> Catalog:
    factories = catalog_factories(manager)
    if ":" in ref:
        owner = PluginInfo(ref, f"catalog {ref}", CATALOG_VERSION, builtin=False)
        try:
            factory = import_module_attribute(ref)
        except Exception as error:
            raise PreflightError(
                f"cannot import catalog {ref!r}: {type(error).__name__}: {error}; the module "
                "must be importable on the driver and on every reward actor"
            ) from error
    else:
        # An unknown name raises, naming every plugin that failed to load (it may be the one).
        registered = factories.get(ref)
        factory, owner = registered.value, registered.owner
    if not callable(factory):
        raise PreflightError(f"catalog {ref!r} is {type(factory).__name__}, not a zero-argument factory")
    try:
        specs = list(factory())
    except Exception as error:
        raise PreflightError(f"catalog factory {ref!r} raised {type(error).__name__}: {error}") from error
    registry = base.copy()
    for spec in specs:
        if not isinstance(spec, RewardProviderSpec):
            raise PreflightError(f"catalog {ref!r} yielded {spec!r}, not a RewardProviderSpec")
        registry.add(spec.name, spec, owner)
    return Catalog(registry, ref)
