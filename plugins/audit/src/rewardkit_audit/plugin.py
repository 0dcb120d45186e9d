"""rewardkit-audit's plugin (entry point ``audit``): the ``rewardkit audit`` verb. Light to import: the
audit itself loads when the verb runs."""

from __future__ import annotations

from rewardkit.plugin import CommandRegistrar, hookimpl


@hookimpl
def register_commands(cli: CommandRegistrar) -> None:
    audit = cli.add(
        "audit",
        "rewardkit_audit.cli:run_audit",
        about="red-team the configured reward with every installed attack family (docs/audit.md)",
        description="Red-team the configured reward: attack completions scored as training would "
        "score them, against honest baselines; exit 4 when an attack leaks or errors, 5 when a component "
        "had no attack tried on it, 2 when nothing could run.",
        show_defaults=True,
    )
    audit.add_argument("config", nargs="?", help="YAML or TOML configuration, as for `rewardkit score`")
    audit.add_argument("overrides", nargs="*", metavar="key=value", help="configuration overrides")
    audit.add_argument("--rows", type=int, default=12, help="rows sampled from the configured data")
    audit.add_argument("--family", help="run only this attack family, against every provider")
    audit.add_argument("--json", metavar="OUT", help="write every candidate's score and reason here")
    audit.add_argument(
        "--max-calls", type=int, default=1000, help="most candidates scored by a judge or reward model"
    )
    audit.add_argument(
        "--margin", type=float, default=0.05, help="share of the observed range of finals an attack may gain"
    )
    audit.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="send destructive payloads to providers that do not declare a sandbox",
    )
    audit.add_argument(
        "--allow-untested",
        action="store_true",
        help="exit 0 rather than 5 when a component had no attack tried on it (docs/audit.md)",
    )
    audit.add_argument("--seed", type=int, default=0, help="seed of the row sample")
    audit.add_argument("--list", action="store_true", help="list the installed attack families and exit")
    audit.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
