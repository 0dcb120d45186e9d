"""Which paths are the ORS environment's (``rewardkit_service.ors``), for the guard in front of the
app: their metrics label and their token, which the ORS SDK's client sends as ``X-API-Key``. Apart
from ``ors`` so that ``app`` can import it (``ors`` builds on ``app``)."""

from __future__ import annotations

BASE_PATH = "/ors"
ENVIRONMENT = "rewardkit"
API_KEY_HEADER = b"x-api-key"
# Paths without an environment segment, as the ORS SDK's server names them.
TOP_PATHS = (
    "/health",
    "/list_environments",
    "/create_session",
    "/create",
    "/ping",
    "/delete",
    "/delete_session",
)
ENV_ACTIONS = ("tools", "splits", "tasks", "num_tasks", "task", "task_range", "prompt", "task_tools", "call")


def is_ors_path(path: str) -> bool:
    """Whether ``path`` is one of this module's (under ``/ors`` or at the root)."""
    if path == BASE_PATH or path.startswith(BASE_PATH + "/"):
        path = path[len(BASE_PATH) :] or "/"
    if path in TOP_PATHS:
        return True
    parts = path.strip("/").split("/")
    return len(parts) == 2 and parts[0] == ENVIRONMENT and parts[1] in ENV_ACTIONS


def metric_label(path: str) -> str | None:
    """The metrics label of an ORS path: ``/ors/<action>`` (the environment name left out), else None."""
    if not is_ors_path(path):
        return None
    return BASE_PATH + "/" + path.rstrip("/").rsplit("/", 1)[-1]


def authorization_of(
    path: str, authorization: bytes | None, headers: list[tuple[bytes, bytes]]
) -> bytes | None:
    """The bearer credential of a request: its Authorization header, or for an ORS path its X-API-Key."""
    if authorization is not None or not is_ors_path(path):
        return authorization
    key = next((value for name, value in headers if name == API_KEY_HEADER), None)
    return None if key is None else b"Bearer " + key
