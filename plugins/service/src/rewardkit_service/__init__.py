"""``rewardkit-service``: rewardkit's scoring over HTTP/JSON (``rewardkit serve``) and its client.

``client.RemoteReward`` is what ``rl.reward.service`` builds; it needs only the core and orjson, so
a trainer that scores through a service installs this distribution without the ``server`` extra.
The server (``app.create_app`` builds the ASGI application, ``server.serve`` runs it under uvicorn
with a graceful drain on SIGTERM) needs the extra. The wire models in ``models`` are the single
source of the OpenAPI document and of request validation.

Importing this package imports neither: ``create_app`` and ``ServiceSettings`` load the server on
first use, so ``import rewardkit_service.client`` works without starlette or uvicorn.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ServiceSettings", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from rewardkit_service import app

        return getattr(app, name)
    raise AttributeError(f"module 'rewardkit_service' has no attribute {name!r}")
