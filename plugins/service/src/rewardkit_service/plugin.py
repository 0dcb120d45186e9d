"""rewardkit-service's plugin (entry point ``service``): the ``rewardkit serve`` verb, the backend a
Reward Service URL selects (``rl.reward.service``), the ``rewards.service`` section and the provider
``nemo-gym-verify`` (a NeMo Gym resources server's /verify). Light to import: the server and the
client load only when a verb runs or a reward is built."""

from __future__ import annotations

from rewardkit.plugin import (
    CommandRegistrar,
    ConfigSectionRegistrar,
    ConfigSectionSpec,
    ProviderRegistrar,
    RewardBackendRegistrar,
    RewardBackendSpec,
    hookimpl,
    install_line,
)
from rewardkit_service.section import ServiceConfig

SERVE_MAX_BODY_HELP = "largest request body accepted (default: 67108864, 64 MiB)"


@hookimpl
def register_commands(cli: CommandRegistrar) -> None:
    # Every option says its default; where it is None ("from the configuration", "no limit") in words.
    serve = cli.add(
        "serve",
        "rewardkit_service.cli:run_serve",
        about="run the Reward Service (HTTP/JSON)",
        description="Run the Reward Service (HTTP/JSON); needs "
        f"{install_line('rewardkit-service', 'server')}.",
        show_defaults=True,
    )
    serve.add_argument("config", help="YAML or TOML configuration")
    serve.add_argument("overrides", nargs="*", metavar="key=value", help="configuration overrides")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed at start)")
    serve.add_argument(
        "--tokens-file",
        help="bearer tokens, one per line (also REWARDKIT_TOKENS) (default: none: loopback only, "
        "unless --insecure-no-auth)",
    )
    serve.add_argument("--max-body-bytes", type=int, help=SERVE_MAX_BODY_HELP)
    serve.add_argument(
        "--max-rollouts-per-call",
        type=int,
        help="most rollouts one request may carry (default: rewards.max_inflight)",
    )
    serve.add_argument(
        "--drain-timeout",
        type=float,
        help="seconds to drain in-flight requests on SIGTERM (default: no limit, all of them)",
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="listen on a non-loopback address with no token configured (an open service, on purpose)",
    )


@hookimpl
def register_reward_backends(register: RewardBackendRegistrar) -> None:
    register(
        RewardBackendSpec(
            "service",
            "rewardkit_service.client:RemoteReward",
            "score in the Reward Service at rl.reward.service (or a selection's service)",
            by_service_url=True,
        )
    )


@hookimpl
def register_config_sections(register: ConfigSectionRegistrar) -> None:
    register(
        ConfigSectionSpec(
            "rewards.service",
            ServiceConfig,
            "the Reward Service's policy for what clients may choose",
            always=True,
        )
    )


@hookimpl
def register_reward_providers(register: ProviderRegistrar) -> None:
    # The client side of the NeMo Gym protocol the server speaks (rewardkit_service.nemo_gym).
    from rewardkit_service.nemo_gym_verify import SPEC

    register(SPEC)
