"""The ``rewardkit serve`` command: read the configuration and tokens, then run the server.

With no token configured it listens only on a loopback address, unless ``--insecure-no-auth``
says an open service is meant.
"""

from __future__ import annotations

import argparse
import logging

from rewardkit.plugin import ConfigError, load_config
from rewardkit_service.app import DEFAULT_MAX_BODY_BYTES, ServiceSettings
from rewardkit_service.auth import load_tokens


def run_serve(args: argparse.Namespace) -> int:
    config = load_config(args.config, args.overrides)
    for flag, value in (("--max-body-bytes", args.max_body_bytes), ("--max-rollouts-per-call",
                        args.max_rollouts_per_call), ("--port", args.port + 1)):  # fmt: skip
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be positive, got {value}")
    settings = ServiceSettings(
        tokens=load_tokens(args.tokens_file),
        max_body_bytes=args.max_body_bytes or DEFAULT_MAX_BODY_BYTES,
        max_rollouts_per_call=args.max_rollouts_per_call,
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from rewardkit_service.server import serve

    return serve(config, settings, host=args.host, port=args.port, drain_timeout_s=args.drain_timeout,
                 insecure_no_auth=args.insecure_no_auth)  # fmt: skip
