"""What to install when something optional is missing: the one-line hint, in the user's install mode.
The core imports the distributions holding verbs and backends (``rewardkit serve`` in
``rewardkit-service``, ``rewards.backend: ray`` in ``rewardkit-ray``, ...) only when they are used.
A missing one, or a module one needs from an extra, ends in one line naming what needed it, the
module and the install line, instead of a ``ModuleNotFoundError`` traceback.

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

from rewardkit.errors import RewardkitError

__all__ = [
    "CORE_DISTRIBUTION",
    "DISTRIBUTIONS",
    "MODULES",
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


DISTRIBUTIONS: dict[str, Distribution] = {
    dist.name: dist
    for dist in (
        Distribution(CORE_DISTRIBUTION, "."),
        Distribution("rewardkit-service", "plugins/service"),
        Distribution("rewardkit-ray", "plugins/ray"),
        Distribution("rewardkit-checkpoints", "plugins/checkpoints"),
        Distribution("rewardkit-media", "plugins/media"),
        Distribution("rewardkit-audit", "plugins/audit"),
        Distribution("rewardkit-monitor", "plugins/monitor"),
    )
}

# top-level module -> (the distribution that brings it, the extra of that distribution, or None)
MODULES: dict[str, tuple[str, str | None]] = {
    "rewardkit_service": ("rewardkit-service", None),
    "orjson": ("rewardkit-service", None),
    "starlette": ("rewardkit-service", "server"),
    "uvicorn": ("rewardkit-service", "server"),
    "prometheus_client": ("rewardkit-service", "server"),
    "rewardkit_ray": ("rewardkit-ray", None),
    "ray": ("rewardkit-ray", None),
    "rewardkit_checkpoints": ("rewardkit-checkpoints", None),
    "matplotlib": ("rewardkit-checkpoints", "plot"),
    "rewardkit_media": ("rewardkit-media", None),
    "rewardkit_audit": ("rewardkit-audit", None),
    "rewardkit_monitor": ("rewardkit-monitor", None),
    "pytest": (CORE_DISTRIBUTION, "testing"),
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
    folder = checkout / DISTRIBUTIONS[distribution].folder
    try:
        relative = folder.relative_to(Path.cwd().resolve())
        shown = "." if relative == Path(".") else f"./{relative}"
    except ValueError:  # not below the working directory: the absolute path
        shown = str(folder)
    return f"pip install '{shown}{suffix}'"


def _checkout() -> Path | None:
    """The repository the core was installed from, when it was a local folder that is still there."""
    candidates = [Path(__file__).resolve().parent.parent]  # the folder above core/, in a checkout
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
