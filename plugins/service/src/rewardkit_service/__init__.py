"""The Reward Service: rewardkit's scoring over HTTP/JSON (``rewardkit serve``).

``create_app(config)`` builds the ASGI application; ``server.serve`` runs it under uvicorn with a
graceful drain on SIGTERM. The wire models in ``models`` are the single source of the OpenAPI
document and of request validation.
"""

from __future__ import annotations

from rewardkit_service.app import ServiceSettings, create_app

__all__ = ["ServiceSettings", "create_app"]
