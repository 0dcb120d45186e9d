"""Optional extras: which ``pip install 'rewardkit[...]'`` brings each optional import.

A command that needs an extra that is not installed ends with one line naming the command, the
missing module and the install line, instead of a ``ModuleNotFoundError`` traceback from deep
inside an import. ``tests/test_cli.py`` checks every entry against ``pyproject.toml``.
"""

from __future__ import annotations

from rewardkit.errors import RewardkitError

__all__ = ["EXTRAS", "MissingExtraError", "missing_extra"]

# top-level module -> (distribution that provides it, extra that lists that distribution)
EXTRAS: dict[str, tuple[str, str]] = {
    "orjson": ("orjson", "service"),
    "starlette": ("starlette", "service"),
    "uvicorn": ("uvicorn", "service"),
    "prometheus_client": ("prometheus-client", "service"),
    "ray": ("ray", "ray"),
    "matplotlib": ("matplotlib", "plot"),
    "pytest": ("pytest", "testing"),
}


class MissingExtraError(RewardkitError, ImportError):
    """Something needs a module from an extra that is not installed; the message says which."""


def missing_extra(error: ImportError, needed_for: str) -> MissingExtraError | None:
    """The one-line error for ``error`` when the missing module belongs to an extra, else ``None``.

    ``needed_for`` names what needed it (``rewardkit serve``, ``rl.reward.service``).
    """
    module = (error.name or "").split(".")[0]
    if module not in EXTRAS:
        return None
    _, extra = EXTRAS[module]
    return MissingExtraError(
        f"{needed_for} needs {module}, which is not installed; it comes with the {extra!r} extra: "
        f"pip install 'rewardkit[{extra}]'"
    )
