"""What to install when something optional is missing: the one-line hint, in the user's install mode.
Distributions bring their verbs, config sections and backends through hooks; the core names none of
their modules. For the subsystems of this repository it keeps a small table of what each one brings
(``KNOWN_VERBS``, ``KNOWN_BACKENDS``, ``KNOWN_BINDINGS``, ``KNOWN_SECTIONS``: a name -> the distribution
and extra), so a missing one, or a module one needs from an extra, ends in one line naming what needed
it, the module and the install line, instead of an unknown-verb error or a ``ModuleNotFoundError``
traceback.

From a checkout (editable, ``pip install .``, or a source tree on ``sys.path``) the install line
names local folders (``pip install ./plugins/service``), from an index names (``pip install
rewardkit-service``). ``tests/test_cli.py`` checks every entry against the pyproject files."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from rewardkit.contracts.errors import RewardkitError

__all__ = [
    "CORE_DISTRIBUTION",
    "DISTRIBUTIONS",
    "KNOWN_BACKENDS",
    "KNOWN_BINDINGS",
    "KNOWN_SECTIONS",
    "KNOWN_SERVICE_BACKEND",
    "KNOWN_VERBS",
    "MODULES",
    "SERVICE_BACKEND",
    "Known",
    "MissingExtraError",
    "import_optional",
    "install_line",
    "missing_extra",
]

CORE_DISTRIBUTION = "rewardkit-core"


@dataclass(frozen=True)
class Distribution:
    """A distribution of this repository: its name on an index and its folder in a checkout."""

    name: str
    folder: str
    # the distributions of this repository it depends on: not on an index, so an install from a
    # checkout names their folders in the same command
    needs: tuple[str, ...] = ()

    @property
    def package(self) -> str:
        """The import name of the distribution's package: its name with ``_`` for ``-``, the convention
        every subsystem distribution of this repository follows (the core's, ``rewardkit``, aside)."""
        return self.name.replace("-", "_")


DISTRIBUTIONS: dict[str, Distribution] = {
    dist.name: dist
    for dist in (
        Distribution(CORE_DISTRIBUTION, "."),
        Distribution("rewardkit-service", "plugins/service"),
        Distribution("rewardkit-ray", "plugins/ray"),
        Distribution("rewardkit-checkpoints", "plugins/checkpoints", needs=("rewardkit-stats",)),
        Distribution("rewardkit-media", "plugins/media"),
        Distribution("rewardkit-audit", "plugins/audit", needs=("rewardkit-stats",)),
        Distribution("rewardkit-monitor", "plugins/monitor", needs=("rewardkit-stats",)),
        Distribution("rewardkit-view", "plugins/view"),
        Distribution("rewardkit-bindings", "plugins/bindings"),
        Distribution("rewardkit-stats", "plugins/stats"),
        Distribution("rewardkit-supervise", "plugins/supervise"),
        Distribution("rewardkit-testing", "plugins/testing"),
    )
}

# top-level module -> (the distribution that brings it, the extra of that distribution, or None): each
# subsystem distribution's own package, and the libraries some of their extras bring
MODULES: dict[str, tuple[str, str | None]] = {
    **{dist.package: (dist.name, None) for dist in DISTRIBUTIONS.values() if dist.name != CORE_DISTRIBUTION},
    "orjson": ("rewardkit-service", None),
    "starlette": ("rewardkit-service", "server"),
    "uvicorn": ("rewardkit-service", "server"),
    "prometheus_client": ("rewardkit-service", "server"),
    "ray": ("rewardkit-ray", None),
    "matplotlib": ("rewardkit-checkpoints", "plot"),
    "pytest": ("rewardkit-testing", None),  # the conformance kit is a pytest plugin
}


@dataclass(frozen=True)
class Known:
    """Something a subsystem distribution of this repository brings through a hook: named here only to
    answer "install X" when it is missing (``needs`` says what installing it gives)."""

    distribution: str
    extra: str | None
    about: str
    # A section that configures a batch observer (``ConfigSectionSpec.observer``): set without its
    # distribution, the bindings and the service fail with the install line rather than run unwatched.
    observes: bool = False

    def missing(self, needed_for: str) -> MissingExtraError:
        """The one-line error: ``needed_for`` needs the distribution's package, with its install line."""
        package = DISTRIBUTIONS[self.distribution].package
        install = install_line(self.distribution, self.extra)
        return MissingExtraError(f"{needed_for} needs {package}, which is not installed: {install}")


# Verbs of ``rewardkit`` (``register_commands``) whose distribution may not be installed.
KNOWN_VERBS: dict[str, Known] = {
    "serve": Known("rewardkit-service", "server", "run the Reward Service (HTTP/JSON)"),
    "audit": Known("rewardkit-audit", None, "red-team the configured reward (docs/audit.md)"),
    "checkpoints": Known("rewardkit-checkpoints", None, "evaluate checkpoints as a model trains"),
    "monitor": Known("rewardkit-monitor", None, "report the reward monitor's signals and alarms"),
    "view": Known("rewardkit-view", None, "write an HTML page of scored results"),
    "compare": Known("rewardkit-view", None, "compare two rewards on the same rollouts"),
}
# Reward backends (``register_reward_backends``) that ``rewards.backend`` names.
KNOWN_BACKENDS: dict[str, Known] = {
    "ray": Known("rewardkit-ray", None, "score on reward actors of a Ray cluster"),
}
# Trainer bindings (``register_trainer_bindings``) that ``rewardkit.bindings.get`` names.
KNOWN_BINDINGS: dict[str, Known] = {
    name: Known("rewardkit-bindings", None, f"the {trainer} binding")
    for name, trainer in (("trl", "TRL"), ("verl", "verl"), ("verl-batch", "verl"), ("openrlhf", "OpenRLHF"))
}
# The backend a Reward Service URL selects (``rl.reward.service``), named ``service`` in the registry.
SERVICE_BACKEND = "service"
KNOWN_SERVICE_BACKEND = Known("rewardkit-service", None, "score in a Reward Service")
# Configuration sections (``register_config_sections``). Without their distribution a section is kept
# as given, unchecked: what reads it is missing too, and fails with this install line when used.
KNOWN_SECTIONS: dict[str, Known] = {
    "checkpoints": Known("rewardkit-checkpoints", None, "checkpoint evaluation"),
    "rl.monitor": Known("rewardkit-monitor", None, "the reward monitor", observes=True),
    "rewards.ray": Known("rewardkit-ray", None, "the Ray backend"),
    "rewards.service": Known("rewardkit-service", None, "the Reward Service's policy"),
}


class MissingExtraError(RewardkitError, ImportError):
    """Something needs a module that is not installed; the message says what to install."""


def missing_extra(
    error: ImportError, needed_for: str, *, extra: str | None = None
) -> MissingExtraError | None:
    """The one-line error for ``error`` when we know what brings the missing module, else ``None``;
    ``needed_for`` names what needed it, ``extra`` an extra of the distribution to ask for."""
    module = (error.name or "").split(".")[0]
    if module not in MODULES:
        return None
    distribution, module_extra = MODULES[module]
    install = install_line(distribution, module_extra or extra)
    return MissingExtraError(f"{needed_for} needs {module}, which is not installed: {install}")


def import_optional(module: str, attribute: str, needed_for: str, *, extra: str | None = None) -> Any:
    """``module.attribute`` from a distribution the core reaches lazily, or the one-line install error
    (the layout's import rule: the core never imports a distribution at import time)."""
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError as error:
        missing = missing_extra(error, needed_for, extra=extra)
        if missing is not None:
            raise missing from error
        raise


def install_line(distribution: str, extra: str | None = None) -> str:
    """``pip install ...`` for ``distribution`` (and ``extra``) in the way the core was installed."""
    suffix = f"[{extra}]" if extra else ""
    checkout = _checkout()
    if checkout is None:
        return f"pip install '{distribution}{suffix}'"
    names = [*DISTRIBUTIONS[distribution].needs, distribution]
    shown = [_shown(checkout / DISTRIBUTIONS[name].folder) for name in names]
    shown[-1] += suffix
    return "pip install " + " ".join(f"'{arg}'" for arg in shown)


def _shown(folder: Path) -> str:
    """``folder`` as a pip argument: relative to the working directory when below it, else absolute."""
    try:
        relative = folder.relative_to(Path.cwd().resolve())
    except ValueError:
        return str(folder)
    return "." if relative == Path(".") else f"./{relative}"


def _checkout() -> Path | None:
    """The repository the core was installed from, when it was a local folder that is still there."""
    candidates = [Path(__file__).resolve().parents[2]]  # the folder above core/, in a checkout
    try:
        raw = importlib.metadata.distribution(CORE_DISTRIBUTION).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        raw = None
    if raw:
        url = json.loads(raw).get("url", "")
        if url.startswith("file://"):
            candidates.append(Path(unquote(urlparse(url).path)))
    for candidate in candidates:
        if all((candidate / name).is_file() for name in ("pyproject.toml", "plugins/service/pyproject.toml")):
            return candidate
    return None
